// One-entry programs (core/src/kernel_entry.h): what the scan takes out of a kernel file, and
// that the program cache builds one program per entry where asked (GPIX_PROGRAM_UNIT).
#include <QDateTime>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <set>
#include <string>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "kernel_entry.h"
#include "kernel_variants.h"
#include "programs.h"
#include "support/devices.h"

using namespace gpix;

namespace {

// Kernels in the shapes the catalog's files use, and the traps of a textual scan: braces and
// the kernel keyword in comments and strings, a directive inside a body, a declaration, a
// kernel macro with pasted names, a macro that also defines a helper.
const char* kText = R"(/* header { GPIX_KERNEL void in_comment() { */
#define ONE 1
GPIX_FUNC int helper(int v) { return v + ONE; }
GPIX_KERNEL void alpha(GPIX_GLOBAL int* o) {
  // a brace in a comment: {
  const char* s = "} GPIX_KERNEL void in_string() {";
  const char c = '}';
  if (o) { o[0] = helper(s[0] + c); }
}
GPIX_KERNEL void declared(GPIX_GLOBAL int* o);
GPIX_KERNEL void beta(GPIX_GLOBAL int* o) {
#if ONE
  o[0] = 1;
#else
  o[0] = 2;
#endif
}
#define PAIR(op, V)                       \
  GPIX_KERNEL void k_##op##_a(GPIX_GLOBAL int* o) { o[0] = V; } \
  GPIX_KERNEL void k_##op##_b(GPIX_GLOBAL int* o) { o[0] = -V; }
PAIR(one, 1)
PAIR(two, 2)
#define WITH_HELPER(op)                   \
  GPIX_FUNC int h_##op(void) { return 3; } \
  GPIX_KERNEL void w_##op(GPIX_GLOBAL int* o) { o[0] = h_##op(); }
WITH_HELPER(x)
#if ONE
GPIX_KERNEL void gamma(GPIX_GLOBAL int* o) {
  o[0] = 3;
}
#endif
)";

bool defines_kernel(const std::string& text, const std::string& name) {
  const auto names = detail::recognised_entries(text);
  return std::find(names.begin(), names.end(), name) != names.end();
}

long lines(const std::string& s) {
  return std::count(s.begin(), s.end(), '\n');
}

}  // namespace

