// Reference tests for the "Segmentation" category.
//
// References: ITK where ITK has the same operation (itk::BinaryThresholdImageFilter for
// threshold, itk::ConnectedComponentImageFilter for the partition of connected_components:
// ITK numbers labels in its own order, so the partition is compared up to a permutation and
// the raster-order numbering against a plain flood fill). ITK's Otsu is NOT scikit-image's:
// its histogram widens the range by a margin (ImageToHistogramFilter's MarginalScale) and it
// returns a bin's upper edge, so threshold_otsu is checked against a plain transcription of
// skimage.filters.threshold_otsu (cumulative sums, first argmax, bin centres). Everything else
// has a plain reference here. Data: random binary images with several blobs plus sprinkled
// pixels, nonzero values of every size (NaN counts as true, -0.0 as false).
#include <itkBinaryThresholdImageFilter.h>
#include <itkConnectedComponentImageFilter.h>
#include <itkImage.h>

#include <array>
#include <deque>
#include <map>
#include <random>

#include "config.h"
#include "gpix/filters.h"
#include "harness.h"
#include "reference.h"

using namespace gpix;
using namespace gpix::test;

namespace {

using ref::Dims;

std::size_t irand(std::size_t n) {
  return n == 0 ? 0 : static_cast<std::size_t>(rng()() % n);
}

// A 0/1 mask with 1-6 ellipsoid or box blobs of random size, plus ~3% flipped pixels.
std::vector<std::uint8_t> blobs(const Shape& s) {
  const Dims dm(s);
  std::vector<std::uint8_t> m(s.elements(), 0);
  const std::size_t count = 1 + irand(6);
  for (std::size_t k = 0; k < count; ++k) {
    const long cx = static_cast<long>(irand(static_cast<std::size_t>(dm.w)));
    const long cy = static_cast<long>(irand(static_cast<std::size_t>(dm.h)));
    const long cz = static_cast<long>(irand(static_cast<std::size_t>(dm.d)));
    const long rx = static_cast<long>(irand(static_cast<std::size_t>(dm.w / 4 + 2)));
    const long ry = static_cast<long>(irand(static_cast<std::size_t>(dm.h / 4 + 2)));
    const long rz = static_cast<long>(irand(static_cast<std::size_t>(dm.d / 4 + 2)));
    const bool box = irand(2) == 0;
    for (long z = cz - rz; z <= cz + rz; ++z)
      for (long y = cy - ry; y <= cy + ry; ++y)
        for (long x = cx - rx; x <= cx + rx; ++x) {
          if (x < 0 || y < 0 || z < 0 || x >= dm.w || y >= dm.h || z >= dm.d) continue;
          const auto sq = [](long v, long r) {
            return r == 0 ? (v == 0 ? 0.0 : 2.0) : double(v * v) / double(r * r);
          };
          if (box || sq(x - cx, rx) + sq(y - cy, ry) + sq(z - cz, rz) <= 1.0) m[dm.at(x, y, z)] = 1;
        }
  }
  for (auto& v : m) {
    if (irand(100) < 3) v ^= 1;
  }
  return m;
}

// The mask as pixels of T: true -> a random nonzero value (NaN among them for floats),
// false -> 0 (-0.0 among them for floats).
template <class T>
std::vector<T> as_pixels(const std::vector<std::uint8_t>& m) {
  auto vals = random_values<T>(m.size());
  std::vector<T> out(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (!m[i]) {
      out[i] = T(0);
      if constexpr (std::is_floating_point_v<T>) {
        if (irand(4) == 0) out[i] = T(-0.0);
      }
      continue;
    }
    T v = vals[i];
    if (v == T(0)) v = T(1);
    if constexpr (std::is_floating_point_v<T>) {
      if (irand(10) == 0) v = std::numeric_limits<T>::quiet_NaN();
    }
    out[i] = v;
  }
  return out;
}

template <class T>
std::vector<std::uint8_t> nonzero(const std::vector<T>& v) {
  std::vector<std::uint8_t> m(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) m[i] = v[i] != T(0) ? 1 : 0;
  return m;
}

DType random_dtype(bool integer_only = false) {
  for (;;) {
    const DType t = kAllDTypes[irand(kAllDTypes.size())];
    if (integer_only && is_float(t)) continue;
    return t;
  }
}

// ------------------------------------------------------------------ ITK
template <unsigned D, class P>
typename itk::Image<P, D>::Pointer to_itk(const std::vector<P>& v, const Shape& s) {
  using Image = itk::Image<P, D>;
  typename Image::SizeType size;
  size[0] = s.width();
  size[1] = s.height();
  if constexpr (D == 3) size[2] = s.depth();
  typename Image::IndexType start;
  start.Fill(0);
  auto img = Image::New();
  img->SetRegions(typename Image::RegionType(start, size));
  img->Allocate();
  std::copy(v.begin(), v.end(), img->GetBufferPointer());
  return img;
}

template <unsigned D>
std::vector<std::uint32_t> itk_components_d(const std::vector<std::uint8_t>& m, const Shape& s,
                                            bool full) {
  using In = itk::Image<std::uint8_t, D>;
  using Out = itk::Image<std::uint32_t, D>;
  auto f = itk::ConnectedComponentImageFilter<In, Out>::New();
  f->SetInput(to_itk<D>(m, s));
  f->SetFullyConnected(full);
  f->Update();
  const std::uint32_t* p = f->GetOutput()->GetBufferPointer();
  return {p, p + m.size()};
}

std::vector<std::uint32_t> itk_components(const std::vector<std::uint8_t>& m, const Shape& s,
                                          bool full) {
  return s.ndim() == 3 ? itk_components_d<3>(m, s, full) : itk_components_d<2>(m, s, full);
}

template <unsigned D>
std::vector<std::uint8_t> itk_threshold_d(const std::vector<double>& v, const Shape& s,
                                          double value) {
  using In = itk::Image<double, D>;
  using Out = itk::Image<std::uint8_t, D>;
  auto f = itk::BinaryThresholdImageFilter<In, Out>::New();
  f->SetInput(to_itk<D>(v, s));
  // pixel > value <=> pixel >= the next double above value (for pixels exact in double).
  f->SetLowerThreshold(std::nextafter(value, std::numeric_limits<double>::infinity()));
  f->SetUpperThreshold(std::numeric_limits<double>::infinity());
  f->SetInsideValue(1);
  f->SetOutsideValue(0);
  f->Update();
  const std::uint8_t* p = f->GetOutput()->GetBufferPointer();
  return {p, p + v.size()};
}

// ------------------------------------------------------------------ plain references
// Flood fill in raster order: labels 1..n in order of each region's first pixel.
std::vector<std::uint32_t> ref_components(const std::vector<std::uint8_t>& m, const Shape& s,
                                          bool full) {
  const Dims dm(s);
  std::vector<std::uint32_t> out(m.size(), 0);
  std::uint32_t next = 0;
  std::deque<std::size_t> queue;
  for (std::size_t start = 0; start < m.size(); ++start) {
    if (!m[start] || out[start]) continue;
    out[start] = ++next;
    queue.push_back(start);
    while (!queue.empty()) {
      const std::size_t i = queue.front();
      queue.pop_front();
      const long x = static_cast<long>(i % static_cast<std::size_t>(dm.w));
      const long y =
          static_cast<long>((i / static_cast<std::size_t>(dm.w)) % static_cast<std::size_t>(dm.h));
      const long z = static_cast<long>(i / static_cast<std::size_t>(dm.w * dm.h));
      for (long dz = -1; dz <= 1; ++dz)
        for (long dy = -1; dy <= 1; ++dy)
          for (long dx = -1; dx <= 1; ++dx) {
            const int nz = (dx != 0) + (dy != 0) + (dz != 0);
            if (nz == 0 || (!full && nz != 1)) continue;
            const long xx = x + dx, yy = y + dy, zz = z + dz;
            if (xx < 0 || yy < 0 || zz < 0 || xx >= dm.w || yy >= dm.h || zz >= dm.d) continue;
            const std::size_t j = dm.at(xx, yy, zz);
            if (m[j] && !out[j]) {
              out[j] = next;
              queue.push_back(j);
            }
          }
    }
  }
  return out;
}

// Renumbers nonzero labels 1..n by first appearance.
template <class T>
std::vector<std::uint32_t> ref_relabel(const std::vector<T>& v) {
  std::map<T, std::uint32_t> ids;
  std::vector<std::uint32_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == T(0)) continue;
    auto it = ids.find(v[i]);
    if (it == ids.end()) it = ids.emplace(v[i], static_cast<std::uint32_t>(ids.size() + 1)).first;
    out[i] = it->second;
  }
  return out;
}

