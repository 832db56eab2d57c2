#include "gpix/device.h"

#include <algorithm>
#include <charconv>
#include <mutex>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix {

namespace detail {

DeviceImpl& Access::impl(const Device& d) {
  if (!d.impl_)
    throw InvalidArgument("a null gpix::Device was used; pick one with select_device()");
  return *d.impl_;
}

namespace {

struct Registry {
  std::vector<Device> devices;
  std::vector<BackendStatus> status;
};

// Hands each OpenCL device the CUDA device of the same card (matched by PCI address) as its
// source of the card's free memory; the OpenCL backend uses it for the nvidia-opencl-oom
// workaround. A failing query answers "unknown", and the backend then asks the driver as
// before.
void link_cards(const std::vector<std::shared_ptr<DeviceImpl>>& devs) {
  // The CUDA device of an OpenCL device's card: by the slot read as device << 3 | function,
  // else by the slot read as the device number (see PciAddress::raw_slot).
  const auto find = [&](const PciAddress& a) -> std::shared_ptr<DeviceImpl> {
    for (const auto& cu : devs) {
      if (cu->info().backend == Backend::cuda && same_card(a, cu->pci_address())) return cu;
    }
    return nullptr;
  };
  for (const auto& cl : devs) {
    if (cl->info().backend != Backend::opencl || !cl->pci_address().known()) continue;
    std::shared_ptr<DeviceImpl> cu = find(cl->pci_address());
    if (!cu && cl->pci_address().raw_slot >= 0) cu = find(cl->pci_address().slot_as_device());
    if (!cu) continue;
    cl->set_card_memory_source([w = std::weak_ptr<DeviceImpl>(cu)]() -> NativeMemoryInfo {
      const auto d = w.lock();
      if (!d) return {};
      try {
        return d->native_memory_info();
      } catch (const Error&) {
        return {};
      }
    });
  }
}

struct Part {
  BackendStatus status;
  std::vector<std::shared_ptr<DeviceImpl>> impls;
  std::vector<Device> devices;
};

Part enumerate_part(BackendDevices (*enumerate)(), Backend backend, std::size_t first_index) {
  Part p;
  BackendDevices b;
  try {
    b = enumerate();
  } catch (const std::exception& e) {
    b.status.backend = backend;
    b.status.detail = std::string("failed to enumerate: ") + e.what();
  }
  p.status = b.status;
  for (auto& d : b.devices) {
    d->set_index(static_cast<int>(first_index + p.devices.size()));
    p.impls.push_back(d);
    p.devices.push_back(Access::device(std::move(d)));
  }
  return p;
}

// CUDA on its own: a `cuda:` query needs nothing else, and NVIDIA's OpenCL driver takes a
// large part of process start -> first device ready (bench_startup) to initialise its
// platform. CUDA devices come first in devices(), so their indices are the same either way.
const Part& cuda_part() {
  static const Part p = enumerate_part(&enumerate_cuda, Backend::cuda, 0);
  return p;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    // CUDA first: where both backends see a card, the native API is listed (and ranked) first.
    const Part& cu = cuda_part();
    Part cl = enumerate_part(&enumerate_opencl, Backend::opencl, cu.devices.size());
    reg.status = {cu.status, cl.status};
    reg.devices = cu.devices;
    reg.devices.insert(reg.devices.end(), cl.devices.begin(), cl.devices.end());
    std::vector<std::shared_ptr<DeviceImpl>> impls = cu.impls;
    impls.insert(impls.end(), cl.impls.begin(), cl.impls.end());
    link_cards(impls);
    return reg;
  }();
  return r;
}

// The memory of the card a device sits on: the most that any device of the same name and
// type reports. CUDA and NVIDIA's OpenCL may report slightly different sizes for one card;
// ranking both on the card's figure lets the CUDA tie-break below decide between them.
std::uint64_t card_memory(const Device& d, const std::vector<Device>& among) {
  std::uint64_t m = d.info().global_memory;
  for (const Device& e : among) {
    if (e.info().type == d.info().type && e.name() == d.name())
      m = std::max(m, e.info().global_memory);
  }
  return m;
}

// Higher is better: GPUs first, then memory, then CUDA over OpenCL for the same card.
auto rank(const Device& d, const std::vector<Device>& among) {
  const DeviceInfo& i = d.info();
  return std::tuple(i.type == DeviceType::gpu, i.type != DeviceType::cpu, card_memory(d, among),
                    i.backend == Backend::cuda, -i.index);
}

std::string list_devices() {
  std::string s;
  for (const Device& d : devices()) {
    s += "\n  [" + std::to_string(d.info().index) + "] " + d.label() + " (" +
         std::string(name(d.info().type)) + ")";
  }
  if (s.empty()) s = " none";
  return s;
}

std::mutex g_default_mutex;
Device g_default;

}  // namespace
}  // namespace detail

