#include "filters/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <variant>

#include "gpix/error.h"
#include "util.h"

namespace gpix {
namespace detail {
namespace {

std::string describe_range(const ParamSpec& s) {
  auto num = [&](double v) {
    return s.type == ParamType::integer ? std::to_string(static_cast<long long>(v))
                                        : Scalar(v).str();
  };
  return num(s.min) + " to " + num(s.max) + (s.unit.empty() ? "" : " " + s.unit);
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// Edit distance for "did you mean" suggestions.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

void Catalog::add(std::initializer_list<const Entry*> entries) {
  for (const Entry* e : entries) {
    for (const Entry* x : entries_) {
      if (x->info().name == e->info().name) {
        throw Error("filter '" + e->info().name + "' is registered twice");
      }
    }
    entries_.push_back(e);
  }
}

const Catalog& catalog() {
  static const Catalog c = [] {
    Catalog cat;
    register_arithmetic(cat);
    register_neighbourhood(cat);
    register_segmentation(cat);
    register_geometry(cat);
    register_reductions(cat);
    auto entries = cat.entries();
    std::stable_sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
      return std::tie(a->info().category, a->info().name) <
             std::tie(b->info().category, b->info().name);
    });
    Catalog sorted;
    for (const Entry* e : entries) sorted.add({e});
    return sorted;
  }();
  return c;
}

const Entry& entry(std::string_view name) {
  const auto& entries = catalog().entries();
  for (const Entry* e : entries) {
    if (e->info().name == name) return *e;
  }
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const Entry* e : entries) near.emplace_back(distance(name, e->info().name), e->info().name);
  std::sort(near.begin(), near.end());
  std::string hint;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, near.size()); ++i) {
    hint += (i ? ", " : "") + near[i].second;
  }
  throw InvalidArgument("there is no filter named '" + std::string(name) + "'; closest: " + hint +
                        " (`gpix filters` lists all " + std::to_string(entries.size()) + ")");
}

