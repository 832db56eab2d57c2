#pragma once
// The catalog's internal side: each filter module registers descriptors with the function
// that runs them. The public catalog (gpix/catalog.h) and the typed functions
// (gpix/filters.h) both go through these entries, so each filter has one implementation.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gpix/catalog.h"

namespace gpix::detail {

// Parameters after validation: every spec'd parameter present, in range, typed.
class ResolvedParams {
 public:
  ResolvedParams(const FilterInfo& info, Params values)
      : info_(&info), values_(std::move(values)) {}
  double real(std::string_view name) const;
  long long integer(std::string_view name) const;
  bool boolean(std::string_view name) const;
  const std::string& choice(std::string_view name) const;
  const FilterInfo& info() const { return *info_; }

 private:
  const ParamValue& get(std::string_view name) const;
  const FilterInfo* info_;
  Params values_;
};

using FilterFn = std::function<Result(std::span<const Array> inputs, const ResolvedParams& p,
                                      const RunOptions& o)>;

struct FilterEntry {
  FilterInfo info;
  FilterFn fn;
};

class Catalog {
 public:
  void add(FilterInfo info, FilterFn fn);
  const std::vector<FilterEntry>& entries() const { return entries_; }

 private:
  std::vector<FilterEntry> entries_;
};

// The one catalog, built on first use from every module's register_* function.
const Catalog& catalog();
const FilterEntry& entry(std::string_view name);

// Runs an entry with params validated and defaults filled in (what gpix::run does).
Result run_entry(const FilterEntry& e, std::span<const Array> inputs, const Params& params,
                 const RunOptions& options);

// Descriptor helpers for concise registrations.
ParamSpec real_param(std::string name, double def, double min, double max, std::string unit,
                     std::string doc);
ParamSpec int_param(std::string name, long long def, long long min, long long max, std::string unit,
                    std::string doc);
ParamSpec bool_param(std::string name, bool def, std::string doc);
ParamSpec choice_param(std::string name, std::vector<std::string> choices, std::string def,
                       std::string doc);
InputSpec image_input(std::string name = "input", std::string doc = "image");
std::vector<DType> all_dtypes();
std::vector<DType> float_dtypes();
std::vector<DType> integer_dtypes();

// Throws Cancelled when options.cancel is set; reports progress in 0..1.
void checkpoint(const RunOptions& options, double progress, std::string_view what);

// Module registrations (one per file in core/src/filters/).
void register_arithmetic(Catalog& c);
void register_neighbourhood(Catalog& c);
void register_segmentation(Catalog& c);
void register_geometry(Catalog& c);
void register_reductions(Catalog& c);  // Projections and Reductions

}  // namespace gpix::detail

namespace gpix::detail {
// The Result of a filter whose output is an array (every module's `return one(out)`).
inline Result one(Array a) {
  Result r;
  r.array = std::move(a);
  return r;
}

// For the typed functions: runs a catalog entry and returns its array.
inline Array run_array(std::string_view name, std::initializer_list<Array> inputs,
                       Params params = {}) {
  std::vector<Array> in(inputs);
  return run_entry(entry(name), in, params, {}).array;
}
}  // namespace gpix::detail
