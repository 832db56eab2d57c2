#pragma once
// dlopen with a list of candidate names and folders, and typed symbol lookup. The CUDA driver
// and NVRTC are loaded this way, so one gpix build runs with and without them.
#include <string>
#include <vector>

namespace gpix::detail {

class DynLib {
 public:
  DynLib() = default;
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  DynLib(DynLib&& o) noexcept;
  DynLib& operator=(DynLib&& o) noexcept;
  ~DynLib();

  // Tries each name as given (the loader's search path), then inside each folder. On failure
  // returns an empty DynLib and sets *why to "<first name> not found", or, where a candidate
  // exists but failed to load, "<first name> could not be loaded: <the loader's message>".
  static DynLib open(const std::vector<std::string>& names, const std::vector<std::string>& folders,
                     std::string* why);

  explicit operator bool() const noexcept { return handle_ != nullptr; }
  const std::string& path() const noexcept { return path_; }
  // The symbol as a function pointer of type F, or nullptr.
  template <class F>
  F symbol(const char* name) const {
    return reinterpret_cast<F>(raw_symbol(name));
  }

 private:
  void* raw_symbol(const char* name) const;
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace gpix::detail