void check_inputs(const FilterInfo& info, std::span<const Array> inputs) {
  // The messages are built only when an input is refused (as check_value's): built on every
  // call they were three host allocations of each launch (bench_launch).
  const auto who = [&] { return "filter '" + info.name + "'"; };
  if (inputs.size() != info.inputs.size()) {
    std::vector<std::string> names;
    for (const auto& i : info.inputs)
      names.push_back(i.name + " (" + std::string(gpix::name(i.kind)) + ")");
    throw InvalidArgument(who() + " takes " + std::to_string(info.inputs.size()) + " input(s): " +
                          join(names) + "; it was given " + std::to_string(inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Array& a = inputs[i];
    const auto in = [&] { return who() + " input '" + info.inputs[i].name + "'"; };
    if (!a.valid()) throw InvalidArgument(in() + " is a null array");
    if (std::find(info.dtypes.begin(), info.dtypes.end(), a.dtype()) == info.dtypes.end()) {
      std::vector<std::string> names;
      for (DType t : info.dtypes) names.emplace_back(gpix::name(t));
      throw UnsupportedDType(in() + " is " + std::string(gpix::name(a.dtype())) + "; it accepts " +
                             join(names) + " (convert first with 'convert')");
    }
    if (std::find(info.dims.begin(), info.dims.end(), a.ndim()) == info.dims.end()) {
      std::vector<std::string> names;
      for (int d : info.dims) names.push_back(std::to_string(d) + "D");
      throw InvalidArgument(in() + " is " + std::to_string(a.ndim()) + "D (" + a.shape().str() +
                            "); it works on " + join(names, " and ") + " images");
    }
    if (i > 0 && !(a.device() == inputs[0].device())) {
      throw InvalidArgument(in() + " is on '" + a.device().label() +
                            "' but the first input is on '" + inputs[0].device().label() +
                            "'; copy it over first");
    }
  }
}

void check_names(const FilterInfo& info, const Params& given) {
  for (const auto& [k, v] : given) {
    if (!info.param(k)) {
      std::vector<std::string> names;
      for (const auto& p : info.params) names.push_back(p.name);
      throw InvalidArgument(
          "filter '" + info.name + "' has no parameter '" + k +
          "'; its parameters are: " + (names.empty() ? std::string("none") : join(names)));
    }
  }
}

ParamValue given_or_default(const ParamSpec& spec, const Params& given) {
  if (auto it = given.find(spec.name); it != given.end()) return it->second;
  return spec.type == ParamType::choice ? ParamValue(spec.default_choice)
                                        : ParamValue(spec.default_value);
}

void check_value(const FilterInfo& info, const ParamSpec& spec, const ParamValue& v) {
  // The message's subject only when a value is refused: built for every parameter of every
  // call it was a dozen host allocations of a Gaussian's launch (bench_launch).
  const auto p = [&] { return "filter '" + info.name + "' parameter '" + spec.name + "'"; };
  if (spec.type == ParamType::choice) {
    const std::string* s = std::get_if<std::string>(&v);
    if (!s || std::find(spec.choices.begin(), spec.choices.end(), *s) == spec.choices.end()) {
      throw InvalidArgument(p() + " must be one of: " + join(spec.choices));
    }
    return;
  }
  const double* d = std::get_if<double>(&v);
  if (!d) throw InvalidArgument(p() + " must be a number");
  if (spec.type == ParamType::boolean) {
    if (*d != 0 && *d != 1) throw InvalidArgument(p() + " must be true or false (1 or 0)");
    return;
  }
  if (!std::isfinite(*d) || *d < spec.min || *d > spec.max) {
    throw InvalidArgument(p() + " is " + Scalar(*d).str() + "; it must be from " +
                          describe_range(spec));
  }
  if (spec.type == ParamType::integer && *d != std::floor(*d)) {
    throw InvalidArgument(p() + " is " + Scalar(*d).str() + "; it must be a whole number from " +
                          describe_range(spec));
  }
}

bool needs_copy(const FilterInfo& info, std::span<const Array> inputs) {
  return info.layout == InputLayout::contiguous &&
         std::any_of(inputs.begin(), inputs.end(),
                     [](const Array& a) { return !a.is_contiguous(); });
}

std::vector<Array> readable(const FilterInfo& info, std::span<const Array> inputs) {
  std::vector<Array> in;
  in.reserve(inputs.size());
  for (const Array& a : inputs) {
    in.push_back(info.layout == InputLayout::contiguous && !a.is_contiguous() ? a.to_buffer() : a);
  }
  return in;
}

ParamSpec spec_of(RealSpec s) {
  ParamSpec spec;
  spec.name = std::move(s.name);
  spec.type = ParamType::real;
  spec.default_value = s.def;
  spec.min = s.min;
  spec.max = s.max;
  spec.unit = std::move(s.unit);
  spec.doc = std::move(s.doc);
  return spec;
}

ParamSpec spec_of(IntSpec s) {
  ParamSpec spec = spec_of(RealSpec{.name = std::move(s.name),
                                    .def = static_cast<double>(s.def),
                                    .min = static_cast<double>(s.min),
                                    .max = static_cast<double>(s.max),
                                    .unit = std::move(s.unit),
                                    .doc = std::move(s.doc)});
  spec.type = ParamType::integer;
  return spec;
}

ParamSpec spec_of(BoolSpec s) {
  ParamSpec spec = spec_of(RealSpec{.name = std::move(s.name),
                                    .def = s.def ? 1.0 : 0.0,
                                    .min = 0,
                                    .max = 1,
                                    .doc = std::move(s.doc)});
  spec.type = ParamType::boolean;
  return spec;
}

ParamSpec spec_of(ChoiceSpec s) {
  ParamSpec spec;
  spec.name = std::move(s.name);
  spec.type = ParamType::choice;
  spec.choices = std::move(s.choices);
  spec.default_choice = std::move(s.def);
  spec.doc = std::move(s.doc);
  return spec;
}

InputSpec image_input(std::string name, std::string doc) {
  return {std::move(name), InputKind::image, std::move(doc)};
}

std::vector<DType> all_dtypes() {
  return {kAllDTypes.begin(), kAllDTypes.end()};
}
std::vector<DType> integer_dtypes() {
  return {DType::u8,  DType::i8,  DType::u16, DType::i16,
          DType::u32, DType::i32, DType::u64, DType::i64};
}

void checkpoint(const RunOptions& options, double progress, std::string_view what) {
  if (options.cancel && options.cancel->load()) {
    throw Cancelled(std::string(what) + " was cancelled; the input is unchanged");
  }
  if (options.progress) options.progress(progress);
}

}  // namespace detail

std::string_view name(ParamType t) {
  switch (t) {
    case ParamType::integer:
      return "integer";
    case ParamType::real:
      return "real";
    case ParamType::boolean:
      return "boolean";
    case ParamType::choice:
      break;
  }
  return "choice";
}

std::string_view name(InputKind k) {
  switch (k) {
    case InputKind::image:
      return "image";
    case InputKind::labels:
      return "labels";
    case InputKind::binary:
      break;
  }
  return "binary";
}

std::string_view name(OutputKind k) {
  switch (k) {
    case OutputKind::image:
      return "image";
    case OutputKind::labels:
      return "labels";
    case OutputKind::binary:
      return "binary";
    case OutputKind::table:
      break;
  }
  return "table";
}

std::string_view name(Category c) {
  switch (c) {
    case Category::arithmetic:
      return "Arithmetic";
    case Category::types:
      return "Types";
    case Category::neighbourhood:
      return "Neighbourhood";
    case Category::segmentation:
      return "Segmentation";
    case Category::geometry:
      return "Geometry";
    case Category::projections:
      return "Projections";
    case Category::reductions:
      break;
  }
  return "Reductions";
}

std::string_view name(InputLayout l) {
  return l == InputLayout::any ? "any" : "contiguous";
}

const ParamSpec* FilterInfo::param(std::string_view n) const {
  for (const auto& p : params) {
    if (p.name == n) return &p;
  }
  return nullptr;
}

const std::vector<FilterInfo>& filters() {
  static const std::vector<FilterInfo> list = [] {
    std::vector<FilterInfo> v;
    for (const detail::Entry* e : detail::catalog().entries()) v.push_back(e->info());
    return v;
  }();
  return list;
}

const FilterInfo& filter(std::string_view name) {
  return detail::entry(name).info();
}

ParamValue parse_param(const ParamSpec& spec, std::string_view text) {
  const std::string t = detail::trim(text);
  if (spec.type == ParamType::choice) return t;
  if (spec.type == ParamType::boolean) {
    const std::string l = detail::lower(t);
    if (l == "true" || l == "1" || l == "yes" || l == "on") return 1.0;
    if (l == "false" || l == "0" || l == "no" || l == "off") return 0.0;
    throw InvalidArgument("parameter '" + spec.name + "' takes true or false, not '" + t + "'");
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size()) {
    throw InvalidArgument("parameter '" + spec.name + "' takes a number, not '" + t + "'");
  }
  return v;
}

Result run(std::string_view name, std::span<const Array> inputs, const Params& params,
           const RunOptions& options) {
  return detail::entry(name).run(inputs, params, options);
}

void check_params(std::string_view name, const Params& params) {
  const FilterInfo& f = filter(name);
  detail::check_names(f, params);
  for (const auto& [k, v] : params) detail::check_value(f, *f.param(k), v);
}

std::optional<ResultType> result_type(std::string_view name, const Params& params, DType in,
                                      int ndim) {
  const FilterInfo& f = filter(name);
  // A table, or an input run() refuses (its own message says why, not the output's).
  if (f.output == OutputKind::table ||
      std::find(f.dims.begin(), f.dims.end(), ndim) == f.dims.end())
    return std::nullopt;
  // The z projections are the catalog's only filters that drop an axis.
  const int out_ndim = f.category == Category::projections ? ndim - 1 : ndim;
  const std::string& rule = f.output_dtype;
  const auto same = [&](DType t) { return ResultType{t, out_ndim}; };
  if (rule == "same as input" || rule == "same as the first input") return same(in);
  if (rule == "uint8 (0/1)") return same(DType::u8);
  if (rule == "uint32") return same(DType::u32);
  if (rule == "float32 (float64 stays float64)") return same(in == DType::f64 ? in : DType::f32);
  if (rule == "float32 for 8/16-bit integers and float32, float64 for wider dtypes")
    return same(size_of(in) <= 2 || in == DType::f32 ? DType::f32 : DType::f64);
  if (rule == "the dtype parameter") {
    const auto it = params.find("dtype");
    if (it == params.end()) {
      const ParamSpec* spec = f.param("dtype");
      const std::optional<DType> t = spec ? parse_dtype(spec->default_choice) : std::nullopt;
      return t ? std::optional<ResultType>(same(*t)) : std::nullopt;
    }
    const std::string* text = std::get_if<std::string>(&it->second);
    const std::optional<DType> t = text ? parse_dtype(*text) : std::nullopt;
    if (!t) return std::nullopt;  // run() refuses it, saying what it takes
    return same(*t);
  }
  // A rule this function does not know: test_filters_catalog's result_types fails on it.
  return std::nullopt;
}

}  // namespace gpix