// Erosion/dilation of a 0/1 mask over the box or diamond window, clamped at the borders.
std::vector<std::uint8_t> ref_morph(const std::vector<std::uint8_t>& m, const Shape& s, int r,
                                    bool cross, bool dilate) {
  const Dims dm(s);
  const long rz = s.ndim() == 3 ? r : 0;
  std::vector<std::uint8_t> out(m.size());
  for (long z = 0; z < dm.d; ++z)
    for (long y = 0; y < dm.h; ++y)
      for (long x = 0; x < dm.w; ++x) {
        std::uint8_t v = dilate ? 0 : 1;
        for (long k = -rz; k <= rz; ++k)
          for (long j = -r; j <= r; ++j)
            for (long i = -r; i <= r; ++i) {
              if (cross && std::abs(i) + std::abs(j) + std::abs(k) > r) continue;
              if (m[dm.at(x + i, y + j, z + k)] == (dilate ? 1 : 0)) v = dilate ? 1 : 0;
            }
        out[dm.at(x, y, z)] = v;
      }
  return out;
}

// skimage.filters.threshold_otsu (0.19) as numpy (1.24) evaluates it, written out: integer
// images get one bin per value over [min, max] with integer sums; float images get
// numpy.histogram's 256 uniform bins in the image's own type (index (v - min) * (256 / (max -
// min)), then corrected against numpy.linspace's edges), centres (e[i] + e[i+1]) / 2 in that
// type. NaN is ignored. Sets constant for an image whose values are all equal.
template <class T>
double ref_otsu(const std::vector<T>& v, bool& constant) {
  T mn{}, mx{};
  bool any = false;
  for (T x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) continue;
    }
    if (!any || x < mn) mn = x;
    if (!any || x > mx) mx = x;
    any = true;
  }
  constant = false;
  if (!any) return std::numeric_limits<double>::quiet_NaN();
  if (!(mx > mn)) {
    constant = true;
    return static_cast<double>(mn);
  }
  std::vector<std::uint64_t> counts;
  std::vector<long double> centres;  // exact for integers
  std::vector<double> fcentres;
  if constexpr (std::is_integral_v<T>) {
    const std::uint64_t bins = static_cast<std::uint64_t>(mx) - static_cast<std::uint64_t>(mn) + 1;
    counts.assign(bins, 0);
    for (T x : v) ++counts[static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(mn)];
    for (std::uint64_t i = 0; i < bins; ++i)
      centres.push_back(static_cast<long double>(mn) + static_cast<long double>(i));
  } else {
    const T norm = static_cast<T>(256.0 / static_cast<double>(static_cast<T>(mx - mn)));
    std::vector<T> e(257);
    const double step = (static_cast<double>(mx) - static_cast<double>(mn)) / 256.0;
    for (int i = 0; i < 256; ++i) e[i] = static_cast<T>(i * step + static_cast<double>(mn));
    e[256] = mx;
    counts.assign(256, 0);
    for (T x : v) {
      if (std::isnan(x)) continue;
      auto b = static_cast<long>((x - mn) * norm);
      if (b == 256) b = 255;
      if (x < e[b]) --b;
      if (b != 255 && x >= e[b + 1]) ++b;
      ++counts[b];
    }
    for (int i = 0; i < 256; ++i) centres.push_back(static_cast<T>((e[i] + e[i + 1]) / T(2)));
  }
  // weight1 = cumsum(counts); weight2 = cumsum(counts[::-1])[::-1];
  // mean1 = cumsum(counts * centres) / weight1; mean2 likewise from the top;
  // variance12 = weight1[:-1] * weight2[1:] * (mean1[:-1] - mean2[1:]) ** 2; first argmax.
  const std::size_t nb = counts.size();
  std::vector<std::uint64_t> w1(nb), w2(nb);
  std::vector<double> m1(nb), m2(nb);
  std::uint64_t a = 0;
  long double b = 0;
  for (std::size_t i = 0; i < nb; ++i) {
    a += counts[i];
    b += static_cast<long double>(counts[i]) * centres[i];
    w1[i] = a;
    m1[i] = static_cast<double>(b) / static_cast<double>(a);
  }
  a = 0;
  b = 0;
  for (std::size_t i = nb; i-- > 0;) {
    a += counts[i];
    b += static_cast<long double>(counts[i]) * centres[i];
    w2[i] = a;
    m2[i] = static_cast<double>(b) / static_cast<double>(a);
  }
  std::size_t idx = 0;
  double best = -1;
  for (std::size_t i = 0; i + 1 < nb; ++i) {
    const double d = m1[i] - m2[i + 1];
    const double var = static_cast<double>(w1[i] * w2[i + 1]) * (d * d);
    if (var > best) {
      best = var;
      idx = i;
    }
  }
  return static_cast<double>(centres[idx]);
}

