#include "filters/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>

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

void Catalog::add(FilterInfo info, FilterFn fn) {
  for (const auto& e : entries_) {
    if (e.info.name == info.name) throw Error("filter '" + info.name + "' is registered twice");
  }
  entries_.push_back({std::move(info), std::move(fn)});
}

const Catalog& catalog() {
  static const Catalog c = [] {
    Catalog cat;
    register_arithmetic(cat);
    register_neighbourhood(cat);
    register_segmentation(cat);
    register_geometry(cat);
    register_reductions(cat);
    static const std::vector<std::string> order = {"Arithmetic",   "Types",    "Neighbourhood",
                                                   "Segmentation", "Geometry", "Projections",
                                                   "Reductions"};
    auto rank = [&](const std::string& cat_name) {
      return std::find(order.begin(), order.end(), cat_name) - order.begin();
    };
    auto entries = cat.entries();
    std::stable_sort(entries.begin(), entries.end(),
                     [&](const FilterEntry& a, const FilterEntry& b) {
                       return std::tuple(rank(a.info.category), a.info.name) <
                              std::tuple(rank(b.info.category), b.info.name);
                     });
    Catalog sorted;
    for (auto& e : entries) sorted.add(std::move(e.info), std::move(e.fn));
    return sorted;
  }();
  return c;
}

const FilterEntry& entry(std::string_view name) {
  const auto& entries = catalog().entries();
  for (const auto& e : entries) {
    if (e.info.name == name) return e;
  }
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const auto& e : entries) near.emplace_back(distance(name, e.info.name), e.info.name);
  std::sort(near.begin(), near.end());
  std::string hint;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, near.size()); ++i) {
    hint += (i ? ", " : "") + near[i].second;
  }
  throw InvalidArgument("there is no filter named '" + std::string(name) + "'; closest: " + hint +
                        " (`gpix filters` lists all " + std::to_string(entries.size()) + ")");
}

const ParamValue& ResolvedParams::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    throw Error("internal: filter '" + info_->name + "' read undeclared parameter '" +
                std::string(name) + "'");
  }
  return it->second;
}
double ResolvedParams::real(std::string_view name) const {
  return std::get<double>(get(name));
}
long long ResolvedParams::integer(std::string_view name) const {
  return static_cast<long long>(std::get<double>(get(name)));
}
bool ResolvedParams::boolean(std::string_view name) const {
  return std::get<double>(get(name)) != 0;
}
const std::string& ResolvedParams::choice(std::string_view name) const {
  return std::get<std::string>(get(name));
}

