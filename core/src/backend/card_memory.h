#pragma once
// Knowing which card a device sits on, and whether an allocation still fits into what that
// card has free. Plain functions without API types, so the decisions are unit-tested without
// a GPU. Used by the OpenCL backend's named workaround "nvidia-opencl-oom": NVIDIA's OpenCL
// cannot recover from running out of device memory, but CUDA's cuMemGetInfo for the same
// physical card (matched by PCI address) tells beforehand whether a buffer fits.
#include <cstdint>
#include <optional>
#include <string>

namespace gpix::detail {

struct PciAddress {
  std::int64_t domain = -1;  // -1: not reported (older NVIDIA OpenCL drivers)
  std::int64_t bus = -1;
  std::int64_t device = -1;
  // NVIDIA OpenCL only: the raw CL_DEVICE_PCI_SLOT_ID_NV. Read as device << 3 | function
  // (device above), but driver 580 on an H200 VM answered the plain device number (CUDA saw
  // 00:06, the devfn reading gave 00:00), so the registry tries this reading second.
  std::int64_t raw_slot = -1;
  bool known() const noexcept { return bus >= 0 && device >= 0; }
  // The same address read with the raw slot as the device number (unknown without one).
  PciAddress slot_as_device() const noexcept {
    PciAddress a = *this;
    a.device = raw_slot;
    a.raw_slot = -1;
    return a;
  }
  std::string str() const;  // "0000:3b:00" or "?:3b:00" without a domain, "unknown"
};

// From cl_nv_device_attribute_query: CL_DEVICE_PCI_BUS_ID_NV (0x4008), CL_DEVICE_PCI_SLOT_ID_NV
// (0x4009, device << 3 | function) and, where the driver has it, CL_DEVICE_PCI_DOMAIN_ID_NV
// (0x400A).
PciAddress pci_from_nv_opencl(std::uint32_t bus, std::uint32_t slot,
                              std::optional<std::uint32_t> domain);

// The same card: bus and device equal, and the domains equal where both are known.
bool same_card(const PciAddress& a, const PciAddress& b) noexcept;

// What gpix keeps free on a card beyond a new buffer: the driver needs room for its own work
// (kernel launches, queues); max(512 MiB, 1/64 of the card).
std::uint64_t free_memory_margin(std::uint64_t total) noexcept;

// Empty when bytes fits into free minus the margin; otherwise why not, in words for an
// OutOfMemory message ("only 12.0 GB of 139.8 GB are free on the card ...").
std::string refuse_beyond_free(std::uint64_t bytes, std::uint64_t free, std::uint64_t total);

}  // namespace gpix::detail