template <class T>
std::vector<std::uint8_t> ref_greater(const std::vector<T>& v, double t) {
  std::vector<std::uint8_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = static_cast<long double>(v[i]) > static_cast<long double>(t) ? 1 : 0;
  return out;
}

template <class T>
std::vector<T> bimodal(std::size_t n, bool extremes = std::is_integral_v<T>) {
  // The extremes of a float type span no finite range in that type (an error, tested below).
  auto v = moderate_values<T>(n, extremes);
  const auto m = irand(3);
  for (auto& x : v) {
    if (irand(2) == 0)
      x = static_cast<T>(static_cast<double>(x) / 4 + static_cast<double>(m + 1) * 10);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (n > 5) v[n / 3] = std::numeric_limits<T>::quiet_NaN();
  }
  return v;
}

QByteArray at(const char* f, DType t, const Shape& s, const char* extra = "") {
  return where(f, t, s) + " " + extra;
}

// ------------------------------------------------------------------ thresholds
GPIX_REFERENCE("threshold") {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    auto [a, host] = push_random<T>(device, shape);
    // A pixel's own value (ties must give 0), and a fractional value between.
    const double picks[] = {static_cast<double>(host[irand(host.size())]),
                            static_cast<double>(host[irand(host.size())]) + 0.5, -1e300, 1e300};
    for (double value : picks) {
      value = std::clamp(value, -1e300, 1e300);  // the parameter's range
      const Array out = threshold(a, value);
      QCOMPARE(out.dtype(), DType::u8);
      const auto got = out.pull_as<std::uint8_t>();
      compare(got, ref_greater(host, value), 0, 0, at("threshold", dtype, shape));
      if (sizeof(T) < 8 || std::is_same_v<T, double>) {  // exact in double for ITK
        std::vector<double> d(host.begin(), host.end());
        const auto itk_out = shape.ndim() == 3 ? itk_threshold_d<3>(d, shape, value)
                                               : itk_threshold_d<2>(d, shape, value);
        compare(got, itk_out, 0, 0, at("threshold vs ITK", dtype, shape));
      }
      if (QTest::currentTestFailed()) return;
    }
  });
});

GPIX_REFERENCE("threshold_otsu") {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    auto host = bimodal<T>(shape.elements());
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) {
      // One bin per value: the extremes of 32/64-bit types span too many values to bin, and
      // the error says so; then the same image without them.
      if (host.size() > 3) {
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, otsu_threshold(input(host, shape, device)));
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, threshold_otsu(input(host, shape, device)));
      }
      host = bimodal<T>(shape.elements(), false);
    }
    const Array a = input(host, shape, device);
    bool constant = false;
    const double t = ref_otsu(host, constant);
    const double got_t = otsu_threshold(a);
    QVERIFY2(got_t == t || (std::isnan(got_t) && std::isnan(t)),
             at("otsu_threshold", dtype, shape) + QByteArray::number(got_t, 'g', 17) + " vs " +
                 QByteArray::number(t, 'g', 17));
    const Array out = run("threshold_otsu", a).array;
    QCOMPARE(out.dtype(), DType::u8);
    compare(out.pull_as<std::uint8_t>(), ref_greater(host, t), 0, 0,
            at("threshold_otsu", dtype, shape));
    if constexpr (std::is_floating_point_v<T>) {
      if (host.size() > 3) {
        auto inf = host;
        inf[0] = std::numeric_limits<T>::infinity();
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, threshold_otsu(input(inf, shape, device)));
        // max - min overflows the image's type: numpy's histogram breaks there too.
        auto wide = host;
        wide[0] = std::numeric_limits<T>::lowest();
        wide[1] = std::numeric_limits<T>::max();
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, threshold_otsu(input(wide, shape, device)));
      }
    }
    // A constant image: all 0 (scikit-image returns the value itself as threshold).
    std::vector<T> flat(shape.elements(), host[0] == host[0] ? host[0] : T(3));
    const Array c = input(flat, shape, device);
    compare(threshold_otsu(c).pull_as<std::uint8_t>(), std::vector<std::uint8_t>(flat.size(), 0), 0,
            0, at("threshold_otsu constant", dtype, shape));
  });
});

// ------------------------------------------------------------------ binary logic
template <class T>
void check_logic(const char* name, const Device& device, const Shape& shape, DType dtype) {
  const auto ma = as_pixels<T>(blobs(shape));
  const Array a = input(ma, shape, device);
  const auto na = nonzero(ma);
  std::vector<std::uint8_t> expect(na.size());
  const std::string n = name;
  if (n == "binary_not") {
    for (std::size_t i = 0; i < na.size(); ++i) expect[i] = na[i] ^ 1;
    compare(run(name, a).array.pull_as<std::uint8_t>(), expect, 0, 0, at(name, dtype, shape));
    return;
  }
  // The second input: the same dtype or another one.
  const DType tb = irand(2) ? dtype : random_dtype();
  if (tb == DType::f64 && !device.supports_fp64()) return;
  visit_dtype(tb, [&](auto zb) {
    using B = decltype(zb);
    const auto mb = as_pixels<B>(blobs(shape));
    const auto nb = nonzero(mb);
    for (std::size_t i = 0; i < na.size(); ++i) {
      expect[i] = n == "binary_and"  ? (na[i] & nb[i])
                  : n == "binary_or" ? (na[i] | nb[i])
                                     : (na[i] ^ nb[i]);
    }
    const Array b = input(mb, shape, device);
    const Array inputs[] = {a, b};
    const Array out = run(name, inputs).array;
    QCOMPARE(out.dtype(), DType::u8);
    compare(out.pull_as<std::uint8_t>(), expect, 0, 0,
            at(name, dtype, shape, std::string(gpix::name(tb)).c_str()));
  });
}

