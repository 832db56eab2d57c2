// The OpenCL backend's devices: every device of every platform the ICD loader lists.
#include "backend/opencl/opencl_device.h"
#include "backend/opencl/opencl_svm.h"
#include "config.h"
#include "memory_pool.h"

namespace gpix::detail::cl {

namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  return trim(s);
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  return trim(s);
}

DeviceType to_type(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return DeviceType::gpu;
  if (t & CL_DEVICE_TYPE_CPU) return DeviceType::cpu;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return DeviceType::accelerator;
  return DeviceType::other;
}

}  // namespace
}  // namespace gpix::detail::cl

namespace gpix::detail {

using cl::ClDevice;
using cl::device_string;
using cl::device_value;
using cl::platform_string;
using cl::to_type;

// The work-group size every device must allow (the catalog's kernels launch 256 work-items).
constexpr std::size_t kMinWorkGroup = 256;

BackendDevices enumerate_opencl() {
  BackendDevices out;
  out.status.backend = Backend::opencl;
  cl_uint nplat = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &nplat);
  if (err != CL_SUCCESS || nplat == 0) {
    out.status.detail = "no OpenCL platform found (" + cl::error_name(err) +
                        "); install an OpenCL driver such as pocl-opencl-icd, or register a "
                        "vendor's ICD in /etc/OpenCL/vendors";
    return out;
  }
  std::vector<cl_platform_id> platforms(nplat);
  clGetPlatformIDs(nplat, platforms.data(), nullptr);
  std::vector<std::string> problems;
  for (cl_platform_id p : platforms) {
    const std::string pname = platform_string(p, CL_PLATFORM_NAME);
    cl_uint ndev = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev);
    if (err != CL_SUCCESS || ndev == 0) {
      problems.push_back(pname + ": no devices (" + cl::error_name(err) + ")");
      continue;
    }
    std::vector<cl_device_id> ids(ndev);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, ndev, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      DeviceInfo info;
      info.backend = Backend::opencl;
      info.name = device_string(id, CL_DEVICE_NAME);
      info.vendor = device_string(id, CL_DEVICE_VENDOR);
      info.platform = pname;
      info.type = to_type(device_value<cl_device_type>(id, CL_DEVICE_TYPE));
      info.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
      info.global_memory = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
      info.max_allocation = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.local_memory = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
      info.max_work_group = device_value<std::size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      info.fp64 = device_value<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
      info.images = device_value<cl_bool>(id, CL_DEVICE_IMAGE_SUPPORT) == CL_TRUE;
      info.svm = clsvm::svm_coarse_grain(id);
      info.api_version = device_string(id, CL_DEVICE_VERSION);
      info.driver_version = device_string(id, CL_DRIVER_VERSION);
      // gpix's kernels launch work-groups of 256 work-items (tiles, counts, scans), and
      // CUDA's limit is 1024; a device whose limit is lower would fail a launch mid-filter.
      if (info.max_work_group < kMinWorkGroup) {
        problems.push_back(info.name + ": its work-groups hold at most " +
                           std::to_string(info.max_work_group) + " work-items; gpix needs " +
                           std::to_string(kMinWorkGroup));
        continue;
      }
      cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                       reinterpret_cast<cl_context_properties>(p), 0};
      cl::Context ctx(clCreateContext(props, 1, &id, nullptr, nullptr, &err));
      if (err != CL_SUCCESS) {
        problems.push_back(info.name + ": cannot create a context (" + cl::error_name(err) + ")");
        continue;
      }
      cl::Queue q(clCreateCommandQueue(ctx.get(), id, 0, &err));
      if (err != CL_SUCCESS) {
        problems.push_back(info.name + ": cannot create a queue (" + cl::error_name(err) + ")");
        continue;
      }
      const bool nvidia = pname.find("NVIDIA") != std::string::npos;
      const bool pocl_basic =
          pname == "Portable Computing Language" && info.name.rfind("basic", 0) == 0;
      const std::uint64_t total = info.global_memory;
      auto dev = std::make_shared<ClDevice>(std::move(info), id, std::move(ctx), std::move(q));
      if (pocl_basic) dev->set_pocl_basic();
      if (pname == "Portable Computing Language") dev->set_pocl();
      if (nvidia) {
        dev->set_nvidia();
        // cl_nv_device_attribute_query: CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, _MINOR_NV.
        cl_uint major = 0, minor = 0;
        if (clGetDeviceInfo(id, 0x4000, sizeof major, &major, nullptr) == CL_SUCCESS &&
            clGetDeviceInfo(id, 0x4001, sizeof minor, &minor, nullptr) == CL_SUCCESS) {
          dev->set_nv_sm(static_cast<int>(major * 10 + minor));
        }
        // cl_nv_device_attribute_query: CL_DEVICE_PCI_BUS_ID_NV, _SLOT_ID_NV, _DOMAIN_ID_NV.
        cl_uint bus = 0, slot = 0, domain = 0;
        if (clGetDeviceInfo(id, 0x4008, sizeof bus, &bus, nullptr) == CL_SUCCESS &&
            clGetDeviceInfo(id, 0x4009, sizeof slot, &slot, nullptr) == CL_SUCCESS) {
          std::optional<std::uint32_t> dom;
          if (clGetDeviceInfo(id, 0x400A, sizeof domain, &domain, nullptr) == CL_SUCCESS)
            dom = domain;
          dev->set_pci(pci_from_nv_opencl(bus, slot, dom));
        }
      }
      // Named workaround "nvidia-opencl-oom": NVIDIA's OpenCL reports out-of-memory when a
      // new buffer is first touched and then refuses every later command in that context
      // (CL_INVALID_COMMAND_QUEUE, then -9999), so no recovery is possible once the driver
      // runs out. Where the CUDA driver sees the same card, the registry hands this device its
      // free-memory count (set_card_memory_source) and allocate() refuses what does not fit.
      // Otherwise gpix stops at 95% of the device's memory by its own accounting and raises
      // OutOfMemory itself, with the context intact (other processes' use is not seen then).
      // GPIX_DISABLE_WORKAROUNDS=nvidia-opencl-oom (or gpix::set_memory_limit) lifts both.
      if (nvidia && !config().workaround_disabled("nvidia-opencl-oom")) {
        dev->pool().set_limit(total / 100 * 95);
        dev->pool().set_limit_reason(
            "95% of the device's memory: NVIDIA's OpenCL cannot recover from running out, "
            "see the nvidia-opencl-oom workaround in docs/ARCHITECTURE.md");
      }
      out.devices.push_back(std::move(dev));
    }
  }
  out.status.devices = out.devices.size();
  out.status.available = !out.devices.empty();
  out.status.detail = std::to_string(nplat) + " platform(s), " +
                      std::to_string(out.devices.size()) + " usable device(s)";
  for (const auto& p : problems) out.status.detail += "; " + p;
  return out;
}

}  // namespace gpix::detail