Result run_entry(const FilterEntry& e, std::span<const Array> inputs, const Params& params,
                 const RunOptions& options) {
  const FilterInfo& info = e.info;
  const std::string who = "filter '" + info.name + "'";
  if (inputs.size() != info.inputs.size()) {
    std::vector<std::string> names;
    for (const auto& i : info.inputs)
      names.push_back(i.name + " (" + std::string(gpix::name(i.kind)) + ")");
    throw InvalidArgument(who + " takes " + std::to_string(info.inputs.size()) + " input(s): " +
                          join(names) + "; it was given " + std::to_string(inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Array& a = inputs[i];
    const std::string in = who + " input '" + info.inputs[i].name + "'";
    if (!a.valid()) throw InvalidArgument(in + " is a null array");
    if (std::find(info.dtypes.begin(), info.dtypes.end(), a.dtype()) == info.dtypes.end()) {
      std::vector<std::string> names;
      for (DType t : info.dtypes) names.emplace_back(gpix::name(t));
      throw UnsupportedDType(in + " is " + std::string(gpix::name(a.dtype())) + "; it accepts " +
                             join(names) + " (convert first with 'convert')");
    }
    if (std::find(info.dims.begin(), info.dims.end(), a.ndim()) == info.dims.end()) {
      std::vector<std::string> names;
      for (int d : info.dims) names.push_back(std::to_string(d) + "D");
      throw InvalidArgument(in + " is " + std::to_string(a.ndim()) + "D (" + a.shape().str() +
                            "); it works on " + join(names, " and ") + " images");
    }
    if (i > 0 && !(a.device() == inputs[0].device())) {
      throw InvalidArgument(in + " is on '" + a.device().label() + "' but the first input is on '" +
                            inputs[0].device().label() + "'; copy it over first");
    }
  }
  Params resolved;
  for (const auto& [k, v] : params) {
    if (!info.param(k)) {
      std::vector<std::string> names;
      for (const auto& p : info.params) names.push_back(p.name);
      throw InvalidArgument(who + " has no parameter '" + k + "'; its parameters are: " +
                            (names.empty() ? std::string("none") : join(names)));
    }
  }
  for (const auto& spec : info.params) {
    auto it = params.find(spec.name);
    ParamValue v;
    if (it == params.end()) {
      v = spec.type == ParamType::choice ? ParamValue(spec.default_choice)
                                         : ParamValue(spec.default_value);
    } else {
      v = it->second;
    }
    const std::string p = who + " parameter '" + spec.name + "'";
    if (spec.type == ParamType::choice) {
      const std::string* s = std::get_if<std::string>(&v);
      if (!s || std::find(spec.choices.begin(), spec.choices.end(), *s) == spec.choices.end()) {
        throw InvalidArgument(p + " must be one of: " + join(spec.choices));
      }
    } else {
      const double* d = std::get_if<double>(&v);
      if (!d) throw InvalidArgument(p + " must be a number");
      if (spec.type == ParamType::boolean) {
        if (*d != 0 && *d != 1) throw InvalidArgument(p + " must be true or false (1 or 0)");
      } else {
        if (!std::isfinite(*d) || *d < spec.min || *d > spec.max) {
          throw InvalidArgument(p + " is " + Scalar(*d).str() + "; it must be from " +
                                describe_range(spec));
        }
        if (spec.type == ParamType::integer && *d != std::floor(*d)) {
          throw InvalidArgument(p + " is " + Scalar(*d).str() +
                                "; it must be a whole number from " + describe_range(spec));
        }
      }
    }
    resolved.emplace(spec.name, std::move(v));
  }
  checkpoint(options, 0.0, info.name);
  // The one place where layouts are decided: kernels index flat runs, so an entry that does
  // not read pitches itself gets contiguous copies of padded arrays, region views and images.
  std::vector<Array> contiguous;
  if (info.layout == InputLayout::contiguous &&
      std::any_of(inputs.begin(), inputs.end(), [](const Array& a) { return !a.is_contiguous(); })) {
    for (const Array& a : inputs) contiguous.push_back(a.is_contiguous() ? a : a.to_buffer());
    inputs = contiguous;
  }
  Result r = e.fn(inputs, ResolvedParams(info, std::move(resolved)), options);
  if (options.progress) options.progress(1.0);
  return r;
}

ParamSpec real_param(std::string name, double def, double min, double max, std::string unit,
                     std::string doc) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = ParamType::real;
  s.default_value = def;
  s.min = min;
  s.max = max;
  s.unit = std::move(unit);
  s.doc = std::move(doc);
  return s;
}

ParamSpec int_param(std::string name, long long def, long long min, long long max, std::string unit,
                    std::string doc) {
  ParamSpec s = real_param(std::move(name), static_cast<double>(def), static_cast<double>(min),
                           static_cast<double>(max), std::move(unit), std::move(doc));
  s.type = ParamType::integer;
  return s;
}

ParamSpec bool_param(std::string name, bool def, std::string doc) {
  ParamSpec s = real_param(std::move(name), def ? 1 : 0, 0, 1, "", std::move(doc));
  s.type = ParamType::boolean;
  return s;
}

ParamSpec choice_param(std::string name, std::vector<std::string> choices, std::string def,
                       std::string doc) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = ParamType::choice;
  s.choices = std::move(choices);
  s.default_choice = std::move(def);
  s.doc = std::move(doc);
  return s;
}

InputSpec image_input(std::string name, std::string doc) {
  return {std::move(name), InputKind::image, std::move(doc)};
}

std::vector<DType> all_dtypes() {
  return {kAllDTypes.begin(), kAllDTypes.end()};
}
std::vector<DType> float_dtypes() {
  return {DType::f32, DType::f64};
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
    for (const auto& e : detail::catalog().entries()) v.push_back(e.info);
    return v;
  }();
  return list;
}

const FilterInfo& filter(std::string_view name) {
  return detail::entry(name).info;
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
  return detail::run_entry(detail::entry(name), inputs, params, options);
}

}  // namespace gpix