#define GPIX_LOGIC_REF(NAME)                                                                  \
  GPIX_REFERENCE(NAME) {                                                                      \
    visit_dtype(dtype,                                                                        \
                [&](auto zero) { check_logic<decltype(zero)>(NAME, device, shape, dtype); }); \
  });
GPIX_LOGIC_REF("binary_and")
GPIX_LOGIC_REF("binary_or")
GPIX_LOGIC_REF("binary_xor")
GPIX_LOGIC_REF("binary_not")

// ------------------------------------------------------------------ morphology
template <class T>
void check_morph(const char* name, const Device& device, const Shape& shape, DType dtype) {
  const auto px = as_pixels<T>(blobs(shape));
  const auto m = nonzero(px);
  const Array a = input(px, shape, device);
  const std::string n = name;
  for (int r : {static_cast<int>(irand(4)), 1}) {
    for (bool cross : {false, true}) {
      std::vector<std::uint8_t> expect;
      if (n == "binary_erosion") expect = ref_morph(m, shape, r, cross, false);
      if (n == "binary_dilation") expect = ref_morph(m, shape, r, cross, true);
      if (n == "binary_opening")
        expect = ref_morph(ref_morph(m, shape, r, cross, false), shape, r, cross, true);
      if (n == "binary_closing")
        expect = ref_morph(ref_morph(m, shape, r, cross, true), shape, r, cross, false);
      const Array out =
          run(name, a,
              {{"radius", double(r)}, {"connectivity", std::string(cross ? "cross" : "box")}})
              .array;
      QCOMPARE(out.dtype(), DType::u8);
      compare(out.pull_as<std::uint8_t>(), expect, 0, 0,
              at(name, dtype, shape,
                 (std::string(cross ? "cross r=" : "box r=") + std::to_string(r)).c_str()));
      if (QTest::currentTestFailed()) return;
    }
  }
}

#define GPIX_MORPH_REF(NAME)                                                                  \
  GPIX_REFERENCE(NAME) {                                                                      \
    visit_dtype(dtype,                                                                        \
                [&](auto zero) { check_morph<decltype(zero)>(NAME, device, shape, dtype); }); \
  });
GPIX_MORPH_REF("binary_erosion")
GPIX_MORPH_REF("binary_dilation")
GPIX_MORPH_REF("binary_opening")
GPIX_MORPH_REF("binary_closing")

// ------------------------------------------------------------------ labelling
// got and expect have the same background and a one-to-one label correspondence.
bool same_partition(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& expect,
                    QByteArray& why) {
  std::map<std::uint32_t, std::uint32_t> fwd, back;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if ((got[i] == 0) != (expect[i] == 0)) {
      why = "background differs at " + QByteArray::number(qulonglong(i));
      return false;
    }
    if (got[i] == 0) continue;
    const auto [f, fnew] = fwd.emplace(got[i], expect[i]);
    const auto [b, bnew] = back.emplace(expect[i], got[i]);
    if (f->second != expect[i] || b->second != got[i]) {
      why = "labels split or merged at " + QByteArray::number(qulonglong(i));
      return false;
    }
  }
  return true;
}

GPIX_REFERENCE("connected_components") {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    const auto px = as_pixels<T>(blobs(shape));
    const auto m = nonzero(px);
    const Array a = input(px, shape, device);
    for (bool full : {false, true}) {
      const Array out =
          run("connected_components", a, {{"connectivity", std::string(full ? "full" : "face")}})
              .array;
      QCOMPARE(out.dtype(), DType::u32);
      const auto got = out.pull_as<std::uint32_t>();
      QByteArray why;
      QVERIFY2(same_partition(got, itk_components(m, shape, full), why),
               at("connected_components vs ITK", dtype, shape, full ? "full" : "face") + why);
      compare(got, ref_components(m, shape, full), 0, 0,
              at("connected_components raster order", dtype, shape, full ? "full" : "face"));
      if (QTest::currentTestFailed()) return;
    }
  });
});

template <class T>
void check_relabel(const Device& device, const Shape& shape, DType dtype);

GPIX_REFERENCE("relabel_sequential") {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) check_relabel<T>(device, shape, dtype);
  });
});

template <class T>
void check_relabel(const Device& device, const Shape& shape, DType dtype) {
  {
    // Blobs of random label values (sparse, up to 100000 where the dtype holds it).
    const auto m = blobs(shape);
    const std::uint64_t top = std::min<std::uint64_t>(100000, std::numeric_limits<T>::max());
    std::vector<T> labels(m.size());
    std::uint64_t blob_value = 1 + rng()() % top;
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (irand(20) == 0) blob_value = 1 + rng()() % top;
      labels[i] = m[i] ? static_cast<T>(blob_value) : T(0);
    }
    const Array a = input(labels, shape, device);
    const Array out = relabel_sequential(a);
    QCOMPARE(out.dtype(), DType::u32);
    compare(out.pull_as<std::uint32_t>(), ref_relabel(labels), 0, 0,
            at("relabel_sequential", dtype, shape));
    if constexpr (std::is_signed_v<T>) {
      labels[irand(labels.size())] = T(-1);
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, relabel_sequential(input(labels, shape, device)));
    }
  }
  {
    // Ids anywhere in the dtype's range, its largest included (for 32/64-bit dtypes far more
    // than the pixel count: the hash-table path).
    const auto m = blobs(shape);
    auto pick = [] {
      T v{};
      do v = random_values<T>(1)[0];
      while (v <= T(0));
      return v;
    };
    std::vector<T> labels(m.size());
    T blob_value = std::numeric_limits<T>::max();
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (irand(7) == 0) blob_value = pick();
      labels[i] = m[i] ? blob_value : T(0);
    }
    const Array out = relabel_sequential(input(labels, shape, device));
    compare(out.pull_as<std::uint32_t>(), ref_relabel(labels), 0, 0,
            at("relabel_sequential (sparse ids)", dtype, shape));
  }
}

