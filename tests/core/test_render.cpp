// render_rgba on every device and dtype against a CPU reference of the documented mapping.
#include <QTest>

#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

constexpr std::uint32_t kPoison = 0xdeadbeefu;

// The documented mapping, computed on the host in the kernel's arithmetic type. Gamma 1 is
// the entry floor((v - lo) * 256 / (hi - lo)) itself; otherwise the fine step
// f = floor((v - lo) * 4096 / (hi - lo)) goes through floor(256 * (f / 4096)^gamma).
template <class T>
std::uint32_t ref_contrast(T v, double lo, double hi, const Lut& lut, double gamma = 1.0) {
  using CT = std::conditional_t<std::is_same_v<T, double>, double, float>;
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return 0;
  }
  if (gamma == 1.0) {
    const CT t = (static_cast<CT>(v) - static_cast<CT>(lo)) * static_cast<CT>(256.0 / (hi - lo));
    int idx = 255;
    if (!(t >= CT(0))) {
      idx = 0;
    } else if (t < CT(255)) {
      idx = static_cast<int>(t);
    }
    return lut.table[static_cast<std::size_t>(idx)];
  }
  const CT t = (static_cast<CT>(v) - static_cast<CT>(lo)) * static_cast<CT>(4096.0 / (hi - lo));
  int f = 4095;
  if (!(t >= CT(0))) {
    f = 0;
  } else if (t < CT(4095)) {
    f = static_cast<int>(t);
  }
  const double e = std::min(255.0, std::floor(256.0 * std::pow(f / 4096.0, gamma)));
  return lut.table[static_cast<std::size_t>(e)];
}

// Byte-wise saturating sum of two RGBA words.
std::uint32_t add_rgba(std::uint32_t a, std::uint32_t b) {
  std::uint32_t r = 0;
  for (int k = 0; k < 32; k += 8) r |= std::min(((a >> k) & 255u) + ((b >> k) & 255u), 255u) << k;
  return r;
}

// Gamma and additive blending: two channels of `data` (planes 0 and 1 of a (2, h, w) array, or
// the same 2D array twice) in green and magenta with their own limits and gammas, added into
// one target, against the plain reference of each channel's entry summed with saturation.
template <class T>
void check_composite(const Device& dev, const Shape& s) {
  auto data = test::random_values<T>(s.elements());
  if constexpr (std::is_floating_point_v<T>) {
    if (data.size() > 5) data[5] = std::numeric_limits<T>::quiet_NaN();
  }
  std::vector<double> sorted(data.begin(), data.end());
  std::erase_if(sorted, [](double x) { return std::isnan(x); });
  std::sort(sorted.begin(), sorted.end());
  const auto at = [&](double q) {
    return sorted.empty() ? q : sorted[static_cast<std::size_t>(q * double(sorted.size() - 1))];
  };
  const Array a = Array::push(data, s, dev);
  const std::size_t plane = s.width() * s.height();
  const std::size_t channels = s.ndim() == 3 ? s.depth() : 1;
  struct Channel {
    Lut lut;
    double lo, hi, gamma;
  };
  const Channel ch[] = {{Lut::colour(0, 255, 0), at(0.1), at(0.7), 0.3},
                        {Lut::colour(255, 0, 255), at(0.3), at(0.95), 2.5}};
  // Gamma alone, replacing: every built-in contrast table and a few gammas.
  for (double gamma : {0.1, 0.45, 1.0, 2.2, 10.0}) {
    for (const Lut& lut : builtin_luts()) {
      if (lut.mode != Lut::Mode::contrast) continue;
      const auto got =
          render_rgba(a, ch[0].lo, ch[0].hi, lut, 0, gamma).template pull_as<std::uint32_t>();
      for (std::size_t i = 0; i < plane; ++i) {
        const std::uint32_t want = ref_contrast(data[i], ch[0].lo, ch[0].hi, lut, gamma);
        if (got[i] != want) {
          QFAIL(qPrintable(QString("%1 %2 gamma %3 i=%4 value %5: got %6 want %7")
                               .arg(lut.name.c_str(), s.str().c_str())
                               .arg(gamma)
                               .arg(i)
                               .arg(static_cast<double>(data[i]))
                               .arg(got[i], 8, 16)
                               .arg(want, 8, 16)));
        }
      }
    }
  }
  // Additive: a zero-filled target, then each channel added.
  Array out = Array::create(Shape{s.height(), s.width()}, DType::u32, dev);
  for (std::size_t c = 0; c < 2; ++c) {
    render_rgba(a, ch[c].lo, ch[c].hi, ch[c].lut, c % channels, out,
                {.gamma = ch[c].gamma, .blend = Blend::add});
  }
  const auto got = out.template pull_as<std::uint32_t>();
  for (std::size_t i = 0; i < plane; ++i) {
    std::uint32_t want = 0;
    for (std::size_t c = 0; c < 2; ++c) {
      const T v = data[(c % channels) * plane + i];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) continue;  // adds nothing
      }
      want = add_rgba(want, ref_contrast(v, ch[c].lo, ch[c].hi, ch[c].lut, ch[c].gamma));
    }
    if (got[i] != want) {
      QFAIL(qPrintable(QString("additive %1 i=%2: got %3 want %4")
                           .arg(s.str().c_str())
                           .arg(i)
                           .arg(got[i], 8, 16)
                           .arg(want, 8, 16)));
    }
  }
}

