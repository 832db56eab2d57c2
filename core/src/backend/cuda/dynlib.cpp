#include "backend/cuda/dynlib.h"

#include <dlfcn.h>

#include <string_view>
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
  // The first failure of a file that exists (wrong architecture, missing dependency) is worth
  // reporting; "No such file" for each candidate is not.
  std::string load_error;
  auto attempt = [&](const std::string& path) -> DynLib {
    DynLib lib;
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      lib.handle_ = h;
      lib.path_ = path;
    } else if (const char* e = dlerror()) {
      if (load_error.empty() &&
          std::string_view(e).find("No such file") == std::string_view::npos) {
        load_error = e;
      }
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
    *why = load_error.empty() ? names.front() + " not found"
                              : names.front() + " could not be loaded: " + load_error;
  }
  return {};
}

void* DynLib::raw_symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

}  // namespace gpix::detail
