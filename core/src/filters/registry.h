#pragma once
// The catalog's internal side. Each filter is one table row, a Filter<P> written with
// designated initialisers: its descriptor, its parameters as the members of a struct P, and
// the function that computes it from the inputs and a P. gpix::run (a name and string-keyed
// Params, for the CLI and the GUI) and the typed function (gpix/filters/*.h, a P written in
// C++, so that a misspelt parameter does not compile) pass the same checks and then call that
// same function: each filter has one implementation and one validation.
#include <array>
#include <concepts>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpix/catalog.h"

namespace gpix::detail {

// ---- the one validation, shared by every filter and both ways in

// The inputs against the descriptor: count, null arrays, dtype, dimensionality, one device.
void check_inputs(const FilterInfo& info, std::span<const Array> inputs);
// Parameter names that the descriptor does not declare (gpix::run only: a typed call cannot
// name one).
void check_names(const FilterInfo& info, const Params& given);
// One value against its spec: inside the range (whole for integers), 0/1 for booleans, one of
// the choices.
void check_value(const FilterInfo& info, const ParamSpec& spec, const ParamValue& v);
// The value given for spec in `given`, or the spec's default.
ParamValue given_or_default(const ParamSpec& spec, const Params& given);
// The inputs as the filter reads them: kernels index flat runs, so unless the descriptor says
// InputLayout::any, every non-contiguous input (padded, region view, image) becomes one
// contiguous device copy. The one place where layouts are decided.
std::vector<Array> readable(const FilterInfo& info, std::span<const Array> inputs);
// Whether readable() would copy any of the inputs (a strided one for a filter that reads only
// contiguous buffers).
bool needs_copy(const FilterInfo& info, std::span<const Array> inputs);

// Throws Cancelled when options.cancel is set; reports progress in 0..1.
void checkpoint(const RunOptions& options, double progress, std::string_view what);

// ---- parameters: a ParamSpec bound to a member of P

template <class P>
struct Param {
  ParamSpec spec;
  std::function<ParamValue(const P&)> get;         // the member as the checks read it
  std::function<void(P&, const ParamValue&)> set;  // a checked value into the member
};

// The fields of each kind of parameter, for designated initialisers.
struct RealSpec {
  std::string name;
  double def = 0;
  double min = -1e300;
  double max = 1e300;
  std::string unit{};
  std::string doc;
};
struct IntSpec {
  std::string name;
  long long def = 0;
  long long min = 0;
  long long max;
  std::string unit{};
  std::string doc;
};
struct BoolSpec {
  std::string name;
  bool def = false;
  std::string doc;
};
struct ChoiceSpec {
  std::string name;
  std::vector<std::string> choices;
  std::string def;
  std::string doc;
};
template <class E>
struct EnumSpec {
  std::string name;
  std::vector<std::pair<E, std::string>> choices;  // in the order the catalog lists them
  E def;
  std::string doc;
};

// The ParamSpec of each kind (defined in registry.cpp).
ParamSpec spec_of(RealSpec s);
ParamSpec spec_of(IntSpec s);
ParamSpec spec_of(BoolSpec s);
ParamSpec spec_of(ChoiceSpec s);

template <class P>
Param<P> real(double P::*m, RealSpec s) {
  return {spec_of(std::move(s)), [m](const P& p) { return ParamValue(p.*m); },
          [m](P& p, const ParamValue& v) { p.*m = std::get<double>(v); }};
}

// One element of an array member (affine_transform's matrix: a parameter per element).
template <class P, std::size_t N>
Param<P> real(std::array<double, N> P::*m, std::size_t i, RealSpec s) {
  return {spec_of(std::move(s)), [m, i](const P& p) { return ParamValue((p.*m)[i]); },
          [m, i](P& p, const ParamValue& v) { (p.*m)[i] = std::get<double>(v); }};
}

// Any integer member (int radii, std::size_t extents): the checks see it as a double, as
// gpix::run's numbers are, so an extent beyond the range is refused rather than wrapped.
template <class P, std::integral T>
requires(!std::same_as<T, bool>) Param<P> integer(T P::*m, IntSpec s) {
  return {spec_of(std::move(s)), [m](const P& p) { return ParamValue(static_cast<double>(p.*m)); },
          [m](P& p, const ParamValue& v) { p.*m = static_cast<T>(std::get<double>(v)); }};
}

template <class P>
Param<P> boolean(bool P::*m, BoolSpec s) {
  return {spec_of(std::move(s)), [m](const P& p) { return ParamValue(p.*m ? 1.0 : 0.0); },
          [m](P& p, const ParamValue& v) { p.*m = std::get<double>(v) != 0; }};
}

// A choice kept as its text (the typed function takes the text too; the checks refuse any
// other).
template <class P>
Param<P> choice(std::string P::*m, ChoiceSpec s) {
  return {spec_of(std::move(s)), [m](const P& p) { return ParamValue(p.*m); },
          [m](P& p, const ParamValue& v) { p.*m = std::get<std::string>(v); }};
}

// A choice kept as an enum; the spec names each value.
template <class P, class E>
requires std::is_enum_v<E> Param<P> choice(E P::*m, EnumSpec<E> s) {
  ChoiceSpec text{.name = std::move(s.name), .choices = {}, .def = {}, .doc = std::move(s.doc)};
  for (const auto& [value, label] : s.choices) {
    text.choices.push_back(label);
    if (value == s.def) text.def = label;
  }
  return {spec_of(std::move(text)),
          [m, names = s.choices](const P& p) {
            for (const auto& [value, label] : names) {
              if (value == p.*m) return ParamValue(label);
            }
            return ParamValue(std::string());  // not a named value: the checks refuse it
          },
          [m, names = s.choices](P& p, const ParamValue& v) {
            for (const auto& [value, label] : names) {
              if (label == std::get<std::string>(v)) p.*m = value;
            }
          }};
}

InputSpec image_input(std::string name = "input", std::string doc = "image");
std::vector<DType> all_dtypes();
std::vector<DType> integer_dtypes();

// ---- filters

// The P of a filter without parameters.
struct NoParams {};

template <class P>
using FilterFn =
    std::function<Result(std::span<const Array> inputs, const P& p, const RunOptions& o)>;

// How far an output pixel depends on its input along axis 0, the axis tiled execution cuts
// into slabs, for an input of `ndim` dimensions: the planes loaded around each slab.
template <class P>
using HaloFn = std::function<std::size_t(const P& p, int ndim)>;

// The device memory a run of the filter holds at its peak, in bytes per pixel of its input
// (its inputs, output and intermediates), for an input of `ndim` dimensions and dtype `in`;
// 0 where it stays within run_tiled's rule (twice the inputs and an output of the widest of
// the inputs and 4 bytes). run_tiled plans its slabs with it: a filter whose intermediates
// outgrew the rule ran out of memory under the budget it was given (test_core_tiled's
// working_sets measures every tileable filter against what it says here).
template <class P>
using WorkingSetFn = std::function<std::size_t(const P& p, int ndim, DType in)>;
// The bytes of an output pixel where more than the rule's max(4 bytes, the widest input):
// convert to a 64-bit dtype. run_tiled counts them for the output and for the previous
// slab's output on its way back.
template <class P>
using OutputBytesFn = std::function<std::size_t(const P& p, DType in)>;

// The halo of a filter whose output pixel reads only the same input pixel(s).
inline constexpr auto pointwise = [](const auto&, int) -> std::size_t { return 0; };
// The halo of a 3-point stencil (central differences, Laplace, Sobel).
inline constexpr auto one_pixel = [](const auto&, int) -> std::size_t { return 1; };

// Of per-axis values in (x, y, z) order, the one for axis 0 of an ndim-dimensional array.
template <class T>
T along_slab_axis(int ndim, T x, T y, T z) {
  return ndim >= 3 ? z : ndim == 2 ? y : x;
}

// A filter whose output depends on the whole input, run slab by slab (gpix::run_tiled): each
// pass reads the input once, slab after slab in order of axis 0, and every slab leaves what
// the output needs in the fold's state (a projection's running column sums, a histogram's
// counts). Slabs carry no halo.
struct Folded {
  // The output once every slab was added: a table, or an array (a projection's one plane).
  Result whole;
  // Or, for an output that maps the input slab by slab once the state is known (Otsu: the
  // threshold from the whole histogram, then pixel by pixel; connected components: each slab
  // labelled again, its labels mapped to the whole image's), that map of the slab whose
  // first plane is z0; `whole` is then empty. Called from several workers at once.
  std::function<Array(std::span<const Array> slab, std::size_t z0)> per_slab;
};

class SlabFold {
 public:
  SlabFold() = default;
  SlabFold(const SlabFold&) = delete;
  SlabFold& operator=(const SlabFold&) = delete;
  virtual ~SlabFold() = default;
  // Reads of the whole input before the output is known (a histogram over the image's own
  // range: the range, then the counts).
  virtual int passes() const { return 1; }
  // Whether finish() gives Folded::per_slab, which reads the input once more.
  virtual bool maps() const { return false; }
  // Device memory the state keeps (run_tiled leaves it out of the slabs' budget).
  virtual std::size_t state_bytes() const { return 0; }
  // Device memory a slab's pixel takes at most while add() or per_slab runs, its input
  // included, where that is more than run_tiled's rule (twice the inputs and an output of
  // the widest of the inputs and 4 bytes); 0: the rule.
  virtual std::size_t pixel_bytes() const { return 0; }
  // Whether add() takes the slabs of a pass in any order, from every worker on every device
  // at once (each slab once); the slabs of every pass and of per_slab are then the same. Else
  // add() runs on the first device, slabs in increasing order.
  virtual bool unordered() const { return false; }
  // The planes of axis 0 from z0 on, as device arrays of the inputs (on one device).
  // Within a pass the slabs cover the input once.
  virtual void add(int pass, std::span<const Array> slab, std::size_t z0) = 0;
  // After the last pass.
  virtual Folded finish() = 0;
};

// The fold of a filter for these parameters and a whole input of this shape and dtype (the
// inputs' checks have passed on the first slab's arrays).
template <class P>
using FoldFn =
    std::function<std::unique_ptr<SlabFold>(const P& p, const Shape& shape, DType dtype)>;

// One table row. The fields without a default (name, category, doc, fn) must be written;
// the rest default to what most filters have.
template <class P>
struct FilterSpec {
  std::string name;
  Category category;
  std::string doc;
  std::vector<InputSpec> inputs = {image_input()};
  std::vector<Param<P>> params = {};
  std::vector<int> dims = {1, 2, 3};
  std::vector<DType> dtypes = all_dtypes();
  OutputKind output = OutputKind::image;
  std::string output_dtype = "same as input";
  InputLayout layout = InputLayout::contiguous;
  // Tiling: the halo rule; or, when the output depends on the whole input, how its slabs
  // fold into it; or, when neither, why the filter cannot run tiled. Every row says one of
  // the three (test_core_tiled), so no filter tiles by accident.
  HaloFn<P> halo = {};
  FoldFn<P> fold = {};
  std::string untiled = {};
  WorkingSetFn<P> working_set = {};
  OutputBytesFn<P> output_bytes = {};
  FilterFn<P> fn;
};

// What the catalog holds of a filter whatever its P: the descriptor, and a run by name.
class Entry {
 public:
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  virtual ~Entry() = default;
  const FilterInfo& info() const { return info_; }
  // gpix::run: checks inputs and params, fills in defaults, runs.
  virtual Result run(std::span<const Array> inputs, const Params& given,
                     const RunOptions& o) const = 0;
  // The halo of a tiled run with these parameters (checked as run checks them); throws
  // InvalidArgument, saying why, for a filter that cannot run tiled.
  virtual std::size_t halo(int ndim, const Params& given) const = 0;
  // The fold of a tiled run (see SlabFold), or null for a filter that tiles with a halo;
  // throws InvalidArgument, saying why, for one that cannot run tiled.
  virtual std::unique_ptr<SlabFold> fold(const Params& given, const Shape& shape,
                                         DType dtype) const = 0;
  // The filter's WorkingSetFn for these parameters (checked as run checks them); 0 for the
  // rule.
  virtual std::size_t working_set(const Params& given, int ndim, DType in) const = 0;
  // The filter's OutputBytesFn for these parameters; 0 for the rule.
  virtual std::size_t output_bytes(const Params& given, DType in) const = 0;

