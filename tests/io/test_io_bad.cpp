// Bad input: every case is a gpix::IoError naming the file, no crash, and no file left behind.
#include <itkImage.h>
#include <itkImageFileWriter.h>
#include <itkNrrdImageIO.h>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstring>
#include <fstream>

#include "gpix/io.h"
#include "support/random.h"

using namespace gpix;
namespace fs = std::filesystem;

namespace {

fs::path in(const QTemporaryDir& d, const std::string& name) {
  return fs::path(d.path().toStdString()) / name;
}

void put(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Expects an IoError about path whose message contains `words`.
void expect_io_error(const std::function<void()>& f, const fs::path& path,
                     const std::string& words) {
  try {
    f();
  } catch (const IoError& e) {
    QCOMPARE(e.path(), path.string());
    QVERIFY2(std::string(e.what()).find(words) != std::string::npos, e.what());
    return;
  }
  QFAIL(qPrintable(QString::fromStdString("no IoError for " + path.string())));
}

QStringList entries(const QTemporaryDir& d) {
  return QDir(d.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
}

}  // namespace

class TestIoBad : public QObject {
  Q_OBJECT
 private slots:
  void missing_folder_empty() {
    QTemporaryDir dir;
    expect_io_error([&] { io::read(in(dir, "none.tif")); }, in(dir, "none.tif"), "no such file");
    QVERIFY(QDir(dir.path()).mkdir("stack.tif"));
    expect_io_error([&] { io::read(in(dir, "stack.tif")); }, in(dir, "stack.tif"), "folder");
    put(in(dir, "empty.png"), "");
    expect_io_error([&] { io::read(in(dir, "empty.png")); }, in(dir, "empty.png"), "empty");
    expect_io_error([&] { io::read(in(dir, "x.bmpq")); }, in(dir, "x.bmpq"), ".tif");
  }

  void truncated_and_corrupt_data() {
    QTest::addColumn<QString>("ext");
    for (const char* e : {".tif", ".png", ".jpg", ".nrrd", ".mha", ".nii", ".nii.gz"})
      QTest::newRow(e) << QString(e);
  }
  void truncated_and_corrupt() {
    QFETCH(QString, ext);
    QTemporaryDir dir;
    const auto good = in(dir, "good" + ext.toStdString());
    const HostArray h =
        HostArray::from(test::random_values<std::uint8_t>(3 * 40 * 50), Shape{40, 150});
    io::write(good, h);
    const std::string bytes = slurp(good);
    // Truncated to a half, to the header only, and to a few bytes.
    for (std::size_t keep :
         {bytes.size() / 2, std::min<std::size_t>(bytes.size() / 8, 400), std::size_t{10}}) {
      const auto p = in(dir, "cut" + std::to_string(keep) + ext.toStdString());
      put(p, bytes.substr(0, keep));
      expect_io_error([&] { io::read(p); }, p, "");
    }
    // Garbage with the right extension.
    std::string junk(2000, '\0');
    for (auto& c : junk) c = static_cast<char>(test::rng()());
    const auto p = in(dir, "junk" + ext.toStdString());
    put(p, junk);
    expect_io_error([&] { io::read(p); }, p, "");
  }

  void lying_extension() {
    QTemporaryDir dir;
    const HostArray h = HostArray::from(test::random_values<std::uint8_t>(35), Shape{5, 7});
    io::write(in(dir, "real.png"), h);
    QVERIFY(QFile::rename(QString::fromStdString(in(dir, "real.png").string()),
                          QString::fromStdString(in(dir, "fake.tif").string())));
    expect_io_error([&] { io::read(in(dir, "fake.tif")); }, in(dir, "fake.tif"), "content is PNG");
  }

  void unsupported_pixels() {
    QTemporaryDir dir;
    // Complex pixels, written by ITK itself.
    using C = itk::Image<std::complex<float>, 2>;
    auto img = C::New();
    C::SizeType size{{4, 3}};
    img->SetRegions(C::RegionType(size));
    img->Allocate();
    img->FillBuffer(std::complex<float>(1, 2));
    const auto cpath = in(dir, "complex.nrrd");
    auto w = itk::ImageFileWriter<C>::New();
    w->SetImageIO(itk::NrrdImageIO::New());
    w->SetInput(img);
    w->SetFileName(cpath.string());
    w->Update();
    expect_io_error([&] { io::read(cpath); }, cpath, "complex");
    expect_io_error([&] { io::read(cpath, {.channels = io::Channels::channel}); }, cpath,
                    "complex");
    // 4D, a MetaImage header with its data.
    const auto p4 = in(dir, "four.mha");
    put(p4,
        "ObjectType = Image\nNDims = 4\nDimSize = 2 2 2 2\nElementType = "
        "MET_UCHAR\nElementDataFile = LOCAL\n" +
            std::string(16, '\1'));
    expect_io_error([&] { io::read(p4); }, p4, "4 dimensions");
    // Vector pixels with 2 components: only channel/split can read them.
    const auto pv = in(dir, "vec.mha");
    put(pv,
        "ObjectType = Image\nNDims = 2\nDimSize = 3 2\nElementNumberOfChannels = 2\nElementType = "
        "MET_SHORT\n"
        "ElementDataFile = LOCAL\n" +
            std::string(24, '\2'));
    expect_io_error([&] { io::read(pv); }, pv, "channels");
    expect_io_error([&] { io::read(pv, {.channels = io::Channels::luminance}); }, pv,
                    "luminance needs RGB");
    QCOMPARE(io::read(pv, {.channels = io::Channels::channel, .channel = 1}).pixels.shape(),
             (Shape{2, 3}));
  }

  void huge_header() {
    QTemporaryDir dir;
    const auto p = in(dir, "huge.mhd");
    put(in(dir, "huge.raw"), std::string(64, '\0'));
    put(p,
        "ObjectType = Image\nNDims = 3\nDimSize = 100000 100000 100000\nElementType = MET_UCHAR\n"
        "ElementDataFile = huge.raw\n");
    expect_io_error([&] { io::read(p); }, p, "claims");
    const auto q = in(dir, "overflow.mha");
    put(q,
        "ObjectType = Image\nNDims = 3\nDimSize = 4000000000 4000000000 4000000000\nElementType = "
        "MET_DOUBLE\n"
        "ElementDataFile = LOCAL\n");
    expect_io_error([&] { io::read(q); }, q, "");
  }

  // Headers ITK cannot survive: an unknown MetaImage element type made ITK throw from outside
  // gpix's translation (gpix info aborted), a NaN in a NIfTI affine made vnl abort the process.
  void headers_itk_cannot_survive() {
    QTemporaryDir dir;
    const auto m = in(dir, "mistyped.mha");
    put(m,
        "ObjectType = Image\nNDims = 2\nDimSize = 4 3\nElementType = MET_USHO\n"
        "ElementDataFile = LOCAL\n" +
            std::string(24, '\0'));
    expect_io_error([&] { io::read(m); }, m, "pixel type is unknown");
    // MetaIO read past its buffers (ASan) on a NUL inside the header and on a '%' data file
    // that is not a pattern (fuzz_read_mha's first finding, fuzz/corpus/mha/regression-*).
    const std::string head =
        "ObjectType = Image\nNDims = 2\nDimSize = 4 3\nElementType = MET_UCHAR\n";
    const auto nul = in(dir, "nul.mha");
    put(nul, std::string("ObjectType = Image\nNDims = 2\0\0\nDimSize = 4 3\n", 45) +
                 "ElementType = MET_UCHAR\nElementDataFile = LOCAL\n" + std::string(12, '\1'));
    expect_io_error([&] { io::read(nul); }, nul, "control byte");
    const auto pat = in(dir, "pattern.mha");
    put(pat, head + "ElementDataFile = slice%d.raw junk 52\n");
    expect_io_error([&] { io::read(pat); }, pat, "not a file pattern");
    const auto good = in(dir, "good.nii");
    io::write(good, HostArray::from(std::vector<std::uint16_t>(6 * 20 * 24, 7), Shape{6, 20, 24}));
    const std::string bytes = slurp(good);
    QCOMPARE(io::read(good).pixels.shape(), (Shape{6, 20, 24}));
    struct Patch {
      const char* file;
      std::size_t offset;
      float value;
      const char* field;
    };
    for (const Patch& p : {Patch{"nan_srow.nii", 280, NAN, "srow_x[0]"},
                           Patch{"inf_spacing.nii", 80, INFINITY, "pixdim[1]"},
                           Patch{"huge_quatern.nii", 256, 3e38f, "quatern_b/c/d[0]"}}) {
      std::string b = bytes;
      const std::int16_t code = 1;  // make both forms count, as ITK reads them then
      std::memcpy(b.data() + 252, &code, 2);
      std::memcpy(b.data() + 254, &code, 2);
      std::memcpy(b.data() + p.offset, &p.value, 4);
      const auto path = in(dir, p.file);
      put(path, b);
      expect_io_error([&] { io::read(path); }, path, p.field);
    }
    // A fuzzed header on which ITK's SVD spun for ever: a subnormal beside a large shear.
    std::string spin = bytes;
    const std::int16_t sform = 1;
    const float shear = -1e8f, subnormal = 9.18e-41f;
    std::memcpy(spin.data() + 254, &sform, 2);
    std::memcpy(spin.data() + 284, &shear, 4);      // srow_x[1]
    std::memcpy(spin.data() + 304, &subnormal, 4);  // srow_y[2]
    const auto spin_path = in(dir, "spin.nii");
    put(spin_path, spin);
    expect_io_error([&] { io::read(spin_path); }, spin_path, "srow_y[2]");
    // The same checks when sizeof_hdr is corrupt: the nifti library reads such a header by its
    // magic string, and vnl aborted on an infinite affine entry (fuzz_read_nii).
    std::string bad_size = bytes;
    const std::int32_t size_field = 0xfc5c;
    const float minus_inf = -INFINITY;
    std::memcpy(bad_size.data(), &size_field, 4);
    std::memcpy(bad_size.data() + 254, &sform, 2);
    std::memcpy(bad_size.data() + 300, &minus_inf, 4);  // srow_y[1]
    const auto bad_size_path = in(dir, "bad_sizeof_hdr.nii");
    put(bad_size_path, bad_size);
    expect_io_error([&] { io::read(bad_size_path); }, bad_size_path, "srow_y[1]");
  }

  void unwritable() {
    QTemporaryDir dir;
    const HostArray h = HostArray::from(test::random_values<std::uint16_t>(35), Shape{5, 7});
    put(in(dir, "file"), "x");
    expect_io_error([&] { io::write(in(dir, "file") / "out.tif", h); }, in(dir, "file") / "out.tif",
                    "not a folder");
    expect_io_error([&] { io::write(in(dir, "no/such/out.tif"), h); }, in(dir, "no/such/out.tif"),
                    "does not exist");
    QVERIFY(QDir(dir.path()).mkdir("taken.nrrd"));
    expect_io_error([&] { io::write(in(dir, "taken.nrrd"), h); }, in(dir, "taken.nrrd"), "folder");
    expect_io_error(
        [&] {
          io::write(in(dir, "out.png"),
                    HostArray::from(test::random_values<float>(35), Shape{5, 7}));
        },
        in(dir, "out.png"), "uint8, uint16");
    expect_io_error(
        [&] {
          io::write(in(dir, "out.png"),
                    HostArray::from(test::random_values<std::uint8_t>(70), Shape{2, 5, 7}));
        },
        in(dir, "out.png"), "2D");
    HostArray nan = HostArray::from(
        std::vector<float>{1.0f, std::numeric_limits<float>::quiet_NaN()}, Shape{2});
    expect_io_error([&] { io::write(in(dir, "nan.nii"), nan); }, in(dir, "nan.nii"), "NaN");
    // A failed write replaces nothing and leaves nothing behind.
    io::write(in(dir, "keep.tif"), h);
    const std::string before = slurp(in(dir, "keep.tif"));
    expect_io_error(
        [&] {
          io::write(in(dir, "keep.tif"),
                    HostArray::from(test::random_values<double>(35), Shape{35}));
        },
        in(dir, "keep.tif"), "1D");
    QCOMPARE(slurp(in(dir, "keep.tif")), before);
    QCOMPARE(entries(dir), (QStringList{"file", "keep.tif", "taken.nrrd"}));
  }

  // ITK itself fails mid-write (a header path the TIFF writer cannot take): no partial output.
  void failed_itk_write_leaves_nothing() {
    QTemporaryDir dir;
    const HostArray h = HostArray::from(test::random_values<std::uint8_t>(35), Shape{5, 7});
    io::Metadata bad;
    bad.direction = {0, 0, 0, 0};  // singular: ITK refuses it
    try {
      io::write(in(dir, "dir.nrrd"), h, bad);
    } catch (const IoError&) {
    }
    for (const QString& e : entries(dir)) QVERIFY2(!e.startsWith(".gpix-write"), qPrintable(e));
  }

  void non_ascii_paths() {
    QTemporaryDir dir;
    const fs::path folder = in(dir, "Übersicht 顕微鏡");
    fs::create_directory(folder);
    const HostArray h =
        HostArray::from(test::random_bits<std::uint16_t>(3 * 5 * 7), Shape{3, 5, 7});
    for (const char* name : {"Zellkerne_α.tif", "日本.nrrd", "ñandú.mha", "café.nii.gz", "ß.png"}) {
      const fs::path p = folder / fs::u8path(name);
      const HostArray img = std::string(name).ends_with(".png")
                                ? HostArray::from(test::random_bits<std::uint16_t>(35), Shape{5, 7})
                                : h;
      io::write(p, img);
      QVERIFY(fs::exists(p));
      const io::Image back = io::read(p);
      QVERIFY(std::memcmp(back.pixels.data(), img.data(), img.bytes()) == 0);
    }
    expect_io_error([&] { io::read(folder / fs::u8path("fehlt_ü.tif")); },
                    folder / fs::u8path("fehlt_ü.tif"), "no such");
  }
};

QTEST_GUILESS_MAIN(TestIoBad)
#include "test_io_bad.moc"