class TestKernelEntry : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() { detail::config_for_testing().cache_dir = dir_.path().toStdString(); }

  void recognises_what_it_may_remove() {
    const auto names = detail::recognised_entries(kText);
    const std::vector<std::string> expected = {"alpha",   "beta",    "k_one_a", "k_one_b",
                                               "k_two_a", "k_two_b", "gamma"};
    QCOMPARE(names, expected);  // not in_comment, in_string, declared, w_x
  }

  void keeps_the_entry_and_what_it_needs() {
    const std::string text = kText;
    const std::string a = detail::single_entry_source(text, "alpha");
    QCOMPARE(lines(a), lines(text));  // line numbers stay right
    QVERIFY(a.find("GPIX_KERNEL void alpha(") != std::string::npos);
    QVERIFY(a.find("\"} GPIX_KERNEL void in_string() {\"") != std::string::npos);
    QVERIFY(a.find("helper(int v)") != std::string::npos);  // non-kernel code stays
    QVERIFY(a.find("GPIX_KERNEL void declared(") != std::string::npos);
    QVERIFY(a.find("GPIX_KERNEL void gamma(") == std::string::npos);
    QVERIFY(a.find("PAIR(one, 1)") == std::string::npos);
    QVERIFY(a.find("PAIR(two, 2)") == std::string::npos);
    QVERIFY(a.find("#define PAIR") != std::string::npos);  // directives are never touched
    // A body with a directive is not taken out (its braces might not pair up in the scan).
    QVERIFY(a.find("GPIX_KERNEL void beta(") != std::string::npos);
    // A macro that defines a helper besides its kernel stays used.
    QVERIFY(a.find("WITH_HELPER(x)") != std::string::npos);

    // A kernel a macro makes keeps that use, and so its sibling; the others go.
    const std::string b = detail::single_entry_source(text, "k_two_b");
    QVERIFY(b.find("PAIR(two, 2)") != std::string::npos);
    QVERIFY(b.find("PAIR(one, 1)") == std::string::npos);
    QVERIFY(b.find("GPIX_KERNEL void alpha(") == std::string::npos);
    QVERIFY(b.find("helper(int v)") != std::string::npos);

    // A kernel inside an #if block goes, leaving the block's directives balanced.
    QVERIFY(b.find("GPIX_KERNEL void gamma(") == std::string::npos);
    QVERIFY(b.find("#if ONE\n") != std::string::npos);

    // An entry the text does not define: every recognised kernel goes (the compiler then
    // says there is no such kernel, as it did for the whole file).
    const std::string none = detail::single_entry_source(text, "nosuch");
    QVERIFY(!defines_kernel(none, "alpha") && !defines_kernel(none, "k_one_a"));
  }

  // Every (file, entry) the catalog asks for: the entry stays defined, every other kernel the
  // scan recognises and may remove is gone, and the line count is unchanged.
  void catalog_files() {
    std::set<std::pair<std::string, std::string>> seen;
    int files_split = 0;
    std::set<std::string> files;
    for (const auto& v : detail::all_kernel_variants()) {
      if (!seen.insert({v.file, v.entry}).second) continue;
      const std::string& text = detail::program(v.file).text;
      const auto all = detail::recognised_entries(text);
      const std::string one = detail::single_entry_source(text, v.entry);
      QCOMPARE(lines(one), lines(text));
      const auto left = detail::recognised_entries(one);
      if (std::find(all.begin(), all.end(), v.entry) != all.end()) {
        QVERIFY2(std::find(left.begin(), left.end(), v.entry) != left.end(),
                 (v.file + ": " + v.entry + " was taken out of its own program").c_str());
      }
      QVERIFY2(left.size() <= all.size(), v.file.c_str());
      if (left.size() < all.size() && files.insert(v.file).second) ++files_split;
    }
    // The files with several kernels do split (a scan that recognised nothing would pass the
    // checks above): separable, neighbourhood, segmentation, projection, pointwise at least.
    QVERIFY2(files_split >= 5, std::to_string(files_split).c_str());
    const auto sep = detail::recognised_entries(detail::program("separable.kernel").text);
    QCOMPARE(sep.size(), std::size_t{16});
    const std::string x =
        detail::single_entry_source(detail::program("separable.kernel").text, "sep_conv_x");
    QCOMPARE(detail::recognised_entries(x), std::vector<std::string>{"sep_conv_x"});
    const std::string xy =
        detail::single_entry_source(detail::program("tiled.kernel").text, "tile_conv_xy");
    QCOMPARE(detail::recognised_entries(xy), std::vector<std::string>{"tile_conv_xy"});
    const std::string r1 =
        detail::single_entry_source(detail::program("neighbourhood.kernel").text, "r1_sum_2d");
    QCOMPARE(detail::recognised_entries(r1), std::vector<std::string>{"r1_sum_2d"});
    // Kernels with unrolled loops (GPIX_UNROLL, not a #pragma line in the body) and the
    // walking gradient leave their files' other programs.
    for (const char* e : {"remap_rows", "remap_rows_v4", "remap_tile", "remap_tile_v4",
                          "sample_affine", "sample_scale"}) {
      const std::string g = detail::single_entry_source(detail::program("geometry.kernel").text, e);
      QCOMPARE(detail::recognised_entries(g), std::vector<std::string>{e});
    }
    // stats.kernel's per-dtype parts are macros outside its kernels: whole-image statistics
    // (every image's metadata card) build one kernel, not three.
    for (const char* e : {"stats_partial", "stats_final", "stats_moments"}) {
      const std::string t = detail::single_entry_source(detail::program("stats.kernel").text, e);
      QCOMPARE(detail::recognised_entries(t), std::vector<std::string>{e});
    }
    const std::string gr =
        detail::single_entry_source(detail::program("neighbourhood.kernel").text, "gradient");
    QCOMPARE(detail::recognised_entries(gr), std::vector<std::string>{"gradient"});
  }

  // Program groups: the markers of segmentation.kernel are read, a group's program keeps its
  // kernels and nothing else, and the cache builds one program for every kernel of a group
  // (a labelling's merge, roots and write passes: one build where there were three).
  void program_groups() {
    QCOMPARE(detail::program_groups("/* gpix-program-group: a b_2 c */\n/* gpix-program-group: "
                                    "d */ x /* gpix-program-group: e f */"),
             (std::vector<std::vector<std::string>>{{"a", "b_2", "c"}, {"e", "f"}}));
    const detail::ProgramSource& seg = detail::program("segmentation.kernel");
    const std::vector<std::string> cc = {"cc_merge_tiles", "cc_roots", "cc_write"};
    QVERIFY(std::find(seg.groups.begin(), seg.groups.end(), cc) != seg.groups.end());
    const std::string text = detail::entries_source(seg.text, cc);
    QCOMPARE(lines(text), lines(seg.text));
    QCOMPARE(detail::recognised_entries(text), cc);
    // Every group names kernels its file defines, each in one group only.
    std::set<std::string> grouped;
    for (const auto& v : detail::all_kernel_variants()) {
      for (const auto& g : detail::program(v.file).groups) {
        const auto all = detail::recognised_entries(detail::program(v.file).text);
        for (const std::string& e : g) {
          QVERIFY2(std::find(all.begin(), all.end(), e) != all.end(), e.c_str());
        }
      }
    }
    for (const auto& g : seg.groups) {
      for (const std::string& e : g) QVERIFY2(grouped.insert(e).second, e.c_str());
    }
  }

  void group_cache_data() { test::add_device_rows(); }
  void group_cache() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().program_unit = "entry";
    // Counts of full builds (quick builds: test_kernel_tiers).
    detail::config_for_testing().quick_builds = false;
    const detail::ProgramSource& seg = detail::program("segmentation.kernel");
    const detail::Defines d = {
        {"T_IN", "gpix_u32"},
        {"GPIX_ENTRY_TEST", "group" + std::to_string(QDateTime::currentMSecsSinceEpoch())}};
    const auto before = impl.cache_counters();
    (void)impl.kernel(seg, "cc_merge_tiles", d);
    (void)impl.kernel(seg, "cc_roots", d);
    (void)impl.kernel(seg, "cc_write", d);
    (void)impl.kernel(seg, "cc_map", d);  // in no group: a program of its own
    const auto after = impl.cache_counters();
    QCOMPARE((after.compiles - before.compiles) + (after.disk_hits - before.disk_hits),
             std::uint64_t{2});
    QCOMPARE(after.memory_hits - before.memory_hits, std::uint64_t{2});
  }

  // The program cache: with one program per entry, two entries of a file compile twice and a
  // repeat is a memory hit; GPIX_PROGRAM_UNIT=file builds the file once for both. The kernels
  // of both kinds of program run the same (the filter suites run on one-entry programs).
  void cache_per_entry_data() { test::add_device_rows(); }
  void cache_per_entry() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ProgramSource& src = detail::program("fill.kernel");
    const std::string nonce = std::to_string(QDateTime::currentMSecsSinceEpoch());
    for (const char* unit : {"entry", "file"}) {
      const detail::ScopedConfig scope;
      detail::config_for_testing().program_unit = unit;
      // Counts of full builds (quick builds: test_kernel_tiers).
      detail::config_for_testing().quick_builds = false;
      const detail::Defines d = {{"GPIX_ENTRY_TEST", std::string(unit) + nonce}};
      const auto before = impl.cache_counters();
      const auto entries = detail::recognised_entries(src.text);
      QVERIFY(entries.size() >= 2);
      (void)impl.kernel(src, entries[0], d);
      (void)impl.kernel(src, entries[1], d);
      (void)impl.kernel(src, entries[0], d);
      const auto after = impl.cache_counters();
      const std::uint64_t made = (after.compiles - before.compiles) +
                                 (after.disk_hits - before.disk_hits) +
                                 (after.prebuilt_hits - before.prebuilt_hits);
      QCOMPARE(made, std::uint64_t{std::string(unit) == "entry" ? 2u : 1u});
      QCOMPARE(after.memory_hits - before.memory_hits,
               std::uint64_t{std::string(unit) == "entry" ? 1u : 2u});
    }
  }
};

QTEST_GUILESS_MAIN(TestKernelEntry)
#include "test_kernel_entry.moc"
