#include "backend/cuda/dynlib.h"

#include <dlfcn.h>

#include <utility>

namespace gpix::detail {

DynLib::DynLib(DynLib&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)), path_(std::move(o.path_)) {}

DynLib& DynLib::operator=(DynLib&& o) noexcept {
  if (this != &o) {
    if (handle_) dlclose(handle_);
    handle_ = std::exchange(o.handle_, nullptr);
    path_ = std::move(o.path_);
  }
  return *this;
}

DynLib::~DynLib() {
  if (handle_) dlclose(handle_);
}

DynLib DynLib::open(const std::vector<std::string>& names, const std::vector<std::string>& folders,
                    std::string* why) {
  std::string last_error;
  auto attempt = [&](const std::string& path) -> DynLib {
    DynLib lib;
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      lib.handle_ = h;
      lib.path_ = path;
    } else if (const char* e = dlerror()) {
      last_error = e;
    }
    return lib;
  };
  for (const auto& n : names) {
    if (DynLib lib = attempt(n)) return lib;
  }
  for (const auto& f : folders) {
    if (f.empty()) continue;
    for (const auto& n : names) {
      if (DynLib lib = attempt(f + "/" + n)) return lib;
    }
  }
  if (why) {
    *why = names.front() + " not found";
    if (!last_error.empty()) *why += " (" + last_error + ")";
  }
  return {};
}

void* DynLib::raw_symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

}  // namespace gpix::detail