template <class T>
std::uint32_t ref_label(T v, const Lut& lut) {
  const auto id = static_cast<std::uint64_t>(v);
  return id == 0 ? lut.table[0] : lut.table[1 + (id - 1) % 255];
}

template <class T>
void check(const Device& dev, const Shape& s) {
  auto data = test::random_values<T>(s.elements());
  if constexpr (std::is_floating_point_v<T>) {
    if (data.size() > 3) data[3] = std::numeric_limits<T>::quiet_NaN();
  }
  // Limits inside the data's range, so that both clamps and the ramp are exercised.
  std::vector<double> sorted(data.begin(), data.end());
  std::erase_if(sorted, [](double x) { return std::isnan(x); });
  std::sort(sorted.begin(), sorted.end());
  const double lo = sorted.empty() ? 0.0 : sorted[sorted.size() / 5];
  const double hi = sorted.empty() ? 1.0 : sorted[sorted.size() * 4 / 5];
  const Array a = Array::push(data, s, dev);
  const std::size_t plane = s.width() * s.height();
  for (std::size_t z = 0; z < s.depth(); ++z) {
    for (const Lut& lut : builtin_luts()) {
      if (lut.mode == Lut::Mode::labels && std::is_floating_point_v<T>) {
        QVERIFY_THROWS_EXCEPTION(UnsupportedDType, render_rgba(a, lo, hi, lut, z));
        continue;
      }
      Array out = Array::empty(Shape{s.height(), s.width()}, DType::u32, dev);
      out.fill(kPoison);
      render_rgba(a, lo, hi, lut, z, out);
      const auto got = out.pull_as<std::uint32_t>();
      for (std::size_t i = 0; i < plane; ++i) {
        const T v = data[z * plane + i];
        const std::uint32_t want =
            lut.mode == Lut::Mode::labels ? ref_label(v, lut) : ref_contrast(v, lo, hi, lut);
        if (got[i] != want) {
          QFAIL(qPrintable(QString("%1 %2 z=%3 i=%4 value %5 lo %6 hi %7: got %8 want %9")
                               .arg(lut.name.c_str(), s.str().c_str())
                               .arg(z)
                               .arg(i)
                               .arg(static_cast<double>(v))
                               .arg(lo)
                               .arg(hi)
                               .arg(got[i], 8, 16)
                               .arg(want, 8, 16)));
        }
      }
    }
  }
}

}  // namespace

class TestRender : public QObject {
  Q_OBJECT
 private slots:
  void luts() {
    QCOMPARE(builtin_luts().size(), std::size_t{12});
    // The ramps gpix-viewer used to build itself, now core's (same entries as before).
    QCOMPARE(lut("hot").table[85], rgba(255, 0, 0));
    QCOMPARE(lut("hot").table[255], rgba(255, 255, 255));
    QCOMPARE(lut("cool").table[0], rgba(0, 255, 255));
    QCOMPARE(lut("green").table[100], rgba(0, 100, 0));
    QCOMPARE(lut("magenta").table[100], rgba(100, 0, 100));
    QCOMPARE(lut("red").table[100], rgba(100, 0, 0));
    QCOMPARE(lut("blue").table[255], rgba(0, 0, 255));
    QCOMPARE(lut("cyan").table[7], rgba(0, 7, 7));
    QCOMPARE(lut("yellow").table[0], rgba(0, 0, 0));
    QCOMPARE(lut("yellow").table[200], rgba(200, 200, 0));
    const Lut& g = lut("gray");
    const auto* b = reinterpret_cast<const std::uint8_t*>(&g.table[200]);
    QCOMPARE(int(b[0]), 200);
    QCOMPARE(int(b[1]), 200);
    QCOMPARE(int(b[2]), 200);
    QCOMPARE(int(b[3]), 255);
    QCOMPARE(lut("inverted_gray").table[0], rgba(255, 255, 255));
    const Lut& lab = lut("labels");
    QCOMPARE(lab.table[0], rgba(0, 0, 0, 0));
    for (std::size_t i = 1; i < 256; ++i) {
      QVERIFY(lab.table[i] != lab.table[i - 1]);  // neighbours differ
      QCOMPARE(reinterpret_cast<const std::uint8_t*>(&lab.table[i])[3], std::uint8_t{255});
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, lut("jet"));
  }

