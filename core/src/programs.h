#pragma once
// The embedded kernel sources as programs (dialect + kernel file), and kernel type names.
#include <string>
#include <string_view>

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

// Rounds n up to a multiple of m.
constexpr std::size_t round_up(std::size_t n, std::size_t m) {
  return (n + m - 1) / m * m;
}

}  // namespace gpix::detail