// Voronoi-Otsu: the blurs are gaussian_blur's (tested in the Neighbourhood suite) and are
// taken from the device with the same calls the filter makes; every later step (Otsu mask,
// maxima, seeds, masked growth, numbering) is recomputed here.
template <class W>
std::vector<std::uint32_t> ref_voronoi(const std::vector<W>& spot, const std::vector<W>& outline,
                                       const Shape& s) {
  const Dims dm(s);
  bool constant = false;
  const double t = ref_otsu(outline, constant);
  std::vector<std::uint8_t> mask(outline.size());
  for (std::size_t i = 0; i < mask.size(); ++i)
    mask[i] = constant ? (outline[i] > static_cast<W>(t) ? 1 : 0)
                       : (static_cast<long double>(outline[i]) > static_cast<long double>(t));
  std::vector<std::uint8_t> spots(mask.size(), 0);
  for (long z = 0; z < dm.d; ++z)
    for (long y = 0; y < dm.h; ++y)
      for (long x = 0; x < dm.w; ++x) {
        const std::size_t i = dm.at(x, y, z);
        if (!mask[i]) continue;
        bool is_max = true;
        for (long k = -1; k <= 1; ++k)
          for (long j = -1; j <= 1; ++j)
            for (long h = -1; h <= 1; ++h)
              if (spot[dm.at(x + h, y + j, z + k)] > spot[i]) is_max = false;
        spots[i] = is_max;
      }
  auto cur = ref_components(spots, s, true);
  for (int step = 0;; ++step) {
    const bool full = step % 2 == 1;
    auto next = cur;
    bool changed = false;
    for (long z = 0; z < dm.d; ++z)
      for (long y = 0; y < dm.h; ++y)
        for (long x = 0; x < dm.w; ++x) {
          const std::size_t i = dm.at(x, y, z);
          if (cur[i] || !mask[i]) continue;
          std::uint32_t best = 0;
          for (long k = -1; k <= 1; ++k)
            for (long j = -1; j <= 1; ++j)
              for (long h = -1; h <= 1; ++h) {
                const int nz = (h != 0) + (j != 0) + (k != 0);
                if (nz == 0 || (!full && nz != 1)) continue;
                const long xx = x + h, yy = y + j, zz = z + k;
                if (xx < 0 || yy < 0 || zz < 0 || xx >= dm.w || yy >= dm.h || zz >= dm.d) continue;
                best = std::max(best, cur[dm.at(xx, yy, zz)]);
              }
          next[i] = best;
          changed |= best != 0;
        }
    cur = next;
    if (!changed) break;
  }
  return ref_relabel(cur);
}

GPIX_REFERENCE("voronoi_otsu_labeling") {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    // Bright spots on a dark background with noise: values 0..100 in every dtype.
    const Dims dm(shape);
    std::vector<T> img(shape.elements());
    const auto m = blobs(shape);
    for (std::size_t i = 0; i < img.size(); ++i)
      img[i] = static_cast<T>(m[i] ? 60 + irand(40) : irand(30));
    const Array a = input(img, shape, device);
    const double ss = 1.5, os = 1.0;
    const Array out = voronoi_otsu_labeling(a, ss, os);
    QCOMPARE(out.dtype(), DType::u32);
    const DType w = (size_of(dtype) <= 2 || dtype == DType::f32) ? DType::f32 : DType::f64;
    const Array work = convert(a, w);
    const bool three = shape.ndim() == 3;
    const Array sb = gaussian_blur(work, ss, ss, three ? ss : 0);
    const Array ob = gaussian_blur(work, os, os, three ? os : 0);
    std::vector<std::uint32_t> expect;
    if (w == DType::f32) {
      expect = ref_voronoi(sb.pull_as<float>(), ob.pull_as<float>(), shape);
    } else {
      expect = ref_voronoi(sb.pull_as<double>(), ob.pull_as<double>(), shape);
    }
    compare(out.pull_as<std::uint32_t>(), expect, 0, 0, at("voronoi_otsu_labeling", dtype, shape));
  });
});

GPIX_REFERENCE("label_statistics") {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    // Labels: blobs of label values 1..L with gaps, in a random integer dtype.
    const auto m = blobs(shape);
    const std::uint32_t top = 1 + static_cast<std::uint32_t>(irand(20));
    std::vector<std::uint32_t> lab(m.size());
    std::uint32_t cur = 1 + static_cast<std::uint32_t>(irand(top));
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (irand(10) == 0) cur = 1 + static_cast<std::uint32_t>(irand(top));
      lab[i] = m[i] ? cur : 0;
    }
    auto [img, host] = push_random<T>(device, shape);
    if constexpr (std::is_floating_point_v<T>) {
      if (host.size() > 7 && irand(2)) {
        host[7] = std::numeric_limits<T>::quiet_NaN();
        img = input(host, shape, device);
      }
    }
    const DType lt = random_dtype(true);
    Array labels;
    visit_dtype(lt, [&](auto lz) {
      using L = decltype(lz);
      std::vector<L> l(lab.begin(), lab.end());
      labels = input(l, shape, device);
    });
    const Table tab = label_statistics(labels, img);
    QCOMPARE(tab.columns().size(), std::size_t(5));
    QCOMPARE(tab.columns()[2], std::string("mean_intensity"));
    const std::uint32_t rows = *std::max_element(lab.begin(), lab.end());
    QCOMPARE(tab.size(), std::size_t(rows));
    const bool exact_sum = !std::is_floating_point_v<T> && sizeof(T) <= 4;
    const double rel = exact_sum                                               ? 1e-15
                       : (std::is_same_v<T, float> && !device.supports_fp64()) ? 1e-5
                                                                               : 1e-12;
    for (std::uint32_t l = 1; l <= rows; ++l) {
      long double sum = 0, vmax_abs = 0;
      double mn = 0, mx = 0;
      std::size_t area = 0;
      bool nan = false;
      for (std::size_t i = 0; i < lab.size(); ++i) {
        if (lab[i] != l) continue;
        const double v = static_cast<double>(host[i]);
        if (std::isnan(v)) nan = true;
        if (area == 0 || v < mn) mn = v;
        if (area == 0 || v > mx) mx = v;
        ++area;
        sum += static_cast<long double>(host[i]);
        vmax_abs = std::max(vmax_abs, std::fabs(static_cast<long double>(host[i])));
      }
      const auto& row = tab.row(l - 1).values();
      const QByteArray w =
          at("label_statistics", dtype, shape,
             ("label " + std::to_string(l) + " labels " + std::string(gpix::name(lt))).c_str());
      QVERIFY2(row[0] == l && row[1] == double(area), w);
      if (area == 0 || nan) {
        QVERIFY2(std::isnan(row[2]) && std::isnan(row[3]) && std::isnan(row[4]), w);
        continue;
      }
      const double mean = static_cast<double>(sum / static_cast<long double>(area));
      QVERIFY2(std::fabs(row[2] - mean) <=
                   rel * std::max({std::fabs(mean), static_cast<double>(vmax_abs), 1.0}),
               w + " mean " + QByteArray::number(row[2], 'g', 17) + " vs " +
                   QByteArray::number(mean, 'g', 17));
      QVERIFY2(row[3] == mn && row[4] == mx, w + " min/max");
    }
  });
});

}  // namespace

