// The catalog itself: every entry well-formed, every category covered by a reference suite,
// params parsed and validated as documented, and every typed function the same filter as its
// catalog entry (same checks, same result).
#include <QTest>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <tuple>
#include <variant>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "gpix/filters.h"
#include "support/compare.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

// Category -> the test executable whose rows walk it (tests/filters/harness.h). A category
// with no suite here fails: a new category needs its reference suite.
static const std::map<Category, std::string> kSuites = {
    {Category::arithmetic, "test_filters_arithmetic"},
    {Category::types, "test_filters_arithmetic"},
    {Category::neighbourhood, "test_filters_neighbourhood"},
    {Category::segmentation, "test_filters_segmentation"},
    {Category::geometry, "test_filters_geometry"},
    {Category::projections, "test_filters_geometry"},
    {Category::reductions, "test_filters_geometry"},
};

namespace {

Result array_result(Array a) {
  Result r;
  r.array = std::move(a);
  return r;
}
Result value_result(const char* column, double v) {
  Result r;
  r.table = {{column}, {{v}}};
  return r;
}

// Each catalog entry's typed function called as gpix::run is with `params` (values other than
// the defaults, so that a parameter passed to the wrong place shows).
struct TypedCall {
  Params params;
  std::function<Result(const std::vector<Array>& x)> call;
};
using X = const std::vector<Array>&;
std::map<std::string, TypedCall> typed_calls() {
  const std::array<double, 12> m = {0.9, 0.1, 0, 1.5, -0.2, 1.1, 0, -0.5, 0, 0, 1, 0};
  Params affine = {{"interpolation", std::string("nearest")}};
  const char* mnames[] = {"m00", "m01", "m02", "m03", "m10", "m11",
                          "m12", "m13", "m20", "m21", "m22", "m23"};
  for (std::size_t i = 0; i < 12; ++i) affine[mnames[i]] = m[i];
  const Params box = {{"radius_x", 2.0}, {"radius_y", 1.0}, {"radius_z", 0.0}};
  const Params morph = {{"radius", 2.0}, {"connectivity", std::string("cross")}};
  return {
      {"absolute", {{}, [](X x) { return array_result(absolute(x[0])); }}},
      {"add_images", {{}, [](X x) { return array_result(add_images(x[0], x[1])); }}},
      {"add_scalar", {{{"value", -3.5}}, [](X x) { return array_result(add_scalar(x[0], -3.5)); }}},
      {"clip",
       {{{"minimum", -2.0}, {"maximum", 40.0}},
        [](X x) { return array_result(clip(x[0], -2, 40)); }}},
      {"divide_images", {{}, [](X x) { return array_result(divide_images(x[0], x[1])); }}},
      {"exp", {{}, [](X x) { return array_result(gpix::exp(x[0])); }}},
      {"invert", {{}, [](X x) { return array_result(invert(x[0])); }}},
      {"log", {{}, [](X x) { return array_result(gpix::log(x[0])); }}},
      {"maximum_images", {{}, [](X x) { return array_result(maximum_images(x[0], x[1])); }}},
      {"minimum_images", {{}, [](X x) { return array_result(minimum_images(x[0], x[1])); }}},
      {"multiply_images", {{}, [](X x) { return array_result(multiply_images(x[0], x[1])); }}},
      {"multiply_scalar",
       {{{"factor", 0.25}}, [](X x) { return array_result(multiply_scalar(x[0], 0.25)); }}},
      {"power", {{{"exponent", 3.0}}, [](X x) { return array_result(power(x[0], 3)); }}},
      {"sqrt", {{}, [](X x) { return array_result(gpix::sqrt(x[0])); }}},
      {"subtract_images", {{}, [](X x) { return array_result(subtract_images(x[0], x[1])); }}},
      {"convert",
       {{{"dtype", std::string("int16")}},
        [](X x) { return array_result(convert(x[0], DType::i16)); }}},
      {"rescale_intensity",
       {{{"out_min", -1.0}, {"out_max", 5.0}},
        [](X x) { return array_result(rescale_intensity(x[0], -1, 5)); }}},
      {"bottom_hat_box", {box, [](X x) { return array_result(bottom_hat_box(x[0], 2, 1, 0)); }}},
      {"difference_of_gaussian",
       {{{"sigma1", 0.5}, {"sigma2", 2.0}},
        [](X x) { return array_result(difference_of_gaussian(x[0], 0.5, 2)); }}},
      {"gaussian_blur",
       {{{"sigma_x", 1.5}, {"sigma_y", 0.5}, {"sigma_z", 0.0}},
        [](X x) { return array_result(gaussian_blur(x[0], 1.5, 0.5, 0)); }}},
      {"gradient_x", {{}, [](X x) { return array_result(gradient_x(x[0])); }}},
      {"gradient_y", {{}, [](X x) { return array_result(gradient_y(x[0])); }}},
      {"gradient_z", {{}, [](X x) { return array_result(gradient_z(x[0])); }}},
      {"laplace", {{}, [](X x) { return array_result(laplace(x[0])); }}},
      {"maximum_box", {box, [](X x) { return array_result(maximum_box(x[0], 2, 1, 0)); }}},
      {"mean_box", {box, [](X x) { return array_result(mean_box(x[0], 2, 1, 0)); }}},
      {"median_box", {box, [](X x) { return array_result(median_box(x[0], 2, 1, 0)); }}},
      {"minimum_box", {box, [](X x) { return array_result(minimum_box(x[0], 2, 1, 0)); }}},
      {"sobel", {{}, [](X x) { return array_result(sobel(x[0])); }}},
      {"top_hat_box", {box, [](X x) { return array_result(top_hat_box(x[0], 2, 1, 0)); }}},
      {"unsharp_mask",
       {{{"sigma", 2.0}, {"amount", 0.5}},
        [](X x) { return array_result(unsharp_mask(x[0], 2, 0.5)); }}},
      {"variance_box", {box, [](X x) { return array_result(variance_box(x[0], 2, 1, 0)); }}},
      {"binary_and", {{}, [](X x) { return array_result(binary_and(x[0], x[1])); }}},
      {"binary_closing",
       {morph, [](X x) { return array_result(binary_closing(x[0], 2, "cross")); }}},
      {"binary_dilation",
       {morph, [](X x) { return array_result(binary_dilation(x[0], 2, "cross")); }}},
      {"binary_erosion",
       {morph, [](X x) { return array_result(binary_erosion(x[0], 2, "cross")); }}},
      {"binary_not", {{}, [](X x) { return array_result(binary_not(x[0])); }}},
      {"binary_opening",
       {morph, [](X x) { return array_result(binary_opening(x[0], 2, "cross")); }}},
      {"binary_or", {{}, [](X x) { return array_result(binary_or(x[0], x[1])); }}},
      {"binary_xor", {{}, [](X x) { return array_result(binary_xor(x[0], x[1])); }}},
      {"connected_components",
       {{{"connectivity", std::string("face")}},
        [](X x) { return array_result(connected_components(x[0], "face")); }}},
      {"label_statistics",
       {{},
        [](X x) {
          Result r;
          r.table = label_statistics(x[0], x[1]);
          return r;
        }}},
      {"relabel_sequential", {{}, [](X x) { return array_result(relabel_sequential(x[0])); }}},
      {"threshold", {{{"value", 10.0}}, [](X x) { return array_result(threshold(x[0], 10)); }}},
      {"threshold_otsu", {{}, [](X x) { return array_result(threshold_otsu(x[0])); }}},
      {"voronoi_otsu_labeling",
       {{{"spot_sigma", 1.0}, {"outline_sigma", 0.5}},
        [](X x) { return array_result(voronoi_otsu_labeling(x[0], 1, 0.5)); }}},
      {"affine_transform",
       {affine,
        [m](X x) { return array_result(affine_transform(x[0], m, Interpolation::nearest)); }}},
      {"crop",
       {{{"origin_x", 2.0}, {"origin_y", 1.0}, {"size_x", 5.0}, {"size_y", 0.0}},
        [](X x) { return array_result(crop(x[0], 2, 1, 0, 5, 0, 0)); }}},
      {"flip",
       {{{"flip_x", 0.0}, {"flip_y", 1.0}},
        [](X x) { return array_result(flip(x[0], false, true)); }}},
      {"resample",
       {{{"factor_x", 0.5}, {"factor_y", 1.5}, {"interpolation", std::string("nearest")}},
        [](X x) { return array_result(resample(x[0], 0.5, 1.5, 1, Interpolation::nearest)); }}},
      {"transpose", {{}, [](X x) { return array_result(transpose(x[0])); }}},
      {"maximum_z_projection", {{}, [](X x) { return array_result(maximum_z_projection(x[0])); }}},
      {"mean_z_projection", {{}, [](X x) { return array_result(mean_z_projection(x[0])); }}},
      {"minimum_z_projection", {{}, [](X x) { return array_result(minimum_z_projection(x[0])); }}},
      {"std_z_projection", {{}, [](X x) { return array_result(std_z_projection(x[0])); }}},
      {"sum_z_projection", {{}, [](X x) { return array_result(sum_z_projection(x[0])); }}},
      {"histogram",
       {{{"n_bins", 7.0}, {"minimum", -10.0}, {"maximum", 30.0}},
        [](X x) {
          const Histogram h = histogram(x[0], 7, -10, 30);
          Result r;
          r.table = Table({"bin_start", "bin_end", "count"});
          for (std::size_t i = 0; i < h.counts.size(); ++i)
            r.table.push_back({h.edges[i], h.edges[i + 1], double(h.counts[i])});
          return r;
        }}},
      {"maximum_of_all_pixels",
       {{}, [](X x) { return value_result("maximum", maximum_of_all_pixels(x[0]).as_double()); }}},
      {"mean_of_all_pixels",
       {{}, [](X x) { return value_result("mean", mean_of_all_pixels(x[0])); }}},
      {"minimum_of_all_pixels",
       {{}, [](X x) { return value_result("minimum", minimum_of_all_pixels(x[0]).as_double()); }}},
      {"std_of_all_pixels", {{}, [](X x) { return value_result("std", std_of_all_pixels(x[0])); }}},
      {"sum_of_all_pixels",
       {{}, [](X x) { return value_result("sum", sum_of_all_pixels(x[0]).as_double()); }}},
  };
}

// An input of this kind, stored padded (rows longer than the image) so that the typed path's
// layout handling runs too: float32 images of moderate values, uint8 0/1 masks, uint32 labels.
Array typed_input(InputKind kind, const Shape& s, const Device& dev) {
  std::vector<float> v = test::random_values<float>(s.elements());
  std::vector<std::uint32_t> ids(s.elements());
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = std::fmod(v[i], 50.0f);
    ids[i] = static_cast<std::uint32_t>(i / 7 % 4);
  }
  Array a = kind == InputKind::image    ? Array::push(v, s, dev)
            : kind == InputKind::labels ? Array::push(ids, s, dev)
                                        : threshold(Array::push(v, s, dev), 0);
  std::vector<std::size_t> grown(s.dims().begin(), s.dims().end());
  grown.back() += 3;
  Array p = Array::padded(s, Shape(std::span<const std::size_t>(grown)), a.dtype(), dev);
  p.copy_from(a);
  return p;
}

