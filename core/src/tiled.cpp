// Slab-wise execution of catalog filters (gpix/tiled.h).
#include "gpix/tiled.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "filters/registry.h"
#include "filters/shared.h"
#include "gpix/array.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix {
namespace {

// Slab t of slabs of `per` planes over `planes` planes: it keeps planes [z0, z1) and loads
// [l0, l1), the kept planes with up to `halo` planes on each side.
struct SlabPlanes {
  std::size_t z0, z1, l0, l1;
};
SlabPlanes slab_planes(std::size_t t, std::size_t per, std::size_t planes, std::size_t halo) {
  const std::size_t z0 = t * per, z1 = std::min(planes, z0 + per);
  return {z0, z1, z0 >= halo ? z0 - halo : 0, std::min(planes, z1 + halo)};
}

// The box of `dims` (numpy order) spanning planes [from, to) of axis 0.
Region planes_box(const std::vector<std::size_t>& dims, std::size_t from, std::size_t to) {
  Region r{std::vector<std::size_t>(dims.size(), 0), dims};
  r.origin[0] = from;
  r.extent[0] = to - from;
  return r;
}

}  // namespace

// The halo rules and the reasons a filter does not tile live in the catalog rows
// (core/src/filters/*.cpp), beside the parameters they read.
TileInfo tile_info(std::string_view name) {
  const FilterInfo& info = filter(name);  // InvalidArgument with suggestions for a typo
  return {info.tiles, info.untiled};
}

std::size_t tile_halo(std::string_view name, int ndim, const Params& params) {
  return detail::entry(name).halo(ndim, params);
}

