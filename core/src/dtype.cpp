#include "gpix/dtype.h"

#include "util.h"

namespace gpix {

std::string_view name(DType t) {
  switch (t) {
    case DType::u8: return "uint8";
    case DType::i8: return "int8";
    case DType::u16: return "uint16";
    case DType::i16: return "int16";
    case DType::u32: return "uint32";
    case DType::i32: return "int32";
    case DType::u64: return "uint64";
    case DType::i64: return "int64";
    case DType::f32: return "float32";
    case DType::f64: break;
  }
  return "float64";
}

std::string_view short_name(DType t) {
  switch (t) {
    case DType::u8: return "u8";
    case DType::i8: return "i8";
    case DType::u16: return "u16";
    case DType::i16: return "i16";
    case DType::u32: return "u32";
    case DType::i32: return "i32";
    case DType::u64: return "u64";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: break;
  }
  return "f64";
}

std::optional<DType> parse_dtype(std::string_view text) {
  const std::string t = detail::lower(detail::trim(text));
  for (DType d : kAllDTypes) {
    if (t == name(d) || t == short_name(d)) return d;
  }
  if (t == "float" || t == "single") return DType::f32;
  if (t == "double") return DType::f64;
  if (t == "uchar") return DType::u8;
  if (t == "char") return DType::i8;
  if (t == "ushort") return DType::u16;
  if (t == "short") return DType::i16;
  if (t == "uint") return DType::u32;
  if (t == "int") return DType::i32;
  if (t == "ulong") return DType::u64;
  if (t == "long") return DType::i64;
  return std::nullopt;
}

std::string dtype_names() {
  std::string s;
  for (DType d : kAllDTypes) {
    if (!s.empty()) s += ", ";
    s += std::string(short_name(d)) + " (" + std::string(name(d)) + ")";
  }
  return s;
}

}  // namespace gpix
