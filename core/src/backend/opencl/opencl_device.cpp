// The OpenCL backend: one context and one in-order queue per device.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/opencl/cl.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail {
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

class ClMemory final : public Memory {
 public:
  ClMemory(std::size_t bytes, cl::Mem mem) : Memory(bytes), mem_(std::move(mem)) {}
  cl_mem get() const noexcept { return mem_.get(); }

 private:
  cl::Mem mem_;
};

cl_mem native(const Memory& m) {
  return static_cast<const ClMemory&>(m).get();
}

class ClKernel final : public Kernel {
 public:
  explicit ClKernel(cl::KernelHandle k) : k_(std::move(k)) {}
  cl_kernel get() const noexcept { return k_.get(); }

 private:
  cl::KernelHandle k_;
};

class ClDevice final : public DeviceImpl {
 public:
  ClDevice(DeviceInfo info, cl_device_id id, cl::Context ctx, cl::Queue queue)
      : DeviceImpl(std::move(info)), id_(id), ctx_(std::move(ctx)), queue_(std::move(queue)) {}

  std::unique_ptr<Memory> allocate(std::size_t bytes) override {
    if (bytes > info().max_allocation) {
      throw OutOfMemory("cannot allocate " + human(bytes) + " on '" + info().name +
                            "': its largest single allocation is " + human(info().max_allocation) +
                            " (total memory " + human(info().global_memory) +
                            "); use a smaller image or a device with more memory",
                        bytes);
    }
    cl_int err = CL_SUCCESS;
    cl::Mem mem(clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
    if (err != CL_SUCCESS) throw_oom(bytes, err);
    // OpenCL allocates lazily; touching the last byte makes the buffer resident now, so
    // out-of-memory surfaces here and not in some later kernel.
    const unsigned char zero = 0;
    err = clEnqueueFillBuffer(queue_.get(), mem.get(), &zero, 1, bytes - 1, 1, 0, nullptr, nullptr);
    if (err == CL_SUCCESS) err = clFinish(queue_.get());
    if (err != CL_SUCCESS) throw_oom(bytes, err);
    return std::make_unique<ClMemory>(bytes, std::move(mem));
  }

  void write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    cl::check(clEnqueueWriteBuffer(queue_.get(), native(dst), CL_TRUE, offset, bytes, src, 0,
                                   nullptr, nullptr),
              "writing " + human(bytes) + " to '" + info().name + "'");
  }