HostArray run_tiled(std::string_view name, std::span<const HostArray> inputs, const Params& params,
                    const TiledOptions& options) {
  const auto t_start = std::chrono::steady_clock::now();
  const FilterInfo& info = filter(name);
  const std::string who = "run_tiled: filter '" + info.name + "'";
  if (inputs.empty() || !inputs[0].valid()) throw InvalidArgument(who + " needs an input array");
  const Shape& shape = inputs[0].shape();
  for (const HostArray& h : inputs) {
    if (!h.valid() || !(h.shape() == shape)) {
      throw InvalidArgument(who + ": every input must have the first input's shape " + shape.str());
    }
  }
  const int ndim = static_cast<int>(shape.ndim());
  const std::size_t halo = tile_halo(name, ndim, params);

  // Slabs along axis 0 (numpy order: the slowest axis), each plane `plane` pixels.
  const std::size_t planes = shape[0];
  const std::size_t plane = shape.elements() / std::max<std::size_t>(planes, 1);
  std::size_t in_plane_bytes = 0, widest = 4;
  for (const HostArray& h : inputs) {
    in_plane_bytes += plane * size_of(h.dtype());
    widest = std::max(widest, size_of(h.dtype()));
  }
  // A slab holds its inputs, its output (at most 8 bytes a pixel, at least the widest
  // input) and the filter's intermediates (separable and two-pass filters keep one or two
  // arrays of the output's size): twice inputs plus output is the working set assumed.
  const std::size_t plane_cost = 2 * (in_plane_bytes + plane * widest);

  std::vector<Device> devices = options.devices;
  if (devices.empty()) devices.push_back(default_device());
  const std::size_t workers_per_device = std::max<std::size_t>(1, options.workers_per_device);
  std::size_t slab = planes;  // planes kept per slab, the same on every device
  for (const Device& d : devices) {
    const DeviceInfo& di = d.info();
    const std::uint64_t budget =
        options.budget_bytes ? options.budget_bytes
                             : std::min<std::uint64_t>(di.global_memory / 4, di.max_allocation);
    const std::uint64_t fit = budget / workers_per_device / std::max<std::size_t>(plane_cost, 1);
    if (fit < 2 * halo + 1) {
      throw InvalidArgument(
          who + " needs " + detail::human(plane_cost * (2 * halo + 1)) +
          " of device memory for one plane and its halo of " + std::to_string(halo) +
          " planes on each side; the budget on '" + d.label() + "' is " + detail::human(budget) +
          (workers_per_device > 1 ? " shared by " + std::to_string(workers_per_device) + " workers"
                                  : std::string()) +
          " (raise the budget, or use smaller radii)");
    }
    slab = std::min<std::size_t>(slab, static_cast<std::size_t>(fit - 2 * halo));
  }
  const std::size_t tiles = (planes + slab - 1) / slab;

  std::mutex mutex;
  HostArray out;  // allocated when the first slab's output dtype is known
  // Worker i starts with slab i, so every device starts at once (and each gets one where
  // there are enough slabs); then each takes the next free slab, so faster devices take more.
  const std::size_t workers = devices.size() * workers_per_device;
  std::size_t next = std::min(workers, tiles), done = 0;
  TiledReport report;
  report.halo = halo;
  report.planes_per_slab = slab;
  report.slabs = tiles;
  report.slabs_per_device.assign(devices.size(), 0);
  std::exception_ptr error;

  auto worker = [&](std::size_t worker_index) {
    const std::size_t device_index = worker_index % devices.size();
    const Device& device = devices[device_index];
    try {
      for (bool first = true;; first = false) {
        std::size_t t = 0;
        {
          std::lock_guard lock(mutex);
          if (error) return;
          if (first && worker_index < tiles) {
            t = worker_index;
          } else {
            if (next >= tiles) return;
            t = next++;
          }
        }
        if (options.cancel && options.cancel->load()) {
          throw Cancelled(who + " was cancelled after " + std::to_string(done) + " of " +
                          std::to_string(tiles) + " slabs");
        }
        const auto [z0, z1, l0, l1] = slab_planes(t, slab, planes, halo);
        std::vector<std::size_t> dims(shape.dims().begin(), shape.dims().end());
        dims[0] = l1 - l0;
        const Shape slab_shape{std::span<const std::size_t>(dims)};
        std::vector<Array> arrays;
        arrays.reserve(inputs.size());
        for (const HostArray& h : inputs) {
          Array a = Array::empty(slab_shape, h.dtype(), device);
          const std::size_t pb = plane * size_of(h.dtype());
          a.write(h.data() + l0 * pb, (l1 - l0) * pb);
          arrays.push_back(std::move(a));
        }
        RunOptions ro;
        ro.cancel = options.cancel;
        const Result r = run(name, arrays, params, ro);
        if (r.is_table() || !(r.array.shape() == slab_shape)) {
          throw Error("internal: " + who + " gave no array of the slab's shape");
        }
        std::byte* dst = nullptr;
        std::size_t ob = 0;
        {
          std::lock_guard lock(mutex);
          if (!out.valid()) {
            if (options.output) {
              if (!(options.output->shape() == shape) ||
                  options.output->dtype() != r.array.dtype()) {
                throw InvalidArgument(who + ": the output array must be " + shape.str() + " " +
                                      std::string(gpix::name(r.array.dtype())) + "; it is " +
                                      options.output->shape().str() + " " +
                                      std::string(gpix::name(options.output->dtype())));
              }
              out = *options.output;  // shares its pixels
            } else {
              out = HostArray::empty(shape, r.array.dtype());
            }
          }
          if (out.dtype() != r.array.dtype()) throw Error("internal: slabs of different dtypes");
          ob = plane * size_of(out.dtype());
          dst = out.data() + z0 * ob;
        }
        const Array interior =
            (l0 == z0 && l1 == z1) ? r.array : r.array.view(planes_box(dims, z0 - l0, z1 - l0));
        interior.read(dst, (z1 - z0) * ob);
        {
          std::lock_guard lock(mutex);
          ++done;
          ++report.slabs_per_device[device_index];
          report.bytes_in += (l1 - l0) * in_plane_bytes;
          report.bytes_out += (z1 - z0) * ob;
          if (options.progress)
            options.progress(static_cast<double>(done) / static_cast<double>(tiles));
        }
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
    }
  };

  if (workers == 1) {
    worker(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (std::size_t i = 0; i < workers; ++i) threads.emplace_back(worker, i);
    for (auto& th : threads) th.join();
  }
  if (error) std::rethrow_exception(error);
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  if (options.report) *options.report = report;
  return out;
}

Result run_in_slabs(std::string_view name, std::span<const Array> inputs, const Params& params,
                    const RunOptions& options, std::size_t slabs) {
  if (inputs.empty() || !inputs[0].valid() || !tile_info(name).tileable) {
    return run(name, inputs, params, options);
  }
  const Shape& shape = inputs[0].shape();
  for (const Array& a : inputs) {
    if (!a.valid() || !(a.shape() == shape) || !(a.device() == inputs[0].device())) {
      return run(name, inputs, params, options);  // run gives the precise error
    }
  }
  const int ndim = static_cast<int>(shape.ndim());
  const std::size_t halo = tile_halo(name, ndim, params);
  const std::size_t planes = shape[0];
  if (slabs == 0) {
    std::size_t bytes = 0;
    for (const Array& a : inputs) bytes += a.bytes();
    const std::size_t min_planes = std::max<std::size_t>(8 * halo, 1);
    slabs = bytes < (16u << 20) ? 1 : std::clamp<std::size_t>(planes / min_planes, 1, 32);
  }
  slabs = std::min(slabs, planes);
  if (slabs <= 1) return run(name, inputs, params, options);
  const std::size_t per = (planes + slabs - 1) / slabs;
  const std::size_t tiles = (planes + per - 1) / per;

  Array out;
  std::vector<std::size_t> dims(shape.dims().begin(), shape.dims().end());
  for (std::size_t t = 0; t < tiles; ++t) {
    if (options.cancel && options.cancel->load()) {
      throw Cancelled("filter '" + std::string(name) + "' was cancelled after " +
                      std::to_string(t) + " of " + std::to_string(tiles) + " slabs");
    }
    const auto [z0, z1, l0, l1] = slab_planes(t, per, planes, halo);
    std::vector<Array> views;
    views.reserve(inputs.size());
    for (const Array& a : inputs) views.push_back(a.view(planes_box(dims, l0, l1)));
    RunOptions ro;
    ro.cancel = options.cancel;
    if (options.progress) {
      ro.progress = [&, t](double f) {
        options.progress((static_cast<double>(t) + f) / static_cast<double>(tiles));
      };
    }
    const Result r = run(name, views, params, ro);
    if (!out.valid()) out = Array::empty(shape, r.array.dtype(), inputs[0].device());
    out.view(planes_box(dims, z0, z1)).copy_from(r.array.view(planes_box(dims, z0 - l0, z1 - l0)));
    if (options.progress) {
      options.progress(static_cast<double>(t + 1) / static_cast<double>(tiles));
    }
  }
  Result result;
  result.array = std::move(out);
  return result;
}

}  // namespace gpix
