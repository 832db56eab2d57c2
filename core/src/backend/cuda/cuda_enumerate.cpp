// The CUDA backend's devices: one CudaDevice per ordinal that the driver and NVRTC can serve.
#include <cctype>
#include <fstream>

#include "backend/cuda/cuda_device.h"
#include "kernel_bundle.h"

namespace gpix::detail::cuda {

namespace {

// The NVIDIA kernel module's version ("580.159.04"), which is what users know as the driver
// version; empty where /proc does not say.
std::string kernel_module_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!f || !std::getline(f, line)) return {};
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  <date>" (or "Open Kernel
  // Module for x86_64  580...."): the first token after "Module" that starts with a digit.
  const auto pos = line.find("Module");
  if (pos == std::string::npos) return {};
  std::size_t i = pos;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    const std::string tok = line.substr(i, j - i);
    if (!tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])) &&
        tok.find('.') != std::string::npos) {
      return tok;
    }
    i = j;
  }
  return {};
}

int attribute(const cuda::Driver& d, CUdevice dev, CUdevice_attribute a, const char* what) {
  int v = 0;
  check(d.cuDeviceGetAttribute(&v, a, dev), std::string("querying ") + what);
  return v;
}

std::shared_ptr<DeviceImpl> make_device(const cuda::Driver& d, const Nvrtc& nvrtc, int ordinal,
                                        const std::string& module_version, std::string& why) {
  CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, ordinal), "getting CUDA device " + std::to_string(ordinal));
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof name - 1, dev), "querying the device name");
  DeviceInfo info;
  info.backend = Backend::cuda;
  info.name = trim(name);
  info.vendor = "NVIDIA";
  info.platform = "CUDA";
  info.type = DeviceType::gpu;
  info.compute_units = static_cast<unsigned>(
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "the multiprocessor count"));
  std::size_t total = 0;
  check(d.cuDeviceTotalMem(&total, dev), "querying the device memory");
  info.global_memory = total;
  info.max_allocation = total;  // CUDA has no separate single-allocation limit
  info.local_memory = static_cast<std::uint64_t>(attribute(
      d, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "the shared memory per block"));
  info.max_work_group = static_cast<std::size_t>(
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "the threads per block"));
  info.fp64 = true;
  info.images = true;
  // Managed memory stands in for OpenCL's shared virtual memory.
  info.svm = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "managed memory support") != 0;
  const int major =
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability");
  const int minor =
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability");
  info.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  info.api_version = "CUDA " + cuda::version_text(d.version);
  info.driver_version =
      module_version.empty() ? "CUDA " + cuda::version_text(d.version) : module_version;

  Target target;
  if (!choose_target(nvrtc, major * 10 + minor, target, why)) return nullptr;

  auto ctx = std::make_shared<const Context>(d, dev);
  ContextScope scope(*ctx);
  CUstream s = nullptr;
  // Non-blocking: the stream does not synchronise with the legacy default stream, which
  // other libraries in the process may use.
  check(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "creating a stream");
  cuda::Stream stream(s);
  auto device = std::make_shared<CudaDevice>(std::move(info), std::move(ctx), std::move(stream),
                                             nvrtc, target, ordinal);
  // The card's PCI address, so that NVIDIA's OpenCL device of the same card can be matched
  // (card_memory.h). Optional: a driver that does not answer leaves it unknown.
  int bus = -1, slot = -1, domain = -1;
  if (d.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) == CUDA_SUCCESS &&
      d.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) == CUDA_SUCCESS) {
    PciAddress a;
    a.bus = bus;
    a.device = slot;
    if (d.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) == CUDA_SUCCESS)
      a.domain = domain;
    device->set_pci(a);
  }
  return device;
}

}  // namespace
}  // namespace gpix::detail::cuda

namespace gpix::detail {

BackendDevices enumerate_cuda() {
  BackendDevices out;
  out.status.backend = Backend::cuda;
  std::string why;
  const cuda::Driver* d = cuda::driver(&why);
  if (!d) {
    out.status.detail = why;
    return out;
  }
  const std::string version = cuda::version_text(d->version);
  const Nvrtc* nvrtc = Nvrtc::get(&why);
  if (!nvrtc) {
    out.status.detail = "the CUDA " + version + " driver loaded, but " + why;
    return out;
  }
  int count = 0;
  if (CUresult r = d->cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    out.status.detail = "the CUDA " + version + " driver reports no device" +
                        (r != CUDA_SUCCESS ? " (" + cuda::error_name(r) + ")" : std::string());
    return out;
  }
  const std::string module_version = cuda::kernel_module_version();
  std::vector<std::string> problems;
  for (int i = 0; i < count; ++i) {
    std::string reason;
    try {
      if (auto dev = cuda::make_device(*d, *nvrtc, i, module_version, reason)) {
        out.devices.push_back(std::move(dev));
      } else {
        problems.push_back("device " + std::to_string(i) + ": " + reason);
      }
    } catch (const Error& e) {
      problems.push_back("device " + std::to_string(i) + ": " + e.what());
    }
  }
  out.status.devices = out.devices.size();
  out.status.available = !out.devices.empty();
  out.status.detail = "CUDA " + version + " driver" +
                      (module_version.empty() ? std::string() : " " + module_version) + ", NVRTC " +
                      nvrtc->version() + ", " + std::to_string(out.devices.size()) +
                      " usable device(s)";
  // Whether first calls load prebuilt kernels or compile: users see it in `gpix devices` and
  // the devices panel, so a slow first filter is never a mystery.
  if (!out.devices.empty()) {
    const auto bundle = KernelBundle::process_bundle();
    std::string prebuilt;
    if (bundle) {
      for (const auto& t : bundle->targets()) prebuilt += (prebuilt.empty() ? "" : " ") + t;
    }
    out.status.detail += prebuilt.empty()
                             ? "; no prebuilt kernels (each program compiles on first use)"
                             : "; prebuilt kernels: " + prebuilt;
  }
  for (const auto& p : problems) out.status.detail += "; " + p;
  return out;
}

}  // namespace gpix::detail
