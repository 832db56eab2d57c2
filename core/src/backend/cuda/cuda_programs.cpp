#include "backend/cuda/cuda_device.h"
#include "kernel_bundle.h"

namespace gpix::detail::cuda {

std::unique_ptr<CudaDevice::Program> CudaDevice::load(const std::vector<char>& bin) {
  if (bin.size() <= kBinaryHeader ||
      std::memcmp(bin.data(), kBinaryMagic, sizeof kBinaryMagic) != 0) {
    return nullptr;
  }
  const char kind = bin[sizeof kBinaryMagic];
  if (kind != 'P' && kind != 'C') return nullptr;
  // A fresh vector: the image starts aligned, and PTX must end with a NUL.
  std::vector<char> image(bin.begin() + static_cast<std::ptrdiff_t>(kBinaryHeader), bin.end());
  if (kind == 'P' && image.back() != '\0') return nullptr;
  ContextScope scope(*ctx_);
  CUmodule m = nullptr;
  const CUresult r = drv().cuModuleLoadData(&m, image.data());
  if (r != CUDA_SUCCESS && is_load_failure(r)) return nullptr;  // rebuilt from source
  check(r, "loading a cached program on '" + info().name + "'");
  return std::make_unique<CuProgram>(ctx_, cuda::Module(m), std::move(image), kind == 'P');
}

std::vector<std::string> prebuilt_targets(int arch, const std::vector<std::string>& present) {
  // A cubin for this exact architecture; else one for an older minor of the same major (SASS
  // runs on later minors of its major: an sm_80 cubin on an 8.6 card); else PTX for the
  // newest architecture at or below this one, which the driver finishes.
  std::vector<std::string> out{"sm_" + std::to_string(arch)};
  for (int minor = arch % 10 - 1; minor >= 0; --minor) {
    out.push_back("sm_" + std::to_string(arch / 10 * 10 + minor));
  }
  int best_ptx = 0;
  for (const auto& t : present) {
    if (t.rfind("compute_", 0) == 0) {
      const int a = std::atoi(t.c_str() + 8);
      if (a <= arch) best_ptx = std::max(best_ptx, a);
    }
  }
  if (best_ptx > 0) out.push_back("compute_" + std::to_string(best_ptx));
  return out;
}

std::unique_ptr<CudaDevice::Program> CudaDevice::load_prebuilt(const std::string& program_key,
                                                               bool* rejected) {
  const auto bundle = KernelBundle::process_bundle();
  if (!bundle) return nullptr;
  // The device's own architecture, even where NVRTC is too old for it (target_ then says
  // PTX for an older one): a bundle made by a newer toolkit may have its cubin.
  const std::string& cc = info().compute_capability;  // "9.0"
  const auto dot = cc.find('.');
  if (dot == std::string::npos) return nullptr;
  const int arch = std::atoi(cc.c_str()) * 10 + std::atoi(cc.c_str() + dot + 1);
  for (const auto& target : prebuilt_targets(arch, bundle->targets())) {
    const std::string key = target + "|" + program_key;
    if (!bundle->contains(key)) continue;
    auto bin = bundle->find(key);
    auto program = bin ? load(*bin) : nullptr;
    if (program) return program;
    // A checksum failure, or a driver older than the toolkit that made the bundle: compile
    // from source as without a bundle (counted, and `gpix devices` shows the bundle).
    *rejected = true;
    return nullptr;
  }
  return nullptr;
}

std::unique_ptr<CudaDevice::Program> CudaDevice::build(const ProgramSource& src,
                                                       const Defines& defines) {
  bool ptx = target_.ptx;
  std::vector<char> bin = ptx ? nvrtc_.compile_ptx(src, defines, target_.arch)
                              : nvrtc_.compile(src, defines, target_.arch);
  ContextScope scope(*ctx_);
  CUmodule m = nullptr;
  CUresult r = drv().cuModuleLoadData(&m, bin.data());
  std::string first_failure;
  if (r != CUDA_SUCCESS && !ptx && is_load_failure(r)) {
    // A cubin the driver cannot load (an NVRTC newer than the driver): PTX may still work.
    first_failure = "the sm_" + std::to_string(target_.arch) + " cubin failed with " +
                    cuda::error_name(r) + "; ";
    bin = nvrtc_.compile_ptx(src, defines, target_.arch);
    ptx = true;
    r = drv().cuModuleLoadData(&m, bin.data());
  }
  if (r != CUDA_SUCCESS && !is_load_failure(r)) {
    check(r, "loading " + src.name + " on '" + info().name + "'");  // e.g. out of memory
  }
  if (r != CUDA_SUCCESS) {
    const std::string name = cuda::error_name(r);
    std::string msg = "CUDA could not load " + src.name + " on '" + info().name +
                      "': " + first_failure + (ptx ? "the PTX" : "the cubin") + " failed with " +
                      name;
    msg += " (the driver's CUDA " + cuda::version_text(drv().version) + " cannot load what NVRTC " +
           nvrtc_.version() +
           " produced; update the NVIDIA driver, or point GPIX_NVRTC_PATH to an NVRTC no "
           "newer than the driver)";
    throw CompileError(msg, {}, name);
  }
  return std::make_unique<CuProgram>(ctx_, cuda::Module(m), std::move(bin), ptx);
}

// Cubin for the device's own architecture where NVRTC knows it; otherwise PTX for the newest
// architecture NVRTC has that the device can run (the driver compiles it the rest of the way).
bool choose_target(const Nvrtc& nvrtc, int arch, Target& t, std::string& why) {
  const auto& archs = nvrtc.supported_archs();
  t.arch = arch;
  t.ptx = false;
  if (archs.empty() || std::find(archs.begin(), archs.end(), arch) != archs.end()) return true;
  int best = 0;
  for (int a : archs) {
    if (a <= arch) best = std::max(best, a);
  }
  if (best == 0) {
    why = "compute capability " + std::to_string(arch / 10) + "." + std::to_string(arch % 10) +
          " is older than NVRTC " + nvrtc.version() + " supports (sm_" +
          std::to_string(archs.front()) + " and newer); use an older CUDA toolkit's NVRTC";
    return false;
  }
  t.arch = best;
  t.ptx = true;
  return true;
}

}  // namespace gpix::detail::cuda