  void matches_reference_data() { test::add_device_dtype_rows(); }
  void matches_reference() {
    QFETCH(int, device);
    QFETCH(DType, dtype);
    const Device dev = test::device_at(device);
    if (dtype == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64 on this device");
    for (const Shape& s : {Shape{1}, Shape{13}, Shape{1, 1}, Shape{31, 37}, Shape{17, 1},
                           Shape{3, 5, 7}, Shape{2, 9, 1}}) {
      visit_dtype(dtype, [&](auto z) { check<decltype(z)>(dev, s); });
      if (QTest::currentTestFailed()) return;
    }
  }

  // Gamma in the contrast mode and additive blending of channels, every device and dtype.
  void gamma_and_blend_data() { test::add_device_dtype_rows(); }
  void gamma_and_blend() {
    QFETCH(int, device);
    QFETCH(DType, dtype);
    const Device dev = test::device_at(device);
    if (dtype == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64 on this device");
    for (const Shape& s : {Shape{13}, Shape{31, 37}, Shape{2, 9, 1}, Shape{3, 64, 67}}) {
      visit_dtype(dtype, [&](auto z) { check_composite<decltype(z)>(dev, s); });
      if (QTest::currentTestFailed()) return;
    }
  }

  void colour_tables() {
    const Lut c = Lut::colour(255, 128, 0);
    QCOMPARE(c.table[0], rgba(0, 0, 0));
    QCOMPARE(c.table[255], rgba(255, 128, 0));
    QCOMPARE(c.table[51], rgba(51, 26, 0));
    QCOMPARE(Lut::colour(0, 255, 0).table, lut("green").table);
    QCOMPARE(Lut::colour(255, 0, 255).table, lut("magenta").table);
    // Saturation: two full channels of the same colour stay at 255.
    const Device dev = test::test_devices().front();
    const Array a = Array::push(std::vector<std::uint8_t>{0, 255, 128}, Shape{3}, dev);
    Array out = Array::create(Shape{1, 3}, DType::u32, dev);
    for (int k = 0; k < 2; ++k)
      render_rgba(a, 0, 255, Lut::colour(200, 100, 0), 0, out, {.blend = Blend::add});
    const auto got = out.pull_as<std::uint32_t>();
    QCOMPARE(got[0], rgba(0, 0, 0, 255));  // black is opaque black; alpha saturates too
    QCOMPARE(got[1], rgba(255, 200, 0, 255));
    QCOMPARE(got[2], rgba(200, 100, 0, 255));
    // A frame into a region view of a larger canvas: refused (the kernels write from the
    // allocation's first byte: the canvas's top rows were overwritten), the canvas untouched.
    Array canvas = Array::push(std::vector<std::uint32_t>(2 * 3, 7u), Shape{2, 3}, dev);
    Array lower = canvas.view(Region{{1, 0}, {1, 3}});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             render_rgba(a, 0, 255, Lut::colour(200, 100, 0), 0, lower));
    QVERIFY(canvas.pull_as<std::uint32_t>() == std::vector<std::uint32_t>(6, 7u));
  }

  void errors() {
    const Device dev = test::test_devices().front();
    const Array a = Array::push(test::random_values<float>(3 * 4 * 5), Shape{3, 4, 5}, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_rgba(a, 0, 1, lut("gray"), 3));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_rgba(a, 2, 1, lut("gray")));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument, render_rgba(a, 0, std::numeric_limits<double>::infinity(), lut("gray")));
    Array wrong = Array::empty(Shape{4, 4}, DType::u32, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_rgba(a, 0, 1, lut("gray"), 0, wrong));
    const Array flat = Array::push(test::random_values<float>(20), Shape{4, 5}, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_rgba(flat, 0, 1, lut("gray"), 1));
    // Gamma must be finite and positive; labels take neither gamma nor additive blending.
    for (double g : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_rgba(flat, 0, 1, lut("gray"), 0, g));
    const Array ids = Array::push(std::vector<std::uint16_t>{0, 1, 2, 3}, Shape{2, 2}, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_rgba(ids, 0, 1, lut("labels"), 0, 2.0));
    Array two = Array::create(Shape{2, 2}, DType::u32, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             render_rgba(ids, 0, 1, lut("labels"), 0, two, {.blend = Blend::add}));
    // lo == hi: a step at lo.
    const Array step = Array::push(std::vector<std::int32_t>{-1, 0, 1}, Shape{3}, dev);
    const auto got = render_rgba(step, 0, 0, lut("gray")).pull_as<std::uint32_t>();
    QCOMPARE(got[0], rgba(0, 0, 0));
    QCOMPARE(got[1], rgba(0, 0, 0));
    QCOMPARE(got[2], rgba(255, 255, 255));
  }
};

QTEST_GUILESS_MAIN(TestRender)
#include "test_render.moc"
