#include "programs.h"

#include <map>
#include <mutex>

#include "gpix/device.h"
#include "gpix/error.h"
#include "gpix_kernel_sources.h"
#include "kernel_entry.h"

namespace gpix::detail {

const ProgramSource& program(std::string_view file) {
  static const std::map<std::string, ProgramSource, std::less<>> programs = [] {
    std::map<std::string, ProgramSource, std::less<>> m;
    const auto files = embedded_kernels::files();
    const auto& dialect = files.front();  // kernels/CMakeLists.txt puts dialect.h first
    for (const auto& f : files.subspan(1)) {
      ProgramSource p;
      p.name = std::string(f.name);
      p.text = std::string(dialect.data) + "\n#line 1\n" + std::string(f.data);
      p.hash = std::string(dialect.sha256.substr(0, 16)) + std::string(f.sha256.substr(0, 16));
      p.splittable = true;
      p.groups = program_groups(f.data);
      m.emplace(p.name, std::move(p));
    }
    return m;
  }();
  auto it = programs.find(file);
  if (it == programs.end()) {
    throw InvalidArgument("no embedded kernel file named '" + std::string(file) + "'");
  }
  return it->second;
}

std::string dialect_text() {
  return std::string(embedded_kernels::files().front().data);
}

std::string_view kernel_type(DType t) {
  switch (t) {
    case DType::u8:
      return "gpix_u8";
    case DType::i8:
      return "gpix_i8";
    case DType::u16:
      return "gpix_u16";
    case DType::i16:
      return "gpix_i16";
    case DType::u32:
      return "gpix_u32";
    case DType::i32:
      return "gpix_i32";
    case DType::u64:
      return "gpix_u64";
    case DType::i64:
      return "gpix_i64";
    case DType::f32:
      return "gpix_f32";
    case DType::f64:
      break;
  }
  return "gpix_f64";
}

void require_dtype(const Device& d, DType t, std::string_view what) {
  if (t == DType::f64 && !d.supports_fp64()) {
    throw UnsupportedDType(std::string(what) + " needs float64, but '" + d.name() +
                           "' has no double precision" +
                           (d.info().fp64 ? " (disabled by GPIX_DISABLE_FP64)" : "") +
                           "; convert to float32 first or choose a device with fp64");
  }
}

}  // namespace gpix::detail
