// The prebuilt kernel bundle (kernel_bundle.h): its file format survives a round trip and
// refuses truncated or corrupt files; the targets a device may load are chosen as the CUDA
// driver's compatibility rules allow; and gpix-prebuild-kernels writes one entry for every
// program of a kernel file. (test_cuda_loader's fake_device case checks that a device loads
// from it instead of compiling.) No GPU needed.
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "backend/cuda/cuda_programs.h"
#include "backend/cuda/nvrtc.h"
#include "kernel_bundle.h"
#include "kernel_variants.h"
#include "programs.h"

using namespace gpix;
using detail::KernelBundle;

class TestKernelBundle : public QObject {
  Q_OBJECT
 private slots:
  void round_trip() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/b.bin";
    std::mt19937 rng(7);
    std::vector<std::pair<std::string, std::vector<char>>> entries;
    for (int i = 0; i < 40; ++i) {
      std::vector<char> bin(static_cast<std::size_t>(rng() % 5000) + (i == 3 ? 0 : 1));
      for (char& c : bin) c = static_cast<char>(rng());
      const std::string target = i % 3 == 0 ? "compute_90" : (i % 3 == 1 ? "sm_80" : "sm_90");
      entries.emplace_back(target + "|hash" + std::to_string(i) + ";T=gpix_f32", std::move(bin));
    }
    detail::write_kernel_bundle(path, "NVRTC 13.0; test", entries);
    std::string why;
    const auto b = KernelBundle::open(path, &why);
    QVERIFY2(b, why.c_str());
    QCOMPARE(b->size(), entries.size());
    QCOMPARE(b->note(), std::string("NVRTC 13.0; test"));
    QCOMPARE(b->targets(), (std::vector<std::string>{"compute_90", "sm_80", "sm_90"}));
    for (const auto& [key, bin] : entries) {
      const auto got = b->find(key);
      QVERIFY(got);
      QVERIFY(*got == bin);
    }
    QVERIFY(!b->find("sm_90|hash0;T=gpix_f64"));
    QVERIFY(!b->contains("sm_75|hash1;T=gpix_f32"));
    // Nothing temporary is left beside it.
    QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                           std::filesystem::directory_iterator()),
             std::ptrdiff_t{1});
  }

  void refuses_damaged_files() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/b.bin";
    std::vector<std::pair<std::string, std::vector<char>>> entries{
        {"sm_90|a", std::vector<char>(3000, 'x')}, {"sm_90|b", std::vector<char>(100, 'y')}};
    detail::write_kernel_bundle(path, "n", entries);
    const auto size = std::filesystem::file_size(path);
    std::string why;
    // Cut inside the data: the index opens, the entry past the end does not.
    std::filesystem::resize_file(path, size - 10);
    QVERIFY(!KernelBundle::open(path, &why));  // the index says an entry lies past the end
    QVERIFY2(why.find("corrupt index entry") != std::string::npos, why.c_str());
    // Cut inside the index.
    std::filesystem::resize_file(path, 40);
    QVERIFY(!KernelBundle::open(path, &why));
    QVERIFY2(why.find("truncated") != std::string::npos, why.c_str());
    // An index byte changed: its checksum refuses it.
    detail::write_kernel_bundle(path, "n", entries);
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(30);
      f.put('Z');
    }
    QVERIFY(!KernelBundle::open(path, &why));
    QVERIFY2(why.find("checksum") != std::string::npos, why.c_str());
    // A data byte changed: that entry is refused, the other still loads.
    detail::write_kernel_bundle(path, "n", entries);
    const auto b = KernelBundle::open(path, &why);
    QVERIFY(b);
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(path)) - 5);
      f.put('!');
    }
    QVERIFY(b->contains("sm_90|b"));
    QCOMPARE(static_cast<bool>(b->find("sm_90|a")) + static_cast<bool>(b->find("sm_90|b")), 1);
    // Not a bundle.
    QVERIFY(!KernelBundle::open(dir.path().toStdString() + "/missing.bin", &why));
    QVERIFY2(why.find("cannot be opened") != std::string::npos, why.c_str());
  }

  void targets_follow_compatibility() {
    using detail::cuda::prebuilt_targets;
    const std::vector<std::string> present{"compute_75", "compute_90", "sm_80", "sm_90"};
    // 8.6 runs its own cubin, then older minors' SASS; PTX from the newest at or below 86.
    QCOMPARE(prebuilt_targets(86, present),
             (std::vector<std::string>{"sm_86", "sm_85", "sm_84", "sm_83", "sm_82", "sm_81",
                                       "sm_80", "compute_75"}));
    QCOMPARE(prebuilt_targets(90, present), (std::vector<std::string>{"sm_90", "compute_90"}));
    // A card newer than every cubin: SASS of another major never loads; PTX does.
    QCOMPARE(prebuilt_targets(120, present), (std::vector<std::string>{"sm_120", "compute_90"}));
    QCOMPARE(prebuilt_targets(70, present), (std::vector<std::string>{"sm_70"}));
  }

  void tool_covers_every_program() {
    std::string why;
    if (!detail::Nvrtc::get(&why)) QSKIP(why.c_str());
    QTemporaryDir dir;
    const QString out = dir.path() + "/k.bin";
    QProcess p;
    p.start(GPIX_PREBUILD_PATH,
            {"--out", out, "--archs", "90", "--ptx", "90", "--only", "fill.kernel", "--jobs", "2"});
    QVERIFY2(p.waitForStarted(), "cannot start " GPIX_PREBUILD_PATH);
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto b = KernelBundle::open(out.toStdString(), &why);
    QVERIFY2(b, why.c_str());
    std::set<std::string> programs;
    for (const auto& v : detail::all_kernel_variants()) {
      if (v.file != "fill.kernel") continue;
      const std::string key = detail::program_key(detail::program(v.file), v.defines);
      programs.insert(key);
      QVERIFY2(b->contains("sm_90|" + key), key.c_str());
      QVERIFY2(b->contains("compute_90|" + key), key.c_str());
    }
    QVERIFY(!programs.empty());
    QCOMPARE(b->size(), 2 * programs.size());
    // The entries are what NVRTC makes now, behind the disk cache's header.
    const auto& src = detail::program("fill.kernel");
    const auto key = *programs.begin();
    const auto bin = b->find("sm_90|" + key);
    QVERIFY(bin && bin->size() > 100);
    QCOMPARE(std::string(bin->data(), 8), std::string("GPIXCUDA"));
    QCOMPARE((*bin)[8], 'C');
    // A second run keeps every entry and compiles nothing.
    p.start(GPIX_PREBUILD_PATH,
            {"--out", out, "--archs", "90", "--ptx", "90", "--only", "fill.kernel"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(p.readAllStandardOutput().contains(" 0 to compile"), "an unchanged rerun compiled");
    (void)src;
    // A bad architecture is refused with what would work.
    p.start(GPIX_PREBUILD_PATH, {"--out", out, "--archs", "sm90"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(p.readAllStandardError().contains("is not a CUDA architecture (e.g. 90)"));
  }
};

QTEST_GUILESS_MAIN(TestKernelBundle)
#include "test_kernel_bundle.moc"