 protected:
  explicit Entry(FilterInfo info) : info_(std::move(info)) {}

 private:
  FilterInfo info_;
};

template <class P = NoParams>
class Filter final : public Entry {
 public:
  explicit Filter(FilterSpec<P> s)
      : Entry(describe(s)),
        params_(std::move(s.params)),
        halo_(std::move(s.halo)),
        fold_(std::move(s.fold)),
        working_set_(std::move(s.working_set)),
        output_bytes_(std::move(s.output_bytes)),
        fn_(std::move(s.fn)) {}

  Result run(std::span<const Array> inputs, const Params& given,
             const RunOptions& o) const override {
    check_inputs(info(), inputs);
    return invoke(inputs, parse(given), o);
  }

  std::size_t halo(int ndim, const Params& given) const override {
    if (fold_) {
      (void)parse(given);  // the parameters are checked all the same
      return 0;
    }
    if (!halo_) untileable();
    return halo_(parse(given), ndim);
  }

  std::unique_ptr<SlabFold> fold(const Params& given, const Shape& shape,
                                 DType dtype) const override {
    if (fold_) return fold_(parse(given), shape, dtype);
    if (!halo_) untileable();
    return nullptr;
  }

  std::size_t working_set(const Params& given, int ndim, DType in) const override {
    const P p = parse(given);
    return working_set_ ? working_set_(p, ndim, in) : 0;
  }
  std::size_t output_bytes(const Params& given, DType in) const override {
    const P p = parse(given);
    return output_bytes_ ? output_bytes_(p, in) : 0;
  }

