#pragma once
// Pixel types. gpix never narrows a dtype silently: an operation that cannot keep the
// dtype it was given raises UnsupportedDType.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpix {

enum class DType : std::uint8_t { u8, i8, u16, i16, u32, i32, u64, i64, f32, f64 };

inline constexpr std::array<DType, 10> kAllDTypes = {DType::u8,  DType::i8,  DType::u16, DType::i16,
                                                     DType::u32, DType::i32, DType::u64, DType::i64,
                                                     DType::f32, DType::f64};

constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::u8:
    case DType::i8:
      return 1;
    case DType::u16:
    case DType::i16:
      return 2;
    case DType::u32:
    case DType::i32:
    case DType::f32:
      return 4;
    case DType::u64:
    case DType::i64:
    case DType::f64:
      return 8;
  }
  return 0;
}
constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr bool is_signed(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64 || is_float(t);
}

// numpy's names: "uint8", "int16", "float32", ...
std::string_view name(DType t);
// The short names "u8" ... "f64".
std::string_view short_name(DType t);
// Accepts numpy names, short names and a few aliases ("float", "double", "uchar", "ushort").
std::optional<DType> parse_dtype(std::string_view text);
// The list of accepted names, for error messages.
std::string dtype_names();

template <class T>
struct dtype_of_t;
template <> struct dtype_of_t<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of_t<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of_t<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of_t<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of_t<std::uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of_t<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of_t<std::uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_of_t<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of_t<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of_t<double> { static constexpr DType value = DType::f64; };

// The dtype of a C++ element type: dtype_of<float> == DType::f32.
template <class T>
inline constexpr DType dtype_of = dtype_of_t<std::remove_cv_t<T>>::value;

template <class T>
concept Pixel = requires { dtype_of_t<std::remove_cv_t<T>>::value; };

// Calls f(T{}) with the C++ type of t: visit_dtype(t, [](auto v) { using T = decltype(v); ... }).
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::u8: return f(std::uint8_t{});
    case DType::i8: return f(std::int8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::i16: return f(std::int16_t{});
    case DType::u32: return f(std::uint32_t{});
    case DType::i32: return f(std::int32_t{});
    case DType::u64: return f(std::uint64_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::f32: return f(float{});
    case DType::f64: break;
  }
  return f(double{});
}

}  // namespace gpix
