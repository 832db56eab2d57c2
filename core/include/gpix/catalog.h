#pragma once
// The filter catalog: one descriptor per filter, read by the GUI (parameter forms), the CLI
// (`gpix run NAME --param value`), the docs table and the tests. gpix::run() runs any entry;
// each filter also has a typed C++ function (gpix/filters.h) with the same implementation.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpix/array.h"
#include "gpix/table.h"  // table results (reductions, histograms, label statistics)

namespace gpix {

enum class ParamType : std::uint8_t { integer, real, boolean, choice };
std::string_view name(ParamType t);

struct ParamSpec {
  std::string name;  // snake_case, also the CLI flag: --sigma_x
  ParamType type = ParamType::real;
  double default_value = 0;  // boolean: 0/1; choice: unused (default_choice)
  double min = 0;            // inclusive bounds for integer and real
  double max = 0;
  std::string unit;                  // "px", "" ...
  std::vector<std::string> choices;  // choice only
  std::string default_choice;        // choice only
  std::string doc;
};

enum class InputKind : std::uint8_t { image, labels, binary };
std::string_view name(InputKind k);

struct InputSpec {
  std::string name;  // "input", "mask", "labels", ...
  InputKind kind = InputKind::image;
  std::string doc;
};

enum class OutputKind : std::uint8_t { image, labels, binary, table };
std::string_view name(OutputKind k);

// Which input layouts (see Array: padded arrays, region views, image objects) a filter reads
// itself. `contiguous`: gpix::run hands it contiguous buffers, copying any other layout into
// one first (one device copy of that input, decided in run() for every filter alike); `any`:
// the filter honours every layout without a copy.
enum class InputLayout : std::uint8_t { contiguous, any };
std::string_view name(InputLayout l);  // "contiguous", "any"

// The catalog's categories; their order is the catalog's order (gpix::filters()).
enum class Category : std::uint8_t {
  arithmetic,
  types,
  neighbourhood,
  segmentation,
  geometry,
  projections,
  reductions
};
inline constexpr std::array<Category, 7> kAllCategories = {
    Category::arithmetic, Category::types,       Category::neighbourhood, Category::segmentation,
    Category::geometry,   Category::projections, Category::reductions};
// The heading users see: "Arithmetic", "Types", "Neighbourhood", "Segmentation", "Geometry",
// "Projections", "Reductions".
std::string_view name(Category c);

struct FilterInfo {
  std::string name;  // "gaussian_blur"
  Category category = Category::arithmetic;
  std::string doc;  // one line, including the semantics (borders, rounding, ...)
  std::vector<InputSpec> inputs;
  std::vector<ParamSpec> params;
  std::vector<int> dims;      // supported dimensionalities, e.g. {2, 3}
  std::vector<DType> dtypes;  // accepted input dtypes
  OutputKind output = OutputKind::image;
  std::string output_dtype;  // the rule in words: "same as input", "float32", ...
  InputLayout layout = InputLayout::contiguous;
  bool tiles = false;   // gpix::run_tiled runs it slab by slab (gpix/tiled.h)
  bool folds = false;   // ... combining per-slab partials (its output depends on the whole input)
  std::string untiled;  // when it does not: why (its output depends on more than a halo)

  const ParamSpec* param(std::string_view n) const;
};

// A parameter value as given: numbers for integer/real/boolean, text for choice.
using ParamValue = std::variant<double, std::string>;
using Params = std::map<std::string, ParamValue, std::less<>>;

// A filter's result: an array (image, labels, binary) or a table.
struct Result {
  Array array;
  Table table;
  bool is_table() const noexcept { return !array.valid(); }
};

// Progress and cancellation for long runs (the GUI's worker thread). Multi-pass filters
// check `cancel` between passes and throw gpix::Cancelled; progress gets 0..1.
struct RunOptions {
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(double)> progress;
};

// Every filter, in catalog order (by category, then name).
const std::vector<FilterInfo>& filters();
// The descriptor of a filter; throws InvalidArgument naming the closest names.
const FilterInfo& filter(std::string_view name);
// Converts command-line/GUI text to a ParamValue using the spec (numbers, true/false,
// choice names); throws InvalidArgument saying what is accepted.
ParamValue parse_param(const ParamSpec& spec, std::string_view text);

// Runs any catalog entry on inputs (all on one device) with params (missing ones take their
// defaults). Checks everything first: unknown or out-of-range parameters, a wrong number of
// inputs, an unsupported dtype or dimensionality each raise a typed error naming what
// would work, before any device work starts. Inputs of any layout are accepted (see
// InputLayout) and never modified.
Result run(std::string_view name, std::span<const Array> inputs, const Params& params = {},
           const RunOptions& options = {});
inline Result run(std::string_view name, const Array& input, const Params& params = {},
                  const RunOptions& options = {}) {
  return run(name, std::span<const Array>(&input, 1), params, options);
}

// The parameter checks of run() alone, before any input exists (a form, a command line):
// throws InvalidArgument for a name the filter lacks or a value out of its range, word for
// word as run() would.
void check_params(std::string_view name, const Params& params);

// What run() gives for a first input of dtype `in` and `ndim` dimensions, known before any
// work: an image result's dtype and dimensionality (FilterInfo::output_dtype's rule), nullopt
// for a table. For checks that belong before a long run (can the output file hold it?).
// Parameters as run() takes them; they are not validated here (run() does that).
struct ResultType {
  DType dtype;
  int ndim;
};
std::optional<ResultType> result_type(std::string_view name, const Params& params, DType in,
                                      int ndim);

}  // namespace gpix