bool same_result(const Result& a, const Result& b) {
  if (a.is_table() != b.is_table()) return false;
  if (!a.is_table()) return test::same_bits(a.array, b.array);
  if (a.table.columns() != b.table.columns() || a.table.size() != b.table.size()) return false;
  for (std::size_t i = 0; i < a.table.size(); ++i) {
    for (std::size_t j = 0; j < a.table.width(); ++j) {
      const double x = a.table(i, j), y = b.table(i, j);
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
  }
  return true;
}

// The message of the InvalidArgument (or UnsupportedDType) f raises, or "" if it raises none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UnsupportedDType& e) {
    return std::string("UnsupportedDType: ") + e.what();
  } catch (const InvalidArgument& e) {
    return std::string("InvalidArgument: ") + e.what();
  }
  return {};
}

// The catalog's parameters with every radius at 14 and every sigma at 5 (within their
// ranges): the passes of large windows (separable.kernel's one-row-a-work-group x pass among
// them). Empty for a filter with neither.
Params large_windows(const FilterInfo& f) {
  Params p;
  for (const ParamSpec& spec : f.params) {
    const bool radius = spec.name.rfind("radius", 0) == 0, sigma = spec.name.rfind("sigma", 0) == 0;
    if (radius || sigma) p[spec.name] = std::clamp(radius ? 14.0 : 5.0, spec.min, spec.max);
  }
  return p;
}

