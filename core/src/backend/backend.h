#pragma once
// The internal backend interface. Each API (OpenCL, CUDA) implements DeviceImpl; nothing here
// names an OpenCL or CUDA type, and nothing of it appears in a public header.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpix/device.h"

namespace gpix::detail {

// One device allocation of bytes() bytes.
class Memory {
 public:
  explicit Memory(std::size_t bytes) : bytes_(bytes) {}
  virtual ~Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  std::size_t bytes() const noexcept { return bytes_; }
  // The allocation's address in the API's unified address space (a CUdeviceptr on CUDA), for
  // exchange with other frameworks (DLPack). 0 where there is none: OpenCL buffers have no
  // address outside their context.
  virtual std::uint64_t native_pointer() const noexcept { return 0; }

 private:
  std::size_t bytes_;
};

// One argument of a kernel launch: a device allocation or a scalar of up to 8 bytes.
struct KernelArg {
  const Memory* memory = nullptr;
  std::array<std::byte, 8> value{};
  std::size_t size = 0;

  static KernelArg mem(const Memory& m) {
    KernelArg a;
    a.memory = &m;
    return a;
  }
  template <class T>
  static KernelArg scalar(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    KernelArg a;
    std::memcpy(a.value.data(), &v, sizeof(T));
    a.size = sizeof(T);
    return a;
  }
};

// Compile-time defines for a kernel build: {"T", "gpix_f32"} becomes -DT=gpix_f32.
using Defines = std::vector<std::pair<std::string, std::string>>;

// A kernel source (the dialect is prepended by the caller) and a stable hash of it.
struct ProgramSource {
  std::string name;  // for messages, e.g. "stats.kernel"
  std::string text;
  std::string hash;
};

// A compiled program's entry point, owned by the device's program cache.
class Kernel {
 public:
  virtual ~Kernel() = default;
};

// Work size in OpenCL terms: global is the total number of work-items per axis (a multiple
// of local), local the work-group size. Kernels bounds-check.
struct Launch {
  int dims = 1;
  std::array<std::size_t, 3> global{1, 1, 1};
  std::array<std::size_t, 3> local{1, 1, 1};
};

class DeviceImpl {
 public:
  explicit DeviceImpl(DeviceInfo info) : info_(std::move(info)) {}
  virtual ~DeviceImpl() = default;
  DeviceImpl(const DeviceImpl&) = delete;
  DeviceImpl& operator=(const DeviceImpl&) = delete;

  const DeviceInfo& info() const noexcept { return info_; }
  void set_index(int i) { info_.index = i; }

  // Allocation made resident at once, so that out-of-memory shows up here. Throws OutOfMemory.
  virtual std::unique_ptr<Memory> allocate(std::size_t bytes) = 0;
  // Blocking transfers.
  virtual void write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual void read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) = 0;
  virtual void copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
                    std::size_t bytes) = 0;
  // Repeats pattern (1, 2, 4 or 8 bytes) over [offset, offset + bytes).
  virtual void fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
                    std::size_t pattern_bytes) = 0;
  virtual void launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) = 0;
  virtual void finish() = 0;

  // Interop (DLPack). The API's own device number (the CUDA ordinal), or -1 where the backend
  // has no process-wide device numbering.
  virtual int native_ordinal() const noexcept { return -1; }
  // Wraps memory allocated by someone else at native_pointer-style address `pointer` of
  // `bytes` bytes, without copying; `release` is called once when the Memory is destroyed.
  // Throws (DeviceError by default: the backend cannot adopt foreign memory) without calling
  // release, so the caller keeps ownership on failure.
  virtual std::unique_ptr<Memory> adopt(std::uint64_t pointer, std::size_t bytes,
                                        std::function<void()> release);

  // The kernel `name` of src built with defines, compiled once per device and cached in
  // memory and on disk (program_cache.h). Throws CompileError with the build log.
  const Kernel& kernel(const ProgramSource& src, std::string_view name, const Defines& defines);

  struct CacheCounters {
    std::uint64_t memory_hits = 0, disk_hits = 0, compiles = 0, disk_rejected = 0, disk_writes = 0;
  };
  CacheCounters cache_counters();
  // Drops the in-memory programs (kernels handed out before stay valid until the device dies
  // only if nobody calls this while they are in use: tests and benchmarks only).
  void clear_memory_cache();

 protected:
  // A built program that hands out its kernels.
  class Program {
   public:
    virtual ~Program() = default;
    virtual std::unique_ptr<Kernel> create_kernel(std::string_view name) = 0;
    // The device binary for the disk cache; empty where the backend cannot provide one.
    virtual std::vector<char> binary() const { return {}; }
  };
  virtual std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) = 0;
  // A program from a binary that binary() produced on this device and driver; nullptr when
  // the backend rejects it (it is then rebuilt from source).
  virtual std::unique_ptr<Program> load(const std::vector<char>& /*binary*/) { return nullptr; }

 private:
  DeviceInfo info_;
  std::mutex cache_mutex_;
  CacheCounters counters_;
  struct Entry {
    std::unique_ptr<Program> program;
    std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels;
  };
  std::map<std::string, Entry, std::less<>> programs_;  // key: source hash + defines
};

// Every backend's devices, as the backends enumerate them.
struct BackendDevices {
  BackendStatus status;
  std::vector<std::shared_ptr<DeviceImpl>> devices;
};
BackendDevices enumerate_opencl();
BackendDevices enumerate_cuda();

}  // namespace gpix::detail
