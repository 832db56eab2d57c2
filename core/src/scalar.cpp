#include "gpix/scalar.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gpix/error.h"

namespace gpix {
namespace {

template <class T>
bool fits_value(const std::variant<std::int64_t, std::uint64_t, double>& v) {
  using L = std::numeric_limits<T>;
  if (const auto* d = std::get_if<double>(&v)) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(*d)) return true;
      return static_cast<double>(static_cast<T>(*d)) == *d;
    } else {
      if (!std::isfinite(*d) || *d != std::floor(*d)) return false;
      // Compare against the range in double; the bounds are exact powers of two.
      if (*d < static_cast<double>(L::lowest()) || *d >= std::ldexp(1.0, L::digits)) return false;
      return true;
    }
  }
  if (const auto* i = std::get_if<std::int64_t>(&v)) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<std::int64_t>(static_cast<T>(*i)) == *i &&
             std::abs(static_cast<long double>(*i)) < std::ldexp(1.0L, L::digits + 1);
    } else if constexpr (std::is_signed_v<T>) {
      return *i >= static_cast<std::int64_t>(L::lowest()) && *i <= static_cast<std::int64_t>(L::max());
    } else {
      return *i >= 0 && static_cast<std::uint64_t>(*i) <= static_cast<std::uint64_t>(L::max());
    }
  }
  const std::uint64_t u = std::get<std::uint64_t>(v);
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<long double>(static_cast<T>(u)) == static_cast<long double>(u);
  } else {
    return u <= static_cast<std::uint64_t>(L::max());
  }
}

}  // namespace

double Scalar::as_double() const noexcept {
  return std::visit([](auto x) { return static_cast<double>(x); }, v_);
}

bool Scalar::fits(DType t) const noexcept {
  return visit_dtype(t, [&](auto z) { return fits_value<decltype(z)>(v_); });
}

template <class T>
T Scalar::exact_as() const {
  if (!fits_value<T>(v_)) {
    using L = std::numeric_limits<T>;
    throw InvalidArgument("the value " + str() + " is not exactly representable as " +
                          std::string(name(dtype_of<T>)) + " (range " + Scalar(L::lowest()).str() +
                          " to " + Scalar(L::max()).str() +
                          (std::is_integral_v<T> ? ", whole numbers only" : "") +
                          "); pass a value in range or convert the array first");
  }
  return std::visit([](auto x) { return static_cast<T>(x); }, v_);
}

#define GPIX_INSTANTIATE(T) template T Scalar::exact_as<T>() const;
GPIX_INSTANTIATE(std::uint8_t)
GPIX_INSTANTIATE(std::int8_t)
GPIX_INSTANTIATE(std::uint16_t)
GPIX_INSTANTIATE(std::int16_t)
GPIX_INSTANTIATE(std::uint32_t)
GPIX_INSTANTIATE(std::int32_t)
GPIX_INSTANTIATE(std::uint64_t)
GPIX_INSTANTIATE(std::int64_t)
GPIX_INSTANTIATE(float)
GPIX_INSTANTIATE(double)
#undef GPIX_INSTANTIATE

std::string Scalar::str() const {
  if (const auto* d = std::get_if<double>(&v_)) {
    if (std::isnan(*d)) return "nan";
    if (std::isinf(*d)) return *d > 0 ? "inf" : "-inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, *d);
    return std::string(buf, r.ptr);
  }
  return std::visit([](auto x) { return std::to_string(x); }, v_);
}

}  // namespace gpix
