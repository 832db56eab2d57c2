#include "backend/cuda/driver.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "gpix/error.h"

namespace gpix::detail::cuda {

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

namespace {

// Where NVIDIA's container toolkit and some distributions put the driver library.
const std::vector<std::string>& driver_folders() {
  static const std::vector<std::string> f = {"/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu",
                                             "/usr/lib64", "/usr/lib/wsl/lib"};
  return f;
}

// Loads and initialises the driver. Returns nullptr and sets why on failure.
Driver* load(std::string& why) {
  auto d = std::make_unique<Driver>();
  if (const std::string& forced = config().cuda_library; !forced.empty()) {
    std::string err;
    d->lib = DynLib::open({forced}, {}, &err);
    if (!d->lib) {
      why = "GPIX_CUDA_LIBRARY=" + forced + ": " + err;
      return nullptr;
    }
  } else {
    std::string err;
    d->lib = DynLib::open({"libcuda.so.1", "libcuda.so"}, driver_folders(), &err);
    if (!d->lib) {
      if (err.ends_with(" not found")) {
        why = "libcuda.so.1 not found: no NVIDIA driver installed (searched the library path";
        for (const auto& f : driver_folders()) why += ", " + f;
        why += "; GPIX_CUDA_LIBRARY names the file to load)";
      } else {
        why = err + " (the NVIDIA driver library is present but does not load)";
      }
      return nullptr;
    }
  }
  const DynLib& l = d->lib;
  d->cuGetErrorName = l.symbol<decltype(d->cuGetErrorName)>("cuGetErrorName");
  d->cuInit = l.symbol<decltype(d->cuInit)>("cuInit");
  d->cuDriverGetVersion = l.symbol<decltype(d->cuDriverGetVersion)>("cuDriverGetVersion");
  if (!d->cuInit || !d->cuDriverGetVersion) {
    why = l.path() + " is not a CUDA driver library (it lacks cuInit or cuDriverGetVersion)";
    return nullptr;
  }
  // The version first: a driver too old for gpix may also fail cuInit for that reason.
  if (CUresult r = d->cuDriverGetVersion(&d->version); r != CUDA_SUCCESS) {
    why = "cuDriverGetVersion failed in " + l.path() + ": " + error_name(r);
    return nullptr;
  }
  if (d->version < kMinDriverVersion) {
    why = "the NVIDIA driver supports CUDA " + version_text(d->version) + " but gpix needs CUDA " +
          version_text(kMinDriverVersion) + " or newer; update the NVIDIA driver";
    return nullptr;
  }
  if (CUresult r = d->cuInit(0); r != CUDA_SUCCESS) {
    // error_name() cannot ask this driver yet (it is not published), so ask it here.
    const char* n = nullptr;
    std::string name = error_name(r);
    if (name.starts_with("CUDA_ERROR(") && d->cuGetErrorName &&
        d->cuGetErrorName(r, &n) == CUDA_SUCCESS && n) {
      name = n;
    }
    why = "cuInit failed in " + l.path() + ": " + name;
    if (r == CUDA_ERROR_NO_DEVICE) why += " (the driver is installed but sees no NVIDIA GPU)";
    if (r == CUDA_ERROR_STUB_LIBRARY) {
      why += " (this is the CUDA toolkit's stub library, not a driver; install the NVIDIA driver)";
    }
    if (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
      why +=
          " (the user-space driver does not match the kernel module; reboot or reinstall the "
          "driver)";
    }
    return nullptr;
  }
  std::string missing;
#define GPIX_CUDA_RESOLVE(fn, sym)        \
  d->fn = l.symbol<decltype(d->fn)>(sym); \
  if (!d->fn) missing += (missing.empty() ? "" : ", ") + std::string(sym);
  GPIX_CUDA_DRIVER_FUNCTIONS(GPIX_CUDA_RESOLVE)
#undef GPIX_CUDA_RESOLVE
#define GPIX_CUDA_RESOLVE_OPTIONAL(fn, sym) d->fn = l.symbol<decltype(d->fn)>(sym);
  GPIX_CUDA_OPTIONAL_FUNCTIONS(GPIX_CUDA_RESOLVE_OPTIONAL)
#undef GPIX_CUDA_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    why = l.path() + " (CUDA " + version_text(d->version) +
          ") lacks functions gpix needs: " + missing + "; update the NVIDIA driver";
    return nullptr;
  }
  return d.release();
}

const Driver* g_loaded = nullptr;  // set once, before any device exists

}  // namespace