// What run() gives, or the message of what it throws.
std::variant<Result, std::string> outcome(const std::string& name, const std::vector<Array>& in,
                                          const Params& params) {
  try {
    return run(name, std::span<const Array>(in), params);
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

}  // namespace

class TestCatalog : public QObject {
  Q_OBJECT
 private slots:
  void well_formed() {
    const auto& list = filters();
    QVERIFY(!list.empty());
    std::set<std::string> names;
    for (const auto& f : list) {
      const QByteArray n = QByteArray::fromStdString(f.name);
      QVERIFY2(names.insert(f.name).second, n + " is listed twice");
      QVERIFY2(
          kSuites.count(f.category),
          n + " has category '" + QByteArray(name(f.category).data()) + "' with no test suite");
      QVERIFY2(!f.doc.empty() && !f.output_dtype.empty(), n);
      QVERIFY2(!f.inputs.empty() && !f.dims.empty() && !f.dtypes.empty(), n);
      for (int d : f.dims) QVERIFY2(d >= 1 && d <= 3, n);
      for (const auto& p : f.params) {
        const QByteArray pn = n + "." + QByteArray::fromStdString(p.name);
        QVERIFY2(!p.doc.empty(), pn + " has no doc");
        QVERIFY2(f.param(p.name) == &p, pn);
        if (p.type == ParamType::choice) {
          QVERIFY2(
              std::find(p.choices.begin(), p.choices.end(), p.default_choice) != p.choices.end(),
              pn);
        } else {
          QVERIFY2(p.min <= p.default_value && p.default_value <= p.max,
                   pn + " default outside its range");
        }
      }
      QVERIFY(&filter(f.name) != nullptr);
    }
  }

  void categories() {
    std::set<std::string> names;
    for (Category c : kAllCategories) {
      QVERIFY(!name(c).empty());
      QVERIFY2(names.insert(std::string(name(c))).second, name(c).data());
      QVERIFY2(kSuites.count(c), name(c).data());
    }
    // The catalog is ordered by category (in kAllCategories' order), then by name.
    const auto& list = filters();
    for (std::size_t i = 1; i < list.size(); ++i) {
      QVERIFY2(std::tie(list[i - 1].category, list[i - 1].name) <
                   std::tie(list[i].category, list[i].name),
               list[i].name.c_str());
    }
  }

  // Every typed function gives what gpix::run gives for its entry, on a padded input (so
  // the layout step runs on both paths), and every entry has its typed function here.
  void typed_functions_match_run() {
    const Device dev = test::test_devices().front();
    const auto calls = typed_calls();
    for (const FilterInfo& f : filters()) {
      const QByteArray n = QByteArray::fromStdString(f.name);
      const auto it = calls.find(f.name);
      QVERIFY2(it != calls.end(), n + " has no typed call in test_catalog's typed_calls()");
      const bool two_d = std::find(f.dims.begin(), f.dims.end(), 2) != f.dims.end();
      const Shape s = two_d ? Shape{13, 17} : Shape{4, 5, 7};
      std::vector<Array> in;
      for (const InputSpec& i : f.inputs) in.push_back(typed_input(i.kind, s, dev));
      const Result by_name = run(f.name, std::span<const Array>(in), it->second.params);
      const Result typed = it->second.call(in);
      QVERIFY2(same_result(by_name, typed), n + ": the typed function differs from gpix::run");
    }
  }

  // result_type() says before the work what run() gives: every filter, every dtype it takes,
  // 2D and 3D, its defaults and (convert) every output dtype; tables give none.
  void result_types() {
    const Device dev = test::test_devices().front();
    int checked = 0;
    for (const FilterInfo& f : filters()) {
      std::vector<Params> variants = {{}};
      if (f.name == "convert") {
        for (DType t : kAllDTypes) variants.push_back({{"dtype", std::string(name(t))}});
      }
      for (int dims : f.dims) {
        const Shape s = dims == 1 ? Shape{13} : dims == 2 ? Shape{9, 11} : Shape{5, 6, 7};
        for (DType t : f.dtypes) {
          if (!dev.supports_fp64() && size_of(t) == 8) continue;
          std::vector<Array> in;
          for (const InputSpec& i : f.inputs) {
            const Array a = typed_input(i.kind, s, dev);
            in.push_back(in.empty() ? run("convert", a, {{"dtype", std::string(name(t))}}).array
                                    : a);
          }
          for (const Params& p : variants) {
            const QByteArray where = QByteArray::fromStdString(
                f.name + " " + std::string(name(t)) + " " + s.str() +
                (p.empty() ? "" : " to " + std::get<std::string>(p.begin()->second)));
            Result r;
            try {
              r = run(f.name, std::span<const Array>(in), p);
            } catch (const InvalidArgument&) {
              continue;  // combinations the filter refuses (e.g. Otsu on 64-bit integers)
            } catch (const UnsupportedFeature&) {
              continue;  // float64 on a device without it
            } catch (const UnsupportedDType&) {
              continue;  // labels given as floats
            } catch (const std::exception& e) {
              QFAIL((where + ": " + e.what()).constData());
            }
            const std::optional<ResultType> said = result_type(f.name, p, t, dims);
            if (r.is_table()) {
              QVERIFY2(!said, where + ": a table, but result_type says an image");
              continue;
            }
            QVERIFY2(said, where + ": result_type knows no rule '" +
                               QByteArray::fromStdString(f.output_dtype) + "'");
            QVERIFY2(said->dtype == r.array.dtype() && said->ndim == int(r.array.ndim()),
                     where + ": result_type says " +
                         QByteArray::fromStdString(std::string(name(said->dtype))) + " " +
                         QByteArray::number(said->ndim) + "D, run gave " +
                         QByteArray::fromStdString(std::string(name(r.array.dtype()))) + " " +
                         QByteArray::number(int(r.array.ndim())) + "D");
            ++checked;
          }
        }
      }
    }
    QVERIFY(checked > 200);
    // An input run() refuses (a 2D image to a z projection): no result type, so that the
    // refusal is run()'s ("works on 3D images"), not about the output.
    QVERIFY(!result_type("maximum_z_projection", {}, DType::u16, 2));
    QVERIFY(result_type("maximum_z_projection", {}, DType::u16, 3).has_value());
  }

  // Typed functions pass the catalog's checks: the same error, word for word, as gpix::run.
  void typed_functions_check_as_run() {
    const Device dev = test::test_devices().front();
    const Array a = Array::push(std::vector<float>(12, 1.0f), Shape{3, 4}, dev);
    const Array mask = threshold(a, 0);
    struct Case {
      std::function<void()> typed, by_name;
    };
    const Case cases[] = {
        {[&] { gaussian_blur(a, 1000, 1); },
         [&] {
           run("gaussian_blur", a, {{"sigma_x", 1000.0}, {"sigma_y", 1.0}});
         }},
        {[&] { gaussian_blur(a, std::nan(""), 1); },
         [&] {
           run("gaussian_blur", a, {{"sigma_x", std::nan("")}, {"sigma_y", 1.0}});
         }},
        {[&] { mean_box(a, -1, 1); },
         [&] {
           run("mean_box", a, {{"radius_x", -1.0}, {"radius_y", 1.0}, {"radius_z", 0.0}});
         }},
        {[&] { binary_erosion(mask, 1, "diamond"); },
         [&] {
           run("binary_erosion", mask, {{"connectivity", std::string("diamond")}});
         }},
        {[&] { crop(a, std::numeric_limits<std::size_t>::max(), 0, 0, 1, 1); },
         [&] {
           run("crop", a,
               {{"origin_x", double(std::numeric_limits<std::size_t>::max())},
                {"size_x", 1.0},
                {"size_y", 1.0}});
         }},
        {[&] { histogram(a, 0); },
         [&] {
           run("histogram", a, {{"n_bins", 0.0}});
         }},
        {[&] { relabel_sequential(a); }, [&] { run("relabel_sequential", a); }},
        {[&] { gradient_z(a); }, [&] { run("gradient_z", a); }},
        {[&] { maximum_z_projection(a); }, [&] { run("maximum_z_projection", a); }},
        {[&] { add_images(a, Array()); },
         [&] {
           const Array in[] = {a, Array()};
           run("add_images", in);
         }},
        {[&] { mean_of_all_pixels(Array()); }, [&] { run("mean_of_all_pixels", Array()); }},
        {[&] { convert(a, static_cast<DType>(99)); },
         [&] {
           run("convert", a, {{"dtype", std::string("")}});
         }},
    };
    for (const Case& c : cases) {
      const std::string typed = error_of(c.typed), by_name = error_of(c.by_name);
      QVERIFY2(!typed.empty(), by_name.c_str());
      QCOMPARE(typed, by_name);
    }
  }

  // Every filter on images whose grid has more work-groups on y or on z than the device
  // launches there (config().grid_groups_limit set to 4 stands in for CUDA's 65535, so that
  // small images reach the limit on any device): the launches go with that axis swapped with x
  // (filters/launch.cpp, dialect.h's GPIX_GRID_SWAP), and every result has the bits of the
  // unswapped run. A launch over the limit that is not swapped throws (DeviceImpl's front).
  void swapped_grids() {
    const Device dev = test::test_devices().front();
    detail::DeviceImpl& impl = detail::Access::impl(dev);
    std::mutex m;
    std::set<std::string> swapped;  // programs built with GPIX_GRID_SWAP
    impl.set_compile_hook_for_testing(
        [&](const detail::ProgramSource& src, const detail::Defines& d) {
          for (const auto& [k, v] : d) {
            if (k == "GPIX_GRID_SWAP") {
              std::lock_guard lock(m);
              swapped.insert(src.name + " swap " + v);
            }
          }
        });
    struct Unhook {
      detail::DeviceImpl& impl;
      ~Unhook() { impl.set_compile_hook_for_testing({}); }
    } unhook{impl};
    // y past the limit (2D and 3D), z past it; x and the other axis within it for every
    // kernel's work-groups (a grid past it on two axes fits neither way: grid_past_both_limits).
    const Shape shapes2[] = {Shape{150, 37}};
    const Shape shapes3[] = {Shape{2, 45, 19}, Shape{45, 2, 19}};
    std::size_t runs = 0;
    for (const FilterInfo& f : filters()) {
      std::vector<Shape> shapes;
      for (int d : f.dims) {
        if (d == 2) shapes.insert(shapes.end(), std::begin(shapes2), std::end(shapes2));
        if (d == 3) shapes.insert(shapes.end(), std::begin(shapes3), std::end(shapes3));
      }
      std::vector<Params> sets = {Params{}};
      if (const Params large = large_windows(f); !large.empty()) sets.push_back(large);
      for (const Shape& s : shapes) {
        std::vector<Array> in;
        for (const InputSpec& i : f.inputs) in.push_back(typed_input(i.kind, s, dev));
        for (const Params& params : sets) {
          const QByteArray what = QByteArray::fromStdString(
              f.name + " on " + s.str() + (params.empty() ? "" : " with large windows"));
          const auto plain = outcome(f.name, in, params);
          detail::ScopedConfig scope;
          detail::config_for_testing().grid_groups_limit = 4;
          // From source, so that the hook sees every swapped program.
          detail::config_for_testing().no_disk_cache = true;
          const auto limited = outcome(f.name, in, params);
          QVERIFY2(plain.index() == limited.index(),
                   what + ": " +
                       QByteArray::fromStdString(
                           std::get_if<std::string>(&plain)     ? std::get<std::string>(plain)
                           : std::get_if<std::string>(&limited) ? std::get<std::string>(limited)
                                                                : ""));
          if (const auto* r = std::get_if<Result>(&plain)) {
            QVERIFY2(same_result(*r, std::get<Result>(limited)), what + ": other bits swapped");
          } else {
            QCOMPARE(std::get<std::string>(limited), std::get<std::string>(plain));
          }
          ++runs;
        }
      }
    }
    qInfo("%zu runs, %zu programs built with a swapped grid", runs, swapped.size());
    // The separable passes, the tile kernels and image_grid's kernels at least.
    QVERIFY2(swapped.size() >= 10, std::to_string(swapped.size()).c_str());
  }

  // A grid past the limit on both y and z fits neither way: a clear error, the input intact.
  void grid_past_both_limits() {
    const Device dev = test::test_devices().front();
    const Array a = typed_input(InputKind::image, Shape{45, 45, 19}, dev);
    const std::vector<float> before = a.pull_as<float>();
    detail::ScopedConfig scope;
    detail::config_for_testing().grid_groups_limit = 4;
    try {
      // separable.kernel's x pass: a work-group a row, 45 x 45 rows.
      (void)mean_box(a, 14, 1, 1);
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("work-groups does not fit") != std::string::npos &&
                   m.find("x 4 x 4") != std::string::npos &&
                   m.find("use a smaller image") != std::string::npos,
               e.what());
    }
    QVERIFY(a.pull_as<float>() == before);
  }

  // A device without float64 (GPIX_DISABLE_FP64 stands in for one): every filter on 32- and
  // 64-bit integers, whose compute type is float64, either runs or refuses with the filter's
  // own UnsupportedDType, never from a program that asks for float64 (DeviceImpl::kernel's
  // check, which stands for the build error such a device gives). The order filters need no
  // float: they run, on every shape and on large windows, with the bits they have with fp64;
  // so do the image arithmetic, absolute and the integer scalars, through the exact integer
  // path (negative values, zeros to divide by and saturation included).
  void without_fp64() {
    const Device dev = test::test_devices().front();
    const std::set<std::string> order = {"minimum_box", "maximum_box", "median_box", "top_hat_box",
                                         "bottom_hat_box"};
    const std::set<std::string> exact = {"add_images",    "subtract_images", "multiply_images",
                                         "divide_images", "minimum_images",  "maximum_images",
                                         "absolute",      "add_scalar",      "multiply_scalar"};
    // (No float64: such a device cannot hold it, Array refuses to allocate it.)
    const DType wide[] = {DType::u32, DType::i32, DType::u64, DType::i64};
    std::size_t runs = 0, refused = 0;
    for (const FilterInfo& f : filters()) {
      for (DType t : wide) {
        if (std::find(f.dtypes.begin(), f.dtypes.end(), t) == f.dtypes.end()) continue;
        for (int nd : f.dims) {
          const Shape s = nd == 1 ? Shape{70} : nd == 2 ? Shape{30, 37} : Shape{9, 20, 19};
          std::vector<Array> in;
          for (const InputSpec& i : f.inputs) {
            const std::vector<std::uint32_t> v = test::random_values<std::uint32_t>(s.elements());
            std::vector<std::uint32_t> small(v.size());
            for (std::size_t k = 0; k < v.size(); ++k) {
              small[k] = i.kind == InputKind::binary ? v[k] % 2 : v[k] % 1000;
            }
            if (exact.count(f.name)) {
              // Signed values around 0, and the type's extremes (saturation), as 64-bit values
              // converted with saturation into t.
              std::vector<std::int64_t> w(v.size());
              for (std::size_t k = 0; k < v.size(); ++k) {
                w[k] = k % 7 == 0    ? std::numeric_limits<std::int64_t>::max()
                       : k % 11 == 0 ? std::numeric_limits<std::int64_t>::min()
                                     : std::int64_t(v[k] % 2001) - 1000;
              }
              in.push_back(convert(Array::push(w, s, dev), t));
              continue;
            }
            in.push_back(convert(Array::push(small, s, dev), t));
          }
          std::vector<Params> sets = {Params{}};
          if (order.count(f.name)) sets.push_back(large_windows(f));
          for (const Params& params : sets) {
            const QByteArray what =
                QByteArray::fromStdString(f.name + " " + std::string(name(t)) + " " + s.str());
            const bool same = order.count(f.name) || exact.count(f.name);
            const auto with =
                same ? outcome(f.name, in, params) : std::variant<Result, std::string>{};
            detail::ScopedConfig scope;
            detail::config_for_testing().disable_fp64 = true;
            // Nothing built with float64 earlier may serve from memory.
            detail::Access::impl(dev).clear_memory_cache();
            const auto without = outcome(f.name, in, params);
            ++runs;
            if (const auto* e = std::get_if<std::string>(&without)) {
              ++refused;
              QVERIFY2(!same, what + ": " + QByteArray::fromStdString(*e));
              QVERIFY2(e->find("float64") != std::string::npos && e->rfind("kernel ", 0) != 0,
                       what + ": " + QByteArray::fromStdString(*e));
            } else if (same) {
              QVERIFY2(std::holds_alternative<Result>(with), what);
              QVERIFY2(same_result(std::get<Result>(with), std::get<Result>(without)), what);
            }
          }
        }
      }
    }
    qInfo("%zu runs, %zu refused", runs, refused);
  }

  void parse_params() {
    const FilterInfo& g = filter("gaussian_blur");
    QCOMPARE(std::get<double>(parse_param(*g.param("sigma_x"), " 2.5 ")), 2.5);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_param(*g.param("sigma_x"), "2.5px"));
    ParamSpec b;
    b.name = "flag";
    b.type = ParamType::boolean;
    QCOMPARE(std::get<double>(parse_param(b, "true")), 1.0);
    QCOMPARE(std::get<double>(parse_param(b, "OFF")), 0.0);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_param(b, "maybe"));
  }

  void validation_before_work() {
    const Device dev = test::test_devices().front();
    const Array a = Array::push(std::vector<float>{1, 2, 3, 4}, Shape{2, 2}, dev);
    try {
      run("gaussian_blur", a, {{"sigma_x", 1000.0}});
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("sigma_x") != std::string::npos && m.find("0 to 100 px") != std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("gaussian_blur", a, {{"sigma_x", std::nan("")}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("gaussian_blur", Array(), {}));
    // Cancellation is honoured before any work and reported as Cancelled.
    std::atomic<bool> cancel{true};
    RunOptions o;
    o.cancel = &cancel;
    QVERIFY_THROWS_EXCEPTION(Cancelled, run("gaussian_blur", a, {}, o));
    // Progress reaches 1 on success.
    double last = -1;
    o.cancel = nullptr;
    o.progress = [&](double p) { last = p; };
    run("gaussian_blur", a, {}, o);
    QCOMPARE(last, 1.0);
  }
};

QTEST_APPLESS_MAIN(TestCatalog)
#include "test_catalog.moc"
