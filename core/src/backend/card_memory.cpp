#include "backend/card_memory.h"

#include <algorithm>
#include <cstdio>

#include "util.h"

namespace gpix::detail {

std::string PciAddress::str() const {
  if (!known()) return "unknown";
  char buf[80];
  if (domain >= 0) {
    std::snprintf(buf, sizeof buf, "%04llx:%02llx:%02llx", static_cast<unsigned long long>(domain),
                  static_cast<unsigned long long>(bus), static_cast<unsigned long long>(device));
  } else {
    std::snprintf(buf, sizeof buf, "?:%02llx:%02llx", static_cast<unsigned long long>(bus),
                  static_cast<unsigned long long>(device));
  }
  return buf;
}

PciAddress pci_from_nv_opencl(std::uint32_t bus, std::uint32_t slot,
                              std::optional<std::uint32_t> domain) {
  PciAddress a;
  a.bus = bus & 0xffu;
  a.device = (slot >> 3) & 0x1fu;  // the low 3 bits are the PCI function
  a.raw_slot = slot;
  if (domain) a.domain = *domain;
  return a;
}

bool same_card(const PciAddress& a, const PciAddress& b) noexcept {
  if (!a.known() || !b.known()) return false;
  if (a.bus != b.bus || a.device != b.device) return false;
  return a.domain < 0 || b.domain < 0 || a.domain == b.domain;
}

std::uint64_t free_memory_margin(std::uint64_t total) noexcept {
  return std::max<std::uint64_t>(std::uint64_t{512} << 20, total / 64);
}

std::string refuse_beyond_free(std::uint64_t bytes, std::uint64_t free, std::uint64_t total) {
  const std::uint64_t margin = free_memory_margin(total);
  const std::uint64_t usable = free > margin ? free - margin : 0;
  if (bytes <= usable) return {};
  return "only " + human(free) + " of " + human(total) +
         " are free on the card (CUDA's count, which includes other processes), and gpix keeps " +
         human(margin) + " of it for the driver";
}

}  // namespace gpix::detail
