#pragma once
// A pixel value that keeps full precision for every dtype: 64-bit integers are not squeezed
// through a double.
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

#include "gpix/dtype.h"

namespace gpix {

class Scalar {
 public:
  Scalar() = default;
  template <class T>
    requires std::is_arithmetic_v<T>
  Scalar(T v) {  // NOLINT(google-explicit-constructor): a Scalar stands for any number
    if constexpr (std::is_floating_point_v<T>) {
      v_ = static_cast<double>(v);
    } else if constexpr (std::is_signed_v<T>) {
      v_ = static_cast<std::int64_t>(v);
    } else {
      v_ = static_cast<std::uint64_t>(v);
    }
  }

  bool is_float() const noexcept { return std::holds_alternative<double>(v_); }
  bool is_signed_int() const noexcept { return std::holds_alternative<std::int64_t>(v_); }
  bool is_unsigned_int() const noexcept { return std::holds_alternative<std::uint64_t>(v_); }
  double as_double() const noexcept;
  // The value converted to T when it is exactly representable; otherwise throws
  // InvalidArgument naming the value and the dtype's range.
  template <class T>
  T exact_as() const;
  // Whether the value is exactly representable in dtype t (NaN and inf only in floats).
  bool fits(DType t) const noexcept;
  // Shortest text that reads back to the same value ("3", "-1.5", "nan", "18446744073709551615").
  std::string str() const;

  friend bool operator==(const Scalar&, const Scalar&) = default;

 private:
  std::variant<std::int64_t, std::uint64_t, double> v_{std::int64_t{0}};
};

}  // namespace gpix
