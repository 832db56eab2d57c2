#pragma once
// Devices of every backend that loads. A Device is a cheap, copyable handle; devices live as
// long as the process.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpix {

namespace detail {
class DeviceImpl;
struct Access;
}  // namespace detail

enum class Backend : std::uint8_t { opencl, cuda };
enum class DeviceType : std::uint8_t { gpu, cpu, accelerator, other };

std::string_view name(Backend b);     // "opencl", "cuda"
std::string_view name(DeviceType t);  // "GPU", "CPU", "accelerator", "other"

struct DeviceInfo {
  Backend backend = Backend::opencl;
  std::string name;  // as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  std::string vendor;
  std::string platform;  // OpenCL platform name; "CUDA" for CUDA devices
  DeviceType type = DeviceType::other;
  unsigned compute_units = 0;        // OpenCL compute units / CUDA multiprocessors
  std::uint64_t global_memory = 0;   // bytes
  std::uint64_t max_allocation = 0;  // largest single allocation in bytes
  std::uint64_t local_memory = 0;    // bytes of local (shared) memory per work-group
  std::size_t max_work_group = 0;    // work-items per work-group
  bool fp64 = false;                 // double precision supported
  bool images = false;               // image objects / textures supported
  bool svm = false;                  // coarse-grain shared virtual memory (OpenCL 2.0+)
  std::string api_version;           // "OpenCL 3.0 PoCL ..." / "CUDA 13.0"
  std::string driver_version;
  std::string compute_capability;  // "9.0" on CUDA, empty on OpenCL
  int index = 0;                   // position within devices()
};

class Device {
 public:
  Device() = default;  // a null device; valid() is false

  bool valid() const noexcept { return impl_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  const DeviceInfo& info() const;  // throws InvalidArgument on a null device
  const std::string& name() const { return info().name; }
  Backend backend() const { return info().backend; }
  // A stable label such as "opencl:NVIDIA H100 80GB HBM3" that select_device() accepts.
  std::string label() const;
  // The card's PCI address ("domain:bus:device" in hex) where the driver reports it (CUDA,
  // NVIDIA's OpenCL), else "unknown"; equal addresses are the same card seen by two APIs.
  std::string pci_address() const;
  // Whether arrays of dtype f64 can live here: the device reports fp64 and GPIX_DISABLE_FP64
  // (a switch for testing what users of devices without fp64 see) is not set.
  bool supports_fp64() const;
  // Waits until all work queued on this device is done.
  void finish() const;

  friend bool operator==(const Device& a, const Device& b) noexcept { return a.impl_ == b.impl_; }

 private:
  explicit Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::DeviceImpl> impl_;
  friend struct detail::Access;
};

// Why a backend is or is not available, for `gpix devices` and the GUI's device panel.
struct BackendStatus {
  Backend backend;
  bool available = false;  // the API loaded and reported at least one platform/driver
  std::size_t devices = 0;
  std::string detail;  // e.g. "libcuda.so.1 not found: no NVIDIA driver installed"
};

// Every device of every backend that loads, enumerated once per process. Never throws:
// a backend that fails to load contributes no devices and says why in backend_status().
const std::vector<Device>& devices();
const std::vector<BackendStatus>& backend_status();

// The result of choose_device(): the device and, in words, why it was chosen.
struct DeviceChoice {
  Device device;
  std::string reason;
};

// Picks a device without side effects.
//  - "" : the GPU with the most memory (CUDA preferred over OpenCL for the same card);
//         with no GPU, a CPU device, and reason says so.
//  - "3": the device at that index of devices().
//  - "cuda:H100", "opencl:TX": backend prefix, then a case-insensitive substring of the name.
//  - "TX": a case-insensitive substring of the name; among several matches the best ranked.
// Throws DeviceError when no device matches (the message lists every device) or none exists.
DeviceChoice choose_device(std::string_view query = {});

// choose_device(query), and makes the result the default device for this process.
Device select_device(std::string_view query = {});

// The device chosen by the last select_device(), or select_device("") on first use.
Device default_device();

}  // namespace gpix