std::string_view name(Backend b) {
  return b == Backend::cuda ? "cuda" : "opencl";
}

std::string_view name(DeviceType t) {
  switch (t) {
    case DeviceType::gpu:
      return "GPU";
    case DeviceType::cpu:
      return "CPU";
    case DeviceType::accelerator:
      return "accelerator";
    case DeviceType::other:
      break;
  }
  return "other";
}

const DeviceInfo& Device::info() const {
  return detail::Access::impl(*this).info();
}

std::string Device::label() const {
  return std::string(gpix::name(backend())) + ":" + info().name;
}

std::string Device::pci_address() const {
  (void)info();  // the null-device check
  return detail::Access::impl(*this).pci_address().str();
}

bool Device::supports_fp64() const {
  return info().fp64 && !detail::config().disable_fp64;
}

void Device::finish() const {
  detail::Access::impl(*this).finish();
}

const std::vector<Device>& devices() {
  return detail::registry().devices;
}

const std::vector<BackendStatus>& backend_status() {
  return detail::registry().status;
}

DeviceChoice choose_device(std::string_view query) {
  std::string q = detail::trim(query);
  // A `cuda:` query that CUDA answers never starts the OpenCL platforms (see cuda_part).
  if (detail::lower(q).starts_with("cuda:")) {
    const auto& cu = detail::cuda_part().devices;
    const std::string needle = detail::lower(q).substr(5);
    std::vector<Device> matches;
    for (const Device& d : cu) {
      if (detail::lower(d.name()).find(needle) != std::string::npos) matches.push_back(d);
    }
    if (!matches.empty()) {
      const Device best =
          *std::max_element(matches.begin(), matches.end(), [&](const Device& a, const Device& b) {
            return detail::rank(a, matches) < detail::rank(b, matches);
          });
      std::string reason = "matches '" + q + "'";
      if (matches.size() > 1) {
        reason +=
            " (" + std::to_string(matches.size()) + " devices match; the best ranked was taken)";
      }
      return {best, reason};
    }
  }
  const auto& all = devices();
  if (all.empty()) {
    std::string why;
    for (const auto& s : backend_status())
      why += "\n  " + std::string(name(s.backend)) + ": " + s.detail;
    throw DeviceError("no gpix device is available:" + why);
  }
  if (q.empty()) {
    const Device best =
        *std::max_element(all.begin(), all.end(), [&](const Device& a, const Device& b) {
          return detail::rank(a, all) < detail::rank(b, all);
        });
    std::string reason = best.info().type == DeviceType::gpu
                             ? "the GPU with the most memory"
                             : "no GPU found, so the CPU device '" + best.name() +
                                   "' is used: filters will run much slower than on a GPU";
    return {best, reason};
  }
  // A plain index.
  int index = -1;
  auto [ptr, ec] = std::from_chars(q.data(), q.data() + q.size(), index);
  if (ec == std::errc() && ptr == q.data() + q.size()) {
    if (index < 0 || static_cast<std::size_t>(index) >= all.size()) {
      throw DeviceError("there is no device with index " + q +
                        "; the devices are:" + detail::list_devices());
    }
    return {all[static_cast<std::size_t>(index)], "device index " + q};
  }
  // Optional backend prefix.
  std::optional<Backend> backend;
  std::string needle = detail::lower(q);
  for (Backend b : {Backend::cuda, Backend::opencl}) {
    std::string prefix = std::string(name(b)) + ":";
    if (needle.starts_with(prefix)) {
      backend = b;
      needle = needle.substr(prefix.size());
    }
  }
  std::vector<Device> matches;
  for (const Device& d : all) {
    if (backend && d.backend() != *backend) continue;
    if (detail::lower(d.name()).find(needle) != std::string::npos) matches.push_back(d);
  }
  if (matches.empty()) {
    throw DeviceError("no device matches '" + q +
                      "' (a case-insensitive part of the name, optionally prefixed with "
                      "'cuda:' or 'opencl:', or an index); the devices are:" +
                      detail::list_devices());
  }
  const Device best =
      *std::max_element(matches.begin(), matches.end(), [&](const Device& a, const Device& b) {
        return detail::rank(a, all) < detail::rank(b, all);
      });
  std::string reason = "matches '" + q + "'";
  if (matches.size() > 1) {
    reason += " (" + std::to_string(matches.size()) + " devices match; the best ranked was taken)";
  }
  return {best, reason};
}

Device select_device(std::string_view query) {
  DeviceChoice c = choose_device(query);
  std::lock_guard lock(detail::g_default_mutex);
  detail::g_default = c.device;
  return c.device;
}

Device default_device() {
  {
    std::lock_guard lock(detail::g_default_mutex);
    if (detail::g_default.valid()) return detail::g_default;
  }
  return select_device();
}

}  // namespace gpix