class TestSegmentation : public QObject {
  Q_OBJECT
 private slots:
  void segmentation_data() { add_rows(Category::segmentation); }
  void segmentation() { run_row(); }

  // Bad input: typed errors that say what would work.
  void errors() {
    const Device dev = test_devices().front();
    const Array a = input(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3}, dev);
    const Array b = input(std::vector<std::uint8_t>{1, 0, 1, 0}, Shape{2, 2}, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, binary_and(a, b));
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, label_statistics(a, a));
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, relabel_sequential(a));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, connected_components(a, "diagonal"));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, binary_erosion(a, -1));
    const Array big = input(std::vector<std::int32_t>{0, 20000000}, Shape{1, 2}, dev);
    try {
      label_statistics(big, big);
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      QVERIFY2(std::string(e.what()).find("relabel_sequential") != std::string::npos, e.what());
    }
  }

  // Box and cross morphology run on masks packed 32 pixels to a word: rows that end inside a
  // word, span several, or fit one exactly; windows wider than a word and than the image;
  // sparse, dense and half-full masks (erosion of a sparse mask alone would say little);
  // rows that load and store as vectors (widths 64 and 40) and ones that do not (of them, 8-bit
  // rows of any width still load and store 16 bytes at a time); uint8 inputs
  // whose true pixels take every value 1..255, int16 ones negative values too, float ones whose
  // true pixels include NaN and whose false ones include -0.
  void morphology_across_words() {
    const std::pair<Shape, std::vector<int>> cases[] = {{Shape{3, 70}, {1, 3, 31, 32, 33, 45}},
                                                        {Shape{5, 97}, {2, 7, 40}},
                                                        {Shape{1, 64}, {1, 32, 70}},
                                                        {Shape{2, 33}, {1, 16}},
                                                        {Shape{2, 3, 129}, {1, 2, 5}},
                                                        {Shape{3, 4, 40}, {1, 3}},
                                                        {Shape{9, 2, 1}, {1, 4}},
                                                        // A realistic odd width: rows start
                                                        // anywhere in the 16-byte vectors.
                                                        {Shape{67, 1999}, {1, 4}}};
    const char* filters[] = {"binary_erosion", "binary_dilation", "binary_opening",
                             "binary_closing"};
    std::bernoulli_distribution coin(0.5);
    for (const Device& dev : test_devices()) {
      int k = 0;
      for (const auto& [shape, radii] : cases) {
        const double density = std::array{0.5, 0.9, 0.1}[static_cast<std::size_t>(k++ % 3)];
        std::bernoulli_distribution on(density);
        std::vector<std::uint8_t> m(shape.elements());
        std::vector<std::uint8_t> b(m.size());  // true: 1 .. 255 (every high bit pattern)
        std::vector<std::int16_t> h(m.size());  // true: any nonzero value, negative ones too
        std::vector<float> f(m.size());
        for (std::size_t i = 0; i < m.size(); ++i) {
          m[i] = on(rng()) ? 1 : 0;
          b[i] = m[i] ? static_cast<std::uint8_t>(1 + rng()() % 255) : 0;
          h[i] = m[i] ? static_cast<std::int16_t>(rng()() % 2 ? -1 - rng()() % 32768
                                                              : 1 + rng()() % 32767)
                      : 0;
          f[i] = m[i] ? (coin(rng()) ? std::numeric_limits<float>::quiet_NaN() : -3.0f)
                      : (coin(rng()) ? -0.0f : 0.0f);
        }
        const Array inputs[] = {Array::push(b, shape, dev), Array::push(h, shape, dev),
                                Array::push(f, shape, dev)};
        for (int r : radii) {
          for (bool cross : {false, true}) {
            const auto ero = ref_morph(m, shape, r, cross, false);
            const auto dil = ref_morph(m, shape, r, cross, true);
            const std::vector<std::uint8_t> expect[] = {ero, dil,
                                                        ref_morph(ero, shape, r, cross, true),
                                                        ref_morph(dil, shape, r, cross, false)};
            for (std::size_t fi = 0; fi < 4; ++fi) {
              for (const Array& a : inputs) {
                const Array out = run(filters[fi], a,
                                      {{"radius", double(r)},
                                       {"connectivity", std::string(cross ? "cross" : "box")}})
                                      .array;
                compare(out.pull_as<std::uint8_t>(), expect[fi], 0, 0,
                        at(filters[fi], a.dtype(), shape,
                           (std::string(cross ? "cross r=" : "box r=") + std::to_string(r) +
                            " density " + std::to_string(density))
                               .c_str()));
                if (QTest::currentTestFailed()) return;
              }
            }
          }
        }
      }
    }
  }

  // Label images from other tools carry large or hashed ids: no table sized by the largest
  // id (ids 1 and 4000000000 once asked for 16 GB).
  void sparse_label_ids() {
    for (const Device& dev : test_devices()) {
      const Shape s{13, 17};
      std::vector<std::uint32_t> ids(s.elements(), 0);
      std::vector<std::uint32_t> expect(s.elements(), 0);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i % 5 == 1) ids[i] = 4000000000u;
        if (i % 5 == 3) ids[i] = 1;
        expect[i] = ids[i] == 4000000000u ? 1 : (ids[i] == 1 ? 2 : 0);
      }
      QVERIFY(relabel_sequential(Array::push(ids, s, dev)).pull_as<std::uint32_t>() == expect);
      std::vector<std::int64_t> wide(ids.begin(), ids.end());
      for (auto& v : wide) v = v == 4000000000u ? std::numeric_limits<std::int64_t>::max() : v;
      QVERIFY(relabel_sequential(Array::push(wide, s, dev)).pull_as<std::uint32_t>() == expect);
      std::vector<std::uint64_t> huge(ids.begin(), ids.end());
      for (auto& v : huge) v = v == 1 ? 0x9e3779b97f4a7c15ull : v;
      QVERIFY(relabel_sequential(Array::push(huge, s, dev)).pull_as<std::uint32_t>() == expect);
      // label_statistics has one row per id 1..max: sparse ids are refused, naming the fix.
      try {
        label_statistics(Array::push(ids, s, dev), Array::push(ids, s, dev));
        QFAIL("no exception");
      } catch (const InvalidArgument& e) {
        QVERIFY2(std::string(e.what()).find("relabel_sequential") != std::string::npos, e.what());
      }
    }
  }

  // Otsu's kernels count in uint32, so the host takes an image in runs of fewer than 2^32
  // pixels and adds their counts up. With runs of 997 pixels: several whole runs and a shorter
  // last one, a last run of one pixel, one run alone; float bins, integer bins counted in local
  // memory and (a range past 4096 values) in global memory. Against the plain reference.
  void otsu_in_runs_data() { test::add_device_dtype_rows(); }
  void otsu_in_runs() {
    const Device dev = test::fetch_device();
    QFETCH(DType, dtype);
    const detail::ScopedConfig scope;
    detail::config_for_testing().histogram_run = 997;
    for (const Shape& shape : {Shape{151, 33}, Shape{1, 998}, Shape{7, 5, 13}, Shape{997, 1}}) {
      visit_dtype(dtype, [&](auto zero) {
        using T = decltype(zero);
        std::vector<std::vector<T>> images = {bimodal<T>(shape.elements(), false)};
        if constexpr (std::is_integral_v<T> && sizeof(T) >= 2) {
          std::vector<T> spread(shape.elements());
          for (std::size_t i = 0; i < spread.size(); ++i)
            spread[i] = static_cast<T>(i * 7919 % 30011);
          images.push_back(spread);
        }
        for (const std::vector<T>& host : images) {
          const QByteArray w = at("otsu in runs", dtype, shape);
          const Array a = input(host, shape, dev);
          bool constant = false;
          const double t = ref_otsu(host, constant);
          const double got = otsu_threshold(a);
          QVERIFY2(got == t || (std::isnan(got) && std::isnan(t)),
                   w + QByteArray::number(got, 'g', 17) + " vs " + QByteArray::number(t, 'g', 17));
          compare(threshold_otsu(a).pull_as<std::uint8_t>(), ref_greater(host, t), 0, 0, w);
          if (QTest::currentTestFailed()) return;
        }
      });
      if (QTest::currentTestFailed()) return;
    }
  }

  // Integer images: scikit-image's threshold exactly (one bin per value), the smooth
  // uint16 image; 256 bins over its range would put 0.4% of the pixels on the other side.
  // threshold_otsu(img) = 21826 by skimage 0.19.3 for
  // img = ((x*x + y*y) * 60000 // 73684).astype(uint16) on a 211 x 173 grid.
  void otsu_integer_like_skimage() {
    for (const Device& dev : test_devices()) {
      const Shape s{211, 173};
      std::vector<std::uint16_t> img(s.elements());
      for (std::uint64_t y = 0; y < 211; ++y)
        for (std::uint64_t x = 0; x < 173; ++x)
          img[y * 173 + x] = static_cast<std::uint16_t>((x * x + y * y) * 60000 / 73684);
      const Array a = Array::push(img, s, dev);
      QCOMPARE(otsu_threshold(a), 21826.0);
      std::vector<std::uint8_t> expect(img.size());
      for (std::size_t i = 0; i < img.size(); ++i) expect[i] = img[i] > 21826 ? 1 : 0;
      QVERIFY(threshold_otsu(a).pull_as<std::uint8_t>() == expect);
    }
  }

  // Integer images spanning about a million values (one bin each), far from zero: between the
  // two clusters lie a million empty bins along which the variance ties, where numpy's first
  // argmax takes the lowest; the search keeps one array of means and sums the upper class as it
  // walks down (segmentation.cpp, otsu_bin), so the ties and the sums are checked against the
  // transcription of numpy's cumulative arrays.
  void otsu_wide_integer_ranges() {
    const Shape s{37, 29};
    std::vector<std::int32_t> i32(s.elements());
    std::vector<std::uint32_t> u32(s.elements());
    std::vector<std::int64_t> i64(s.elements());
    for (std::size_t i = 0; i < i32.size(); ++i) {
      const bool high = irand(3) == 0;
      const auto spread = static_cast<std::int64_t>(irand(1000));
      i32[i] = static_cast<std::int32_t>((high ? 900000 : -100000) + spread);
      u32[i] = static_cast<std::uint32_t>((high ? 4294966295ll : 4293966295ll) + spread);
      i64[i] = (high ? -(std::int64_t{1} << 40) + 1000000 : -(std::int64_t{1} << 40)) + spread;
    }
    for (const Device& dev : test_devices()) {
      const auto check = [&](const auto& host) {
        bool constant = false;
        const double want = ref_otsu(host, constant);
        const double got = otsu_threshold(input(host, s, dev));
        QVERIFY2(got == want, QByteArray::fromStdString(dev.name() + " " + std::to_string(got) +
                                                        " vs " + std::to_string(want)));
      };
      check(i32);
      check(u32);
      check(i64);
    }
  }

  // Otsu's counting kernels (otsu_count_local for integers, otsu_histogram for floats) on
  // images large enough that every work-item takes the loops of eight and four loads and the
  // tail (GPIX_GRID_EACH), against the transcription of scikit-image. Three modes laid out in
  // bands of unequal size, so that counting a band's elements twice or not at all moves the
  // threshold.
  void otsu_large_images() {
    const Shape s{1901, 1801};
    const auto modes = [&](auto zero, double a, double b, double c, double spread) {
      using T = decltype(zero);
      std::vector<T> v(s.elements());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double centre = i < v.size() / 5 ? a : (i < v.size() / 2 ? b : c);
        v[i] = static_cast<T>(centre + static_cast<double>(irand(1000)) / 1000.0 * spread);
      }
      return v;
    };
    for (const Device& dev : test_devices()) {
      const auto check = [&](const auto& host, const char* what) {
        bool constant = false;
        const double want = ref_otsu(host, constant);
        const double got = otsu_threshold(input(host, s, dev));
        QVERIFY2(got == want,
                 QByteArray::fromStdString(dev.name() + " " + what + " " + std::to_string(got) +
                                           " vs " + std::to_string(want)));
      };
      check(modes(std::uint8_t{}, 10, 90, 170, 60), "uint8");
      check(modes(std::uint16_t{}, 100, 1500, 2500, 1200), "uint16");
      check(modes(std::int16_t{}, -1800, -200, 900, 1000), "int16");
      auto f = modes(0.0f, 0.1, 0.45, 0.7, 0.25);
      for (std::size_t i = 3; i < f.size(); i += 65537)
        f[i] = std::numeric_limits<float>::quiet_NaN();
      check(f, "float32");
      if (dev.supports_fp64()) check(modes(0.0, -3, 1, 2.5, 1.5), "float64");
    }
  }

  // A long snake and a comb: many unions along long paths.
  void components_long_paths() {
    for (const Device& dev : test_devices()) {
      const Shape s{64, 257};
      std::vector<std::uint8_t> m(s.elements(), 0);
      const Dims dm(s);
      for (long y = 0; y < dm.h; y += 2)
        for (long x = 0; x < dm.w; ++x) m[dm.at(x, y, 0)] = 1;
      for (long y = 1; y < dm.h; y += 2) m[dm.at((y / 2) % 2 ? 0 : dm.w - 1, y, 0)] = 1;
      const auto got = connected_components(input(m, s, dev), "face").pull_as<std::uint32_t>();
      compare(got, ref_components(m, s, false), 0, 0, "snake");
    }
  }

  // connected_components labels tiles of up to 2048 pixels in local memory and joins them
  // across tile faces: shapes of many tiles (and one tile thick), blobs and sparse noise that
  // meet only at tile corners and edges (full connectivity), a diagonal staircase across every
  // tile, and a checkerboard (with full connectivity in 3D: six pairs a pixel, more than a
  // tile's list of 2048 holds, so cc_local unites the rest on the spot), against the plain
  // reference's labels in raster order.
  void components_across_tiles() {
    for (const Device& dev : test_devices()) {
      for (const Shape s : {Shape{200, 150}, Shape{70, 45, 37}, Shape{1, 1, 5000}, Shape{3000, 1},
                            Shape{33, 17, 9}, Shape{16, 16, 16}}) {
        const Dims dm(s);
        std::vector<std::vector<std::uint8_t>> masks = {blobs(s), blobs(s)};
        std::vector<std::uint8_t> noise(s.elements()), stair(s.elements(), 0),
            checker(s.elements(), 0);
        for (auto& v : noise) v = irand(3) == 0 ? 1 : 0;
        for (long z = 0; z < dm.d; ++z)
          for (long y = 0; y < dm.h; ++y)
            for (long x = 0; x < dm.w; ++x)
              if ((x + y + z) % 7 == 0) stair[dm.at(x, y, z)] = 1;
        for (long z = 0; z < dm.d; ++z)
          for (long y = 0; y < dm.h; ++y)
            for (long x = 0; x < dm.w; ++x)
              if ((x + y + z) % 2 == 0) checker[dm.at(x, y, z)] = 1;
        masks.push_back(noise);
        masks.push_back(stair);
        masks.push_back(checker);
        for (const auto& m : masks) {
          for (bool full : {false, true}) {
            const auto got = connected_components(input(m, s, dev), full ? "full" : "face")
                                 .pull_as<std::uint32_t>();
            compare(
                got, ref_components(m, s, full), 0, 0,
                QByteArray::fromStdString(dev.name() + " " + s.str() + (full ? " full" : " face")));
            if (QTest::currentTestFailed()) return;
          }
        }
      }
    }
  }

  // Regions far larger than a work-group's tile (64x64 in 2D, 16x16x16 in 3D): label_statistics
  // adds up each label's runs inside the group before it touches the table, so labels over
  // many groups, labels that meet a group more than once (cut by background), NaN inside a
  // long run, and images narrower or thinner than a tile must add up like the plain sums.
  void label_statistics_large_regions() {
    for (const Device& dev : test_devices()) {
      for (const Shape s : {Shape{97, 131, 23}, Shape{4096, 3}, Shape{1, 20001}}) {
        std::vector<std::uint32_t> lab(s.elements());
        for (std::size_t i = 0; i < lab.size(); ++i) {
          // Three slabs of one label each (the first ends at pixel 4096), label 2 cut by
          // background bands.
          lab[i] = i < 4096 ? 1 : static_cast<std::uint32_t>(2 + (3 * i) / lab.size());
          if (lab[i] == 2 && (i / 997) % 5 == 0) lab[i] = 0;
        }
        auto host = test::random_values<float>(lab.size());
        host[lab.size() / 2 + 17] = std::numeric_limits<float>::quiet_NaN();
        const Table t = label_statistics(input(lab, s, dev), input(host, s, dev));
        const std::uint32_t rows = *std::max_element(lab.begin(), lab.end());
        QCOMPARE(t.size(), std::size_t(rows));
        for (std::uint32_t l = 1; l <= rows; ++l) {
          double sum = 0, mn = 0, mx = 0;
          std::size_t area = 0;
          bool nan = false;
          for (std::size_t i = 0; i < lab.size(); ++i) {
            if (lab[i] != l) continue;
            const double v = host[i];
            nan = nan || std::isnan(v);
            if (area == 0 || v < mn) mn = v;
            if (area == 0 || v > mx) mx = v;
            sum += v;
            ++area;
          }
          const auto& r = t.row(l - 1).values();
          const QByteArray w =
              QByteArray::fromStdString(dev.name() + " " + s.str() + " label " + std::to_string(l));
          QVERIFY2(r[1] == double(area), w);
          if (nan || area == 0) {
            QVERIFY2(std::isnan(r[2]) && std::isnan(r[3]) && std::isnan(r[4]), w);
            continue;
          }
          // float32 sums are float64 on devices with fp64, float32 (slots, groups) otherwise.
          const double tol = dev.supports_fp64() ? 1e-12 : 1e-4;
          QVERIFY2(std::fabs(r[2] - sum / double(area)) <= tol * std::max(1.0, std::fabs(mx - mn)),
                   w);
          QVERIFY2(r[3] == mn && r[4] == mx, w);
        }
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestSegmentation)
#include "test_segmentation.moc"