const Driver* driver(std::string* why) {
  static std::string reason;
  // Deliberately never unloaded: handles owned by static objects may be released at exit, and
  // unloading libcuda while the driver still runs its own exit handlers is unsafe.
  static const Driver* const instance = [] {
    const Driver* d = load(reason);
    g_loaded = d;
    return d;
  }();
  if (!instance && why) *why = reason;
  return instance;
}

std::string error_name(CUresult code) {
  switch (code) {
#define GPIX_CU_CASE(c) \
  case c:               \
    return #c;
    GPIX_CU_CASE(CUDA_SUCCESS)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_VALUE)
    GPIX_CU_CASE(CUDA_ERROR_OUT_OF_MEMORY)
    GPIX_CU_CASE(CUDA_ERROR_NOT_INITIALIZED)
    GPIX_CU_CASE(CUDA_ERROR_DEINITIALIZED)
    GPIX_CU_CASE(CUDA_ERROR_STUB_LIBRARY)
    GPIX_CU_CASE(CUDA_ERROR_NO_DEVICE)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_DEVICE)
    GPIX_CU_CASE(CUDA_ERROR_DEVICE_NOT_LICENSED)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_IMAGE)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_CONTEXT)
    GPIX_CU_CASE(CUDA_ERROR_NO_BINARY_FOR_GPU)
    GPIX_CU_CASE(CUDA_ERROR_ECC_UNCORRECTABLE)
    GPIX_CU_CASE(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_PTX)
    GPIX_CU_CASE(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
    GPIX_CU_CASE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_SOURCE)
    GPIX_CU_CASE(CUDA_ERROR_FILE_NOT_FOUND)
    GPIX_CU_CASE(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)
    GPIX_CU_CASE(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)
    GPIX_CU_CASE(CUDA_ERROR_OPERATING_SYSTEM)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_HANDLE)
    GPIX_CU_CASE(CUDA_ERROR_NOT_FOUND)
    GPIX_CU_CASE(CUDA_ERROR_NOT_READY)
    GPIX_CU_CASE(CUDA_ERROR_ILLEGAL_ADDRESS)
    GPIX_CU_CASE(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    GPIX_CU_CASE(CUDA_ERROR_LAUNCH_TIMEOUT)
    GPIX_CU_CASE(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    GPIX_CU_CASE(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
    GPIX_CU_CASE(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)
    GPIX_CU_CASE(CUDA_ERROR_CONTEXT_IS_DESTROYED)
    GPIX_CU_CASE(CUDA_ERROR_ASSERT)
    GPIX_CU_CASE(CUDA_ERROR_HARDWARE_STACK_ERROR)
    GPIX_CU_CASE(CUDA_ERROR_ILLEGAL_INSTRUCTION)
    GPIX_CU_CASE(CUDA_ERROR_MISALIGNED_ADDRESS)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_ADDRESS_SPACE)
    GPIX_CU_CASE(CUDA_ERROR_INVALID_PC)
    GPIX_CU_CASE(CUDA_ERROR_LAUNCH_FAILED)
    GPIX_CU_CASE(CUDA_ERROR_NOT_PERMITTED)
    GPIX_CU_CASE(CUDA_ERROR_NOT_SUPPORTED)
    GPIX_CU_CASE(CUDA_ERROR_SYSTEM_NOT_READY)
    GPIX_CU_CASE(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
    GPIX_CU_CASE(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
    GPIX_CU_CASE(CUDA_ERROR_TIMEOUT)
    GPIX_CU_CASE(CUDA_ERROR_UNKNOWN)
#undef GPIX_CU_CASE
    default:
      break;
  }
  if (g_loaded && g_loaded->cuGetErrorName) {
    const char* n = nullptr;
    if (g_loaded->cuGetErrorName(code, &n) == CUDA_SUCCESS && n) return n;
  }
  return "CUDA_ERROR(" + std::to_string(static_cast<int>(code)) + ")";
}

void check(CUresult code, std::string_view what) {
  if (code == CUDA_SUCCESS) return;
  const std::string name = error_name(code);
  std::string msg = "CUDA failed while " + std::string(what) + ": " + name;
  if (code == CUDA_ERROR_OUT_OF_MEMORY) {
    throw OutOfMemory(msg +
                          " (the device ran out of memory; free arrays, use smaller images or "
                          "a device with more memory)",
                      0, name);
  }
  switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
      // These are sticky: the driver refuses every later call in this process's context.
      msg += " (a kernel faulted; the CUDA context is unusable until the process restarts)";
      break;
    default:
      break;
  }
  throw DeviceError(msg, name);
}

}  // namespace gpix::detail::cuda
