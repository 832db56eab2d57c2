#pragma once
// NVRTC, loaded at run time. Compiles gpix kernels (dialect + source) to a cubin for one
// architecture; works without a GPU or driver, which is how CI checks the CUDA side of every
// kernel.
#include <string>
#include <vector>

#include "backend/backend.h"

namespace gpix::detail {

class Nvrtc {
 public:
  // The process-wide NVRTC, or nullptr with *why saying what is missing. Honors
  // GPIX_NVRTC_PATH (a file) and CUDA_PATH (a toolkit folder).
  static const Nvrtc* get(std::string* why = nullptr);

  // "13.0"
  std::string version() const;
  // The cubin for arch (e.g. 90 for sm_90). Throws CompileError with NVRTC's log.
  std::vector<char> compile(const ProgramSource& src, const Defines& defines, int arch) const;
  // PTX for the virtual architecture compute_<arch>, NUL-terminated (what cuModuleLoadData
  // expects). Throws CompileError with NVRTC's log.
  std::vector<char> compile_ptx(const ProgramSource& src, const Defines& defines, int arch) const;
  // The real architectures this NVRTC can make cubins for (e.g. 75 80 ... 120), ascending;
  // empty where NVRTC cannot say (before 11.2).
  const std::vector<int>& supported_archs() const;

  struct Api;
  ~Nvrtc();

 private:
  Nvrtc() = default;
  std::vector<char> run(const ProgramSource& src, const Defines& defines,
                        const std::string& gpu_arch, bool ptx) const;
  Api* api_ = nullptr;
};

}  // namespace gpix::detail
