#include "backend/cuda/nvrtc.h"

#include <nvrtc.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "backend/cuda/dynlib.h"
#include "config.h"
#include "gpix/error.h"

namespace gpix::detail {

struct Nvrtc::Api {
  DynLib lib;
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  // Optional (NVRTC 11.2+).
  decltype(&::nvrtcGetNumSupportedArchs) num_archs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) archs_list = nullptr;
  std::vector<int> archs;
};

Nvrtc::~Nvrtc() {
  delete api_;
}

const Nvrtc* Nvrtc::get(std::string* why) {
  static std::string reason;
  static const std::unique_ptr<Nvrtc> instance = [] {
    std::vector<std::string> names;
    if (!config().nvrtc_path.empty()) names.push_back(config().nvrtc_path);
    for (const char* n : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}) {
      names.emplace_back(n);
    }
    std::vector<std::string> folders;
    if (!config().cuda_path.empty()) folders.push_back(config().cuda_path + "/lib64");
    folders.emplace_back("/usr/local/cuda/lib64");
    folders.emplace_back("/usr/local/cuda/targets/x86_64-linux/lib");
    auto api = std::make_unique<Api>();
    api->lib = DynLib::open(names, folders, &reason);
    if (!api->lib) {
      reason = "NVRTC is missing: " + reason +
               "; install the CUDA toolkit's NVRTC or set GPIX_NVRTC_PATH";
      return std::unique_ptr<Nvrtc>();
    }
    const auto& l = api->lib;
    api->version = l.symbol<decltype(api->version)>("nvrtcVersion");
    api->create = l.symbol<decltype(api->create)>("nvrtcCreateProgram");
    api->destroy = l.symbol<decltype(api->destroy)>("nvrtcDestroyProgram");
    api->compile = l.symbol<decltype(api->compile)>("nvrtcCompileProgram");
    api->log_size = l.symbol<decltype(api->log_size)>("nvrtcGetProgramLogSize");
    api->log = l.symbol<decltype(api->log)>("nvrtcGetProgramLog");
    api->cubin_size = l.symbol<decltype(api->cubin_size)>("nvrtcGetCUBINSize");
    api->cubin = l.symbol<decltype(api->cubin)>("nvrtcGetCUBIN");
    api->error_string = l.symbol<decltype(api->error_string)>("nvrtcGetErrorString");
    api->ptx_size = l.symbol<decltype(api->ptx_size)>("nvrtcGetPTXSize");
    api->ptx = l.symbol<decltype(api->ptx)>("nvrtcGetPTX");
    api->num_archs = l.symbol<decltype(api->num_archs)>("nvrtcGetNumSupportedArchs");
    api->archs_list = l.symbol<decltype(api->archs_list)>("nvrtcGetSupportedArchs");
    if (!api->version || !api->create || !api->destroy || !api->compile || !api->log_size ||
        !api->log || !api->cubin_size || !api->cubin || !api->error_string || !api->ptx_size ||
        !api->ptx) {
      reason =
          api->lib.path() + " lacks NVRTC functions gpix needs (NVRTC 11.2 or newer is required)";
      return std::unique_ptr<Nvrtc>();
    }
    int count = 0;
    if (api->num_archs && api->archs_list && api->num_archs(&count) == NVRTC_SUCCESS && count > 0) {
      api->archs.resize(static_cast<std::size_t>(count));
      if (api->archs_list(api->archs.data()) != NVRTC_SUCCESS) api->archs.clear();
    }
    std::unique_ptr<Nvrtc> n(new Nvrtc);
    n->api_ = api.release();
    return n;
  }();
  if (!instance && why) *why = reason;
  return instance.get();
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

const std::vector<int>& Nvrtc::supported_archs() const {
  return api_->archs;
}

bool Nvrtc::has_fast_compile() const {
  int major = 0, minor = 0;
  api_->version(&major, &minor);
  return major > 12 || (major == 12 && minor >= 8);
}

std::vector<char> Nvrtc::compile(const ProgramSource& src, const Defines& defines, int arch,
                                 Opt opt) const {
  return run(src, defines, "sm_" + std::to_string(arch), false, opt);
}

std::vector<char> Nvrtc::compile_ptx(const ProgramSource& src, const Defines& defines,
                                     int arch) const {
  return run(src, defines, "compute_" + std::to_string(arch), true, Opt::full);
}

std::vector<char> Nvrtc::run(const ProgramSource& src, const Defines& defines,
                             const std::string& gpu_arch, bool ptx, Opt opt) const {
  nvrtcProgram prog = nullptr;
  nvrtcResult r = api_->create(&prog, src.text.c_str(), src.name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    throw CompileError("NVRTC could not create a program for " + src.name, {},
                       api_->error_string(r));
  }
  struct Guard {
    const Api* a;
    nvrtcProgram* p;
    ~Guard() { a->destroy(p); }
  } guard{api_, &prog};
  std::vector<std::string> opts = {"--gpu-architecture=" + gpu_arch, "--std=c++17",
                                   "-default-device",
                                   // Unused dialect helpers are expected in every program.
                                   "-diag-suppress=177"};
  // "mid", not "max": neighbourhood.kernel's 18 programs (sm_90) took 14 s with mid, 18 with max
  // and 35 at full optimisation; the whole catalog 100 CPU-s with mid.
  if (opt == Opt::fast_compile && has_fast_compile()) opts.emplace_back("--Ofast-compile=mid");
  for (const auto& [k, v] : defines) opts.push_back("-D" + k + "=" + v);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  std::string joined;
  for (const auto& o : opts) joined += (joined.empty() ? "" : " ") + o;
  r = api_->compile(prog, static_cast<int>(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    std::size_t n = 0;
    std::string log;
    if (api_->log_size(prog, &n) == NVRTC_SUCCESS && n > 0) {
      log.assign(n, '\0');
      if (api_->log(prog, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && log.back() == '\0') log.pop_back();
    }
    throw CompileError("NVRTC " + version() + " could not compile " + src.name + " with '" +
                           joined + "'; the build log follows the message",
                       log, api_->error_string(r));
  }
  std::size_t size = 0;
  r = ptx ? api_->ptx_size(prog, &size) : api_->cubin_size(prog, &size);
  std::vector<char> out(size);
  if (r == NVRTC_SUCCESS) r = ptx ? api_->ptx(prog, out.data()) : api_->cubin(prog, out.data());
  if (r != NVRTC_SUCCESS || size == 0) {
    throw CompileError("NVRTC compiled " + src.name + " with '" + joined + "' but returned no " +
                           (ptx ? "PTX" : "cubin"),
                       {}, r != NVRTC_SUCCESS ? api_->error_string(r) : "");
  }
  return out;
}

}  // namespace gpix::detail
