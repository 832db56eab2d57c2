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
  // How hard NVRTC optimises. fast_compile (--Ofast-compile=mid, NVRTC 12.8 and newer; full
  // on older ones) is for checks that a program compiles: the same front end and the same
  // ptxas limits (shared memory, registers) in ~40% of the time, slower code. Shipped and
  // run-time kernels always use full.
  enum class Opt { full, fast_compile };
  // True where fast_compile is honoured (NVRTC 12.8 and newer).
  bool has_fast_compile() const;
  // The cubin for arch (e.g. 90 for sm_90). Throws CompileError with NVRTC's log.
  std::vector<char> compile(const ProgramSource& src, const Defines& defines, int arch,
                            Opt opt = Opt::full) const;
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
                        const std::string& gpu_arch, bool ptx, Opt opt) const;
  Api* api_ = nullptr;
};

}  // namespace gpix::detail
