#pragma once
// The embedded kernel sources as programs (dialect + kernel file), and kernel type names.
#include <string>
#include <string_view>
#include <type_traits>

#include "backend/backend.h"
#include "gpix/dtype.h"

namespace gpix::detail {

// The program built from kernels/<file> (e.g. "stats.kernel"). Throws InvalidArgument for a
// name that is not embedded.
const ProgramSource& program(std::string_view file);

// The dialect header's text (prepended to every program).
std::string dialect_text();

// The dialect's type name: "gpix_f32" for DType::f32.
std::string_view kernel_type(DType t);

// Throws UnsupportedDType when t is f64 and the device has no fp64 (or GPIX_DISABLE_FP64).
void require_dtype(const Device& d, DType t, std::string_view what);
// The same with the subject built only when the check fails (every call of a filter that
// computes in float64 for some dtypes asks; built each time, the text was host allocations).
template <class F>
requires std::is_invocable_r_v<std::string, const F&>
void require_dtype(const Device& d, DType t, const F& what) {
  if (t == DType::f64 && !d.supports_fp64()) require_dtype(d, t, std::string_view(what()));
}

// Rounds n up to a multiple of m.
constexpr std::size_t round_up(std::size_t n, std::size_t m) {
  return (n + m - 1) / m * m;
}

}  // namespace gpix::detail