  // The typed functions' way in: the same checks on p, then the implementation.
  Result call(std::initializer_list<Array> inputs, const P& p = {},
              const RunOptions& o = {}) const {
    const std::span<const Array> in(inputs.begin(), inputs.size());
    check(in, p);
    return invoke(in, p, o);
  }
  Array array(std::initializer_list<Array> inputs, const P& p = {}) const {
    return call(inputs, p).array;
  }
  // For typed functions whose result is not the catalog's (a Scalar where the catalog gives a
  // table): the checks, then the inputs as the filter reads them.
  std::vector<Array> prepare(std::initializer_list<Array> inputs, const P& p = {}) const {
    const std::span<const Array> in(inputs.begin(), inputs.size());
    check(in, p);
    return readable(info(), in);
  }

 private:
  [[noreturn]] void untileable() const {
    throw InvalidArgument("filter '" + info().name + "' cannot run tiled: " + info().untiled);
  }
  // The parameters as given, defaults filled in, each checked.
  P parse(const Params& given) const {
    check_names(info(), given);
    P p{};
    for (const Param<P>& q : params_) {
      const ParamValue v = given_or_default(q.spec, given);
      check_value(info(), q.spec, v);
      q.set(p, v);
    }
    return p;
  }
  static FilterInfo describe(const FilterSpec<P>& s) {
    FilterInfo info;
    info.name = s.name;
    info.category = s.category;
    info.doc = s.doc;
    info.inputs = s.inputs;
    for (const Param<P>& q : s.params) info.params.push_back(q.spec);
    info.dims = s.dims;
    info.dtypes = s.dtypes;
    info.output = s.output;
    info.output_dtype = s.output_dtype;
    info.layout = s.layout;
    info.tiles = s.halo || s.fold;
    info.folds = static_cast<bool>(s.fold);
    info.untiled = info.tiles ? std::string() : s.untiled;
    return info;
  }
  void check(std::span<const Array> inputs, const P& p) const {
    check_inputs(info(), inputs);
    for (const Param<P>& q : params_) check_value(info(), q.spec, q.get(p));
  }
  Result invoke(std::span<const Array> inputs, const P& p, const RunOptions& o) const {
    checkpoint(o, 0.0, info().name);
    // Inputs the filter can read as they are go through as they are: copying the handles into
    // a vector was a host allocation of every call (bench_launch).
    Result r = needs_copy(info(), inputs) ? fn_(readable(info(), inputs), p, o) : fn_(inputs, p, o);
    if (o.progress) o.progress(1.0);
    return r;
  }

  std::vector<Param<P>> params_;
  HaloFn<P> halo_;
  FoldFn<P> fold_;
  WorkingSetFn<P> working_set_;
  OutputBytesFn<P> output_bytes_;
  FilterFn<P> fn_;
};

// Every filter, in catalog order (by category, then name).
class Catalog {
 public:
  void add(std::initializer_list<const Entry*> entries);
  const std::vector<const Entry*>& entries() const { return entries_; }

 private:
  std::vector<const Entry*> entries_;
};

// The one catalog, built on first use from every module's register_* function.
const Catalog& catalog();
// The entry of that name; throws InvalidArgument naming the closest names.
const Entry& entry(std::string_view name);

// Module registrations (one per file in core/src/filters/).
void register_arithmetic(Catalog& c);
void register_neighbourhood(Catalog& c);
void register_segmentation(Catalog& c);
void register_geometry(Catalog& c);
void register_reductions(Catalog& c);  // Projections and Reductions

// The Result of a filter whose output is an array (every module's `return one(out)`).
inline Result one(Array a) {
  Result r;
  r.array = std::move(a);
  return r;
}

}  // namespace gpix::detail