  void read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    cl::check(clEnqueueReadBuffer(queue_.get(), native(src), CL_TRUE, offset, bytes, dst, 0,
                                  nullptr, nullptr),
              "reading " + human(bytes) + " from '" + info().name + "'");
  }

  void copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
            std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    cl::check(clEnqueueCopyBuffer(queue_.get(), native(src), native(dst), src_offset, dst_offset,
                                  bytes, 0, nullptr, nullptr),
              "copying " + human(bytes) + " on '" + info().name + "'");
  }

  void fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
            std::size_t pattern_bytes) override {
    std::lock_guard lock(mutex_);
    cl::check(clEnqueueFillBuffer(queue_.get(), native(dst), pattern, pattern_bytes, offset, bytes,
                                  0, nullptr, nullptr),
              "filling " + human(bytes) + " on '" + info().name + "'");
  }

  void launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) override {
    cl_kernel kernel = static_cast<const ClKernel&>(k).get();
    // clSetKernelArg is not thread-safe on one kernel object, so argument setting and the
    // enqueue happen under one lock.
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < args.size(); ++i) {
      cl_int err;
      if (args[i].memory) {
        cl_mem m = native(*args[i].memory);
        err = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof(cl_mem), &m);
      } else {
        err = clSetKernelArg(kernel, static_cast<cl_uint>(i), args[i].size, args[i].value.data());
      }
      cl::check(err, "setting kernel argument " + std::to_string(i));
    }
    cl::check(clEnqueueNDRangeKernel(queue_.get(), kernel, static_cast<cl_uint>(l.dims), nullptr,
                                     l.global.data(), l.local.data(), 0, nullptr, nullptr),
              "launching a kernel on '" + info().name + "'");
  }

  void finish() override {
    std::lock_guard lock(mutex_);
    cl::check(clFinish(queue_.get()), "waiting for '" + info().name + "'");
  }

 protected:
  class ClProgram final : public Program {
   public:
    explicit ClProgram(cl::ProgramHandle p) : p_(std::move(p)) {}
    std::vector<char> binary() const override {
      std::size_t size = 0;
      if (clGetProgramInfo(p_.get(), CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
              CL_SUCCESS ||
          size == 0) {
        return {};
      }
      std::vector<char> bin(size);
      unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
      if (clGetProgramInfo(p_.get(), CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) !=
          CL_SUCCESS) {
        return {};
      }
      return bin;
    }
    std::unique_ptr<Kernel> create_kernel(std::string_view name) override {
      cl_int err = CL_SUCCESS;
      std::string n(name);
      cl::KernelHandle k(clCreateKernel(p_.get(), n.c_str(), &err));
      cl::check(err, "creating kernel '" + n + "'");
      return std::make_unique<ClKernel>(std::move(k));
    }

   private:
    cl::ProgramHandle p_;
  };

  std::unique_ptr<Program> load(const std::vector<char>& bin) override {
    const std::size_t size = bin.size();
    const auto* ptr = reinterpret_cast<const unsigned char*>(bin.data());
    cl_int status = CL_SUCCESS;
    cl_int err = CL_SUCCESS;
    cl::ProgramHandle p(clCreateProgramWithBinary(ctx_.get(), 1, &id_, &size, &ptr, &status, &err));
    if (err != CL_SUCCESS || status != CL_SUCCESS) return nullptr;
    if (clBuildProgram(p.get(), 1, &id_, nullptr, nullptr, nullptr) != CL_SUCCESS) return nullptr;
    return std::make_unique<ClProgram>(std::move(p));
  }

  std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) override {
    const char* text = src.text.c_str();
    const std::size_t length = src.text.size();
    cl_int err = CL_SUCCESS;
    cl::ProgramHandle p(clCreateProgramWithSource(ctx_.get(), 1, &text, &length, &err));
    cl::check(err, "creating program " + src.name);
    std::string options = "-cl-std=CL1.2";
    for (const auto& [k, v] : defines) options += " -D" + k + "=" + v;
    err = clBuildProgram(p.get(), 1, &id_, options.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      std::size_t n = 0;
      clGetProgramBuildInfo(p.get(), id_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      clGetProgramBuildInfo(p.get(), id_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      throw CompileError("OpenCL could not compile " + src.name + " with options '" + options +
                             "' for '" + info().name + "': " + cl::error_name(err) +
                             "; the build log follows the message",
                         trim(log), cl::error_name(err));
    }
    return std::make_unique<ClProgram>(std::move(p));
  }

 private:
  [[noreturn]] void throw_oom(std::size_t bytes, cl_int err) {
    throw OutOfMemory(
        "cannot allocate " + human(bytes) + " on '" + info().name + "': " + cl::error_name(err) +
            " (total memory " + human(info().global_memory) + ", largest allocation " +
            human(info().max_allocation) + "); free arrays, use smaller images or another device",
        bytes, cl::error_name(err));
  }

  cl_device_id id_;
  cl::Context ctx_;
  cl::Queue queue_;
  std::mutex mutex_;
};

DeviceType to_type(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return DeviceType::gpu;
  if (t & CL_DEVICE_TYPE_CPU) return DeviceType::cpu;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return DeviceType::accelerator;
  return DeviceType::other;
}

}  // namespace

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
      info.api_version = device_string(id, CL_DEVICE_VERSION);
      info.driver_version = device_string(id, CL_DRIVER_VERSION);
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
      out.devices.push_back(
          std::make_shared<ClDevice>(std::move(info), id, std::move(ctx), std::move(q)));
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
