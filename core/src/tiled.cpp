// Slab-wise execution of catalog filters (gpix/tiled.h).
#include "gpix/tiled.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/backend.h"
#include "detail.h"
#include "filters/registry.h"
#include "gpix/array.h"
#include "gpix/error.h"
#include "gpix/queue.h"
#include "memory_pool.h"
#include "run_phase.h"
#include "util.h"

namespace gpix {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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

Shape with_planes(const Shape& s, std::size_t planes) {
  std::vector<std::size_t> dims(s.dims().begin(), s.dims().end());
  dims[0] = planes;
  return Shape{std::span<const std::size_t>(dims)};
}

// Host memory that a worker reads slabs into and pulls them out of, kept from slab to slab:
// page-locked memory of the worker's device where it has some (the DMA engine then reads and
// writes it directly, without the staging ring), else pageable memory.
class SlabBuffer {
 public:
  std::byte* get(std::size_t bytes, detail::DeviceImpl& dev) {
    if (bytes <= bytes_) return data_;
    pinned_.reset();
    pageable_.reset();
    try {
      pinned_ = dev.allocate_host(bytes);
      data_ = static_cast<std::byte*>(pinned_->data());
    } catch (const Error&) {
      pageable_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
      data_ = pageable_.get();
    }
    bytes_ = bytes;
    return data_;
  }
  bool pinned() const { return pinned_ != nullptr; }

 private:
  std::unique_ptr<detail::HostMemory> pinned_;
  std::unique_ptr<std::byte[]> pageable_;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Sinks that write in order: the worker of slab t writes after the one of slab t - 1.
class Turns {
 public:
  // False when the run failed meanwhile (the caller stops).
  bool wait(std::size_t t) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return next_ == t || failed_; });
    return !failed_;
  }
  void done() {
    {
      std::lock_guard lock(mutex_);
      ++next_;
    }
    ready_.notify_all();
  }
  void fail() {
    {
      std::lock_guard lock(mutex_);
      failed_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::size_t next_ = 0;
  bool failed_ = false;
};

// One tiled run: the slab geometry, the shared queue of slabs, the sink's order, the report.
class TiledRun {
 public:
  TiledRun(const FilterInfo& info, std::span<SlabSource* const> inputs, SlabSink* output,
           const Params& params, const TiledOptions& options)
      : info_(info),
        who_("run_tiled: filter '" + info.name + "'"),
        inputs_(inputs),
        output_(output),
        params_(params),
        options_(options) {
    if (inputs.empty()) throw InvalidArgument(who_ + " needs an input");
    for (SlabSource* s : inputs) {
      if (!s) throw InvalidArgument(who_ + " was given a null input");
    }
    shape_ = inputs[0]->shape();
    for (SlabSource* s : inputs) {
      if (!(s->shape() == shape_)) {
        throw InvalidArgument(who_ + ": every input must have the first input's shape " +
                              shape_.str() + "; one is " + s->shape().str());
      }
    }
    devices_ = options.devices;
    if (devices_.empty()) devices_.push_back(default_device());
    workers_per_device_ = std::max<std::size_t>(1, options.workers_per_device);
    planes_ = shape_[0];
    plane_ = shape_.elements() / std::max<std::size_t>(planes_, 1);
    report_.slabs_per_device.assign(devices_.size(), 0);
  }

  Table run() {
    const auto t_start = Clock::now();
    const detail::Entry& entry = detail::entry(info_.name);
    const int ndim = static_cast<int>(shape_.ndim());
    check_inputs();
    std::unique_ptr<detail::SlabFold> fold = entry.fold(params_, shape_, inputs_[0]->dtype());
    Table table;
    if (!fold) {
      if (info_.output == OutputKind::table) {
        throw Error("internal: " + who_ + " gives a table but tiles with a halo");
      }
      halo_ = entry.halo(ndim, params_);
      plan(0, devices_.size() * workers_per_device_, 0,
           entry.working_set(params_, ndim, inputs_[0]->dtype()),
           entry.output_bytes(params_, inputs_[0]->dtype()));
      units_ = tiles_;
      slab_fn_ = [this](std::span<const Array> slab, std::size_t) {
        RunOptions ro;
        ro.cancel = options_.cancel;
        const Result r = gpix::run(info_.name, slab, params_, ro);
        if (r.is_table()) throw Error("internal: " + who_ + " gave a table for a slab");
        return r.array;
      };
      map_slabs();
    } else {
      table = run_fold(*fold);
    }
    report_.seconds = since(t_start);
    if (output_ && info_.output != OutputKind::table) output_->finish();
    if (options_.report) *options_.report = report_;
    return table;
  }

 private:
  // What the catalog's checks say on the first slab, said before anything is read: a fold
  // is made for the whole input's shape and dtype.
  void check_inputs() const {
    if (inputs_.size() != info_.inputs.size()) {
      throw InvalidArgument(who_ + " takes " + std::to_string(info_.inputs.size()) + " input(s); " +
                            std::to_string(inputs_.size()) + " were given");
    }
    const int ndim = static_cast<int>(shape_.ndim());
    if (std::find(info_.dims.begin(), info_.dims.end(), ndim) == info_.dims.end()) {
      std::string dims;
      for (int d : info_.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d) + "D";
      throw InvalidArgument(who_ + " takes " + dims + " images; this one is " + shape_.str());
    }
    if (!output_ && info_.output != OutputKind::table) {
      throw InvalidArgument(who_ + " gives an image: run_tiled needs a SlabSink for it");
    }
  }

  // Slabs of as many planes as fit every device's budget: plane_cost_ per plane, the halo's
  // planes on both sides, `reserved` bytes kept for a fold's state, `workers` (over all
  // devices, as many on each) sharing it: each device's budget covers the slabs of all its
  // workers at once. `pixel_bytes`: a fold's own working set per pixel, where it says one;
  // `filter_bytes`: a halo filter's peak per pixel (its WorkingSetFn), where more than the
  // rule below.
  void plan(std::size_t reserved, std::size_t workers, std::size_t pixel_bytes = 0,
            std::size_t filter_bytes = 0, std::size_t output_bytes = 0) {
    std::size_t in_plane_bytes = 0, widest = std::max<std::size_t>(4, output_bytes);
    for (SlabSource* s : inputs_) {
      in_plane_bytes += plane_ * size_of(s->dtype());
      widest = std::max(widest, size_of(s->dtype()));
    }
    in_plane_bytes_ = in_plane_bytes;
    // A slab holds its inputs, its output (at most 8 bytes a pixel, at least the widest
    // input) and the filter's intermediates (separable and two-pass filters keep one or two
    // arrays of the output's size): twice inputs plus output is the working set assumed,
    // One more output: a worker's previous slab may still be on its way back (Puller) while
    // the next one runs.
    // A worker that pushes its next slab while the filter runs (DeviceImpl::tiled_pipeline)
    // holds one more slab of inputs during the filter.
    bool pipelined = false;
    for (const Device& d : devices_) pipelined |= detail::Access::impl(d).tiled_pipeline();
    const std::size_t plane_cost =
        std::max(std::max(2 * (in_plane_bytes + plane_ * widest), plane_ * filter_bytes) +
                     plane_ * widest,
                 plane_ * pixel_bytes) +
        (pipelined ? in_plane_bytes : 0);
    const std::size_t per_device = std::max<std::size_t>(1, workers / devices_.size());
    std::size_t slab = planes_;
    for (const Device& d : devices_) {
      const DeviceInfo& di = d.info();
      const std::uint64_t budget =
          options_.budget_bytes ? options_.budget_bytes
                                : std::min<std::uint64_t>(di.global_memory / 4, di.max_allocation);
      const std::uint64_t usable = budget > reserved ? budget - reserved : 0;
      const std::uint64_t worker_bytes = usable / per_device;
      std::uint64_t fit = worker_bytes / std::max<std::size_t>(plane_cost, 1);
      // The pool holds each array in a block of its size class (up to a quarter more,
      // MemoryPool::size_class), and every array of a slab (inputs, intermediates, outputs)
      // is its pixel count times a power of two bytes: above the smallest class that scales
      // the class by the same power of two, so one factor for all of them.
      const auto rounded = [&](std::uint64_t n) {
        const std::uint64_t bytes = std::max<std::uint64_t>(n * plane_, 1) * 8;
        return static_cast<double>(n * plane_cost) *
               static_cast<double>(detail::MemoryPool::size_class(bytes)) /
               static_cast<double>(bytes);
      };
      fit = std::min<std::uint64_t>(fit, planes_);
      // Down in proportion to the excess (one plane at a time took 10^8 steps for a 1D array
      // of 10^9 pixels), then up again by bisection to the largest count that fits: the step
      // scales by the rejected count's rounding (up to 1.25) where a smaller count may round
      // by less, so it can land below that count. rounded() grows with the count (size
      // classes do), which is what the bisection needs.
      std::uint64_t over = 0;  // a count that does not fit, where one was tried
      while (fit > 0 && rounded(fit) > static_cast<double>(worker_bytes)) {
        over = fit;
        const auto shrunk = static_cast<std::uint64_t>(
            static_cast<double>(fit) * static_cast<double>(worker_bytes) / rounded(fit));
        fit = std::min(fit - 1, shrunk);
      }
      while (over > fit + 1) {
        const std::uint64_t mid = fit + (over - fit) / 2;
        (rounded(mid) > static_cast<double>(worker_bytes) ? over : fit) = mid;
      }
      // A slab loads its planes and the halo's, clamped to the image: the whole image where
      // it fits (a halo deeper than the image needs no more planes than the image has).
      if (fit >= planes_) continue;
      if (fit < 2 * halo_ + 1) {
        // What one plane and its halo take in the pool's blocks (more than plane_cost times
        // their count where their size class rounds up).
        const auto needed =
            static_cast<std::uint64_t>(std::ceil(rounded(std::min(planes_, 2 * halo_ + 1))));
        throw InvalidArgument(
            who_ + " needs " + detail::human(needed + reserved) +
            " of device memory for one plane and its halo of " + std::to_string(halo_) +
            " planes on each side" +
            (reserved ? " and its state of " + detail::human(reserved) : std::string()) +
            "; the budget on '" + d.label() + "' is " + detail::human(budget) +
            (per_device > 1 ? " shared by " + std::to_string(per_device) + " workers"
                            : std::string()) +
            " (raise the budget, or use smaller radii)");
      }
      slab = std::min<std::size_t>(slab, static_cast<std::size_t>(fit - 2 * halo_));
    }
    slab_ = slab;
    tiles_ = (planes_ + slab - 1) / slab;
    report_.halo = halo_;
    report_.planes_per_slab = slab;
    report_.slabs = tiles_;
  }

  // Called without mutex_ held (workers, pullers, folds).
  void check_cancel() const {
    if (options_.cancel && options_.cancel->load()) {
      std::size_t done = 0;
      {
        std::lock_guard lock(mutex_);  // pullers count done_ under it
        done = done_;
      }
      throw Cancelled(who_ + " was cancelled after " + std::to_string(done) + " of " +
                      std::to_string(units_) + " slabs");
    }
  }

  // The first plane of a slab loading [l0, l1) that must come from the host, where the
  // worker's previous slab (none: `no_prev`) holds planes [p0, p1) on the device.
  static std::size_t first_host_plane(std::size_t l0, std::size_t l1, bool no_prev, std::size_t p0,
                                      std::size_t p1) {
    return !no_prev && l0 >= p0 && l0 < p1 ? std::min(p1, l1) : l0;
  }

  // A slab on its way to the device: its arrays, allocated, with the planes the previous slab
  // held already copied in (prepare()); the rest come from the host (fill()).
  struct Incoming {
    std::vector<Array> arrays;
    std::size_t l0 = 0, l1 = 0, h0 = 0;  // planes [l0, l1); from the host: [h0, l1)
  };

  // A slab's planes [l0, l1) of every input as arrays on `device`, with nothing from the host
  // yet. `prev` (planes [p0, p1) of every input, on `device`) is the worker's previous slab:
  // where this slab starts inside it (a single worker's slabs come in order), its planes from
  // l0 to p1 are copied on the device (blocking) instead of travelling again. For a Gaussian of
  // sigma 2 (a halo of 8 planes) on 14-plane slabs that halves the bytes pushed
  // (bench/RESULTS.md).
  Incoming prepare(std::size_t l0, std::size_t l1, const Device& device,
                   const std::vector<Array>& prev = {}, std::size_t p0 = 0, std::size_t p1 = 0) {
    Incoming in;
    in.l0 = l0;
    in.l1 = l1;
    in.h0 = first_host_plane(l0, l1, prev.empty(), p0, p1);
    const Shape slab_shape = with_planes(shape_, l1 - l0);
    std::vector<std::size_t> dims(shape_.dims().begin(), shape_.dims().end());
    std::vector<std::size_t> prev_dims = dims;
    dims[0] = l1 - l0;
    prev_dims[0] = p1 - p0;
    in.arrays.reserve(inputs_.size());
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      Array a = Array::empty(slab_shape, inputs_[i]->dtype(), device);
      if (in.h0 > l0) {
        a.view(planes_box(dims, 0, in.h0 - l0))
            .copy_from(prev[i].view(planes_box(prev_dims, l0 - p0, in.h0 - p0)));
      }
      in.arrays.push_back(std::move(a));
    }
    return in;
  }

  // Reads planes [h0, l1) of every input (through `buffers` where a source is not in memory)
  // and pushes them into the slab's arrays. With `after`, the pushes wait on the device for
  // that event of the default queue only (detail::write_all_after), so kernels queued since
  // run beside them.
  void fill(const Incoming& in, const Device& device, std::vector<SlabBuffer>& buffers,
            double& read_s, double& push_s, detail::EventImpl* after = nullptr) {
    if (in.h0 >= in.l1) return;
    auto& dev = detail::Access::impl(device);
    std::vector<std::size_t> dims(shape_.dims().begin(), shape_.dims().end());
    dims[0] = in.l1 - in.l0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      SlabSource& src = *inputs_[i];
      const std::size_t pb = plane_ * size_of(src.dtype());
      const std::size_t bytes = (in.l1 - in.h0) * pb;
      const std::byte* from = src.planes(in.h0);
      bool pinned = from && src.pinned_for(device);
      if (!from) {
        std::byte* buf = buffers[i].get(bytes, dev);
        const auto t0 = Clock::now();
        {
          std::lock_guard lock(read_mutex_);
          src.read(in.h0, in.l1, buf);
        }
        read_s += since(t0);
        from = buf;
        pinned = buffers[i].pinned();
      }
      const auto t0 = Clock::now();
      Array rest = in.h0 > in.l0 ? in.arrays[i].view(planes_box(dims, in.h0 - in.l0, dims[0]))
                                 : in.arrays[i];
      auto& impl = detail::Access::impl(rest);
      if (after) {
        detail::write_all_after(impl, from, pinned, *after);
      } else {
        detail::write_all(impl, from, pinned);
      }
      push_s += since(t0);
    }
  }

  // prepare() and fill(): the slab's arrays, every plane on the device.
  std::vector<Array> push(std::size_t l0, std::size_t l1, const Device& device,
                          std::vector<SlabBuffer>& buffers, double& read_s, double& push_s) {
    Incoming in = prepare(l0, l1, device);
    fill(in, device, buffers, read_s, push_s);
    return std::move(in.arrays);
  }

  // The sink's start, once, from the first output's shape and dtype.
  void start_sink(const Shape& shape, DType dtype) {
    std::lock_guard lock(mutex_);
    if (started_) {
      if (dtype != out_dtype_) throw Error("internal: " + who_ + " gave slabs of two dtypes");
      return;
    }
    try {
      output_->start(shape, dtype);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(who_ + ": " + e.what());
    }
    out_dtype_ = dtype;
    started_ = true;
  }

  // Every slab through slab_fn_ on every worker, interiors to the sink.
  void map_slabs() {
    const std::size_t workers = devices_.size() * workers_per_device_;
    next_ = std::min(workers, tiles_);
    turns_.emplace();
    error_ = nullptr;
    if (workers == 1) {
      worker(0);
    } else {
      std::vector<std::thread> threads;
      threads.reserve(workers);
      for (std::size_t i = 0; i < workers; ++i) threads.emplace_back([this, i] { worker(i); });
      for (auto& th : threads) th.join();
    }
    if (error_) std::rethrow_exception(error_);
  }

  // The slab this worker takes next (its own index first), or none.
  std::optional<std::size_t> take_slab(std::size_t worker_index, bool first) {
    std::lock_guard lock(mutex_);
    if (error_) return std::nullopt;
    if (first)
      return worker_index < tiles_ ? std::optional<std::size_t>(worker_index) : std::nullopt;
    if (next_ >= tiles_) return std::nullopt;
    return next_++;
  }

  // One worker: slab k's filter runs while slab k + 1 travels to the device (a thread of
  // its own, fill() after an event recorded before the filter was queued) and slab k - 1
  // travels back (the Puller). With the push waiting for the filter, as it did, the DMA
  // engines stood still while each slab was filtered: 18 ms of a 0.2 s run of an 8 GB
  // Gaussian on an H200 (bench/RESULTS.md). Device memory: slab k's inputs, output and
  // intermediates, slab k + 1's inputs and slab k - 1's output, which plan() budgets for.
  void worker(std::size_t worker_index) {
    const std::size_t device_index = worker_index % devices_.size();
    const Device& device = devices_[device_index];
    auto& dev = detail::Access::impl(device);
    std::vector<SlabBuffer> in_buffers(inputs_.size());
    double read_s = 0, push_s = 0, run_s = 0;
    const bool pipeline = dev.tiled_pipeline();
    Puller puller(*this, device_index, device);
    try {
      std::optional<std::size_t> t = take_slab(worker_index, true);
      Incoming cur;
      if (t) {
        check_cancel();
        const SlabPlanes sp = slab_planes(*t, slab_, planes_, halo_);
        cur = prepare(sp.l0, sp.l1, device);
        fill(cur, device, in_buffers, read_s, push_s);
      }
      while (t) {
        const auto [z0, z1, l0, l1] = slab_planes(*t, slab_, planes_, halo_);
        std::vector<std::size_t> dims(shape_.dims().begin(), shape_.dims().end());
        dims[0] = l1 - l0;
        // The next slab: its arrays and the planes it shares with this one now, on this
        // thread, before the filter is queued; its host planes on the pushing thread.
        // Slab k's arrays, with the planes it shares with this slab copied in.
        auto prepare_next = [&](std::size_t k) {
          check_cancel();
          const SlabPlanes sn = slab_planes(k, slab_, planes_, halo_);
          return prepare(sn.l0, sn.l1, device, halo_ > 0 ? cur.arrays : std::vector<Array>{},
                         cur.l0, cur.l1);
        };
        std::optional<std::size_t> tn = pipeline ? take_slab(worker_index, false) : std::nullopt;
        Incoming next;
        std::future<void> pushing;
        double next_read_s = 0, next_push_s = 0;
        if (tn) {
          next = prepare_next(*tn);
          const std::shared_ptr<detail::EventImpl> before = dev.marker(dev.default_queue(), {});
          pushing = std::async(std::launch::async, [&, before] {
            fill(next, device, in_buffers, next_read_s, next_push_s, before.get());
          });
        }
        const auto t0 = Clock::now();
        const Array r = slab_fn_(cur.arrays, z0);
        // An unordered fold's pass keeps what it needs and gives no array.
        const bool writes = r.valid();
        if (writes && !(r.shape() == cur.arrays[0].shape())) {
          throw Error("internal: " + who_ + " gave no array of the slab's shape");
        }
        Queue::default_for(device).marker().wait();
        run_s += since(t0);
        // The slab's pull and write go to this worker's puller, so that they travel while the
        // next slab is pushed and filtered. One slab waits there at most.
        const bool handed = puller.hand(Finished{r, *t, z0, z1, l0, l1, cur.h0, dims});
        if (pushing.valid()) {
          pushing.get();  // rethrows the push's error
          read_s += next_read_s;
          push_s += next_push_s;
        }
        if (!handed) break;
        if (!pipeline) {  // the next slab after this one's filter, on this thread
          tn = take_slab(worker_index, false);
          if (tn) {
            next = prepare_next(*tn);
            fill(next, device, in_buffers, read_s, push_s);
          }
        }
        cur = std::move(next);
        t = tn;
      }
    } catch (...) {
      fail(std::current_exception());
    }
    puller.finish();
    std::lock_guard lock(mutex_);
    report_.read_seconds += read_s;
    report_.push_seconds += push_s;
    report_.run_seconds += run_s;
    report_.pull_seconds += puller.pull_s;
    report_.write_seconds += puller.write_s;
  }

  void fail(std::exception_ptr e) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(e);
    turns_->fail();
  }

  // A filtered slab on its way back: the output array and where it goes.
  struct Finished {
    Array r;  // invalid: an unordered fold's pass, which gives nothing back
    std::size_t t, z0, z1, l0, l1, pushed_from;
    std::vector<std::size_t> dims;  // the slab's, as loaded
  };

  // A worker's second thread: pulls finished slabs into the sink, one at a time, in the order
  // the worker hands them over.
  class Puller {
   public:
    Puller(TiledRun& run, std::size_t device_index, const Device& device)
        : run_(run), device_index_(device_index), device_(device), thread_([this] { loop(); }) {}
    ~Puller() { finish(); }
    Puller(const Puller&) = delete;
    Puller& operator=(const Puller&) = delete;

    // Waits until the previous slab is out, then hands this one over; false once the run
    // has failed (the worker stops).
    bool hand(Finished f) {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !slot_; });
      if (failed_) return false;
      slot_ = std::move(f);
      cv_.notify_all();
      return true;
    }
    // Waits for the last slab and ends the thread.
    void finish() {
      {
        std::unique_lock lock(m_);
        if (!thread_.joinable()) return;
        cv_.wait(lock, [&] { return !slot_; });
        stop_ = true;
        cv_.notify_all();
      }
      thread_.join();
    }
    double pull_s = 0, write_s = 0;

   private:
    void loop() {
      for (;;) {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return slot_ || stop_; });
        if (!slot_) return;
        lock.unlock();
        bool ok = true;
        try {
          ok = run_.finish_slab(*slot_, device_index_, device_, out_buffer_, pull_s, write_s);
        } catch (...) {
          run_.fail(std::current_exception());
          ok = false;
        }
        lock.lock();
        if (!ok) failed_ = true;
        slot_.reset();  // frees the slab's output on the device
        cv_.notify_all();
      }
    }

    TiledRun& run_;
    std::size_t device_index_;
    Device device_;
    SlabBuffer out_buffer_;
    std::mutex m_;
    std::condition_variable cv_;
    std::optional<Finished> slot_;
    bool stop_ = false, failed_ = false;
    std::thread thread_;  // last: starts once the members above exist
  };

  // Pulls a finished slab's interior into the sink; false when an earlier slab failed.
  bool finish_slab(const Finished& f, std::size_t device_index, const Device& device,
                   SlabBuffer& out_buffer, double& pull_s, double& write_s) {
    // A slab filtered while the cancel came is not pulled: the run ends with Cancelled (the
    // puller's error) at the slab the caller saw last in its progress.
    check_cancel();
    const bool writes = f.r.valid();
    const std::size_t ob = writes ? plane_ * size_of(f.r.dtype()) : 0;
    if (writes) {
      start_sink(shape_, f.r.dtype());
      const Array interior = (f.l0 == f.z0 && f.l1 == f.z1)
                                 ? f.r
                                 : f.r.view(planes_box(f.dims, f.z0 - f.l0, f.z1 - f.l0));
      auto& impl = detail::Access::impl(interior);
      if (std::byte* dst = output_->planes(f.z0)) {
        const auto t0 = Clock::now();
        detail::read_all(impl, dst, output_->pinned_for(device));
        pull_s += since(t0);
      } else {
        std::byte* buf = out_buffer.get((f.z1 - f.z0) * ob, detail::Access::impl(device));
        auto t0 = Clock::now();
        detail::read_all(impl, buf, out_buffer.pinned());
        pull_s += since(t0);
        t0 = Clock::now();
        if (!turns_->wait(f.t)) return false;
        output_->write(f.z0, f.z1, buf);
        turns_->done();
        write_s += since(t0);
      }
    }
    std::lock_guard lock(mutex_);
    ++done_;
    ++report_.slabs_per_device[device_index];
    report_.bytes_in += (f.l1 - f.pushed_from) * in_plane_bytes_;
    report_.bytes_out += (f.z1 - f.z0) * ob;
    if (options_.progress) {
      options_.progress(static_cast<double>(done_) / static_cast<double>(units_));
    }
    return true;
  }

  // A filter whose output depends on the whole input: its passes on the first device, slabs
  // in order; then its output, or a pass that maps the slabs on every worker (Otsu).
  Table run_fold(detail::SlabFold& fold) {
    if (fold.unordered()) return run_unordered_fold(fold);
    const Device& device = devices_[0];
    halo_ = 0;
    plan(fold.state_bytes(), 1, fold.pixel_bytes());
    const int passes = fold.passes();
    units_ = tiles_ * (static_cast<std::size_t>(passes) + (fold.maps() ? 1 : 0));
    report_.passes = static_cast<std::size_t>(passes);
    std::vector<SlabBuffer> buffers(inputs_.size());
    double read_s = 0, push_s = 0, run_s = 0;
    for (int pass = 0; pass < passes; ++pass) {
      for (std::size_t t = 0; t < tiles_; ++t) {
        check_cancel();
        const auto [z0, z1, l0, l1] = slab_planes(t, slab_, planes_, 0);
        const std::vector<Array> arrays = push(z0, z1, device, buffers, read_s, push_s);
        if (pass == 0 && t == 0) detail::check_inputs(info_, arrays);
        const auto t0 = Clock::now();
        fold.add(pass, arrays, z0);
        Queue::default_for(device).marker().wait();
        run_s += since(t0);
        ++done_;
        ++report_.slabs_per_device[0];
        report_.bytes_in += (z1 - z0) * in_plane_bytes_;
        if (options_.progress) {
          options_.progress(static_cast<double>(done_) / static_cast<double>(units_));
        }
      }
    }
    report_.read_seconds += read_s;
    report_.push_seconds += push_s;
    report_.run_seconds += run_s;
    detail::Folded folded = fold.finish();
    if (folded.per_slab) {
      // Pointwise once the state is known: every worker, no halo.
      ++report_.passes;
      plan(0, devices_.size() * workers_per_device_, fold.pixel_bytes());
      units_ = done_ + tiles_;
      slab_fn_ = std::move(folded.per_slab);
      map_slabs();
      return {};
    }
    return write_whole(folded);
  }

  // A fold whose passes take slabs in any order (connected components): every pass, and its
  // map, on every worker, over the same slabs.
  Table run_unordered_fold(detail::SlabFold& fold) {
    halo_ = 0;
    plan(fold.state_bytes(), devices_.size() * workers_per_device_, fold.pixel_bytes());
    const int passes = fold.passes();
    units_ = tiles_ * (static_cast<std::size_t>(passes) + (fold.maps() ? 1 : 0));
    report_.passes = static_cast<std::size_t>(passes);
    for (int pass = 0; pass < passes; ++pass) {
      slab_fn_ = [this, &fold, pass](std::span<const Array> slab, std::size_t z0) {
        if (pass == 0 && z0 == 0) detail::check_inputs(info_, slab);
        fold.add(pass, slab, z0);
        return Array();
      };
      map_slabs();
    }
    detail::Folded folded = fold.finish();
    if (folded.per_slab) {
      ++report_.passes;
      slab_fn_ = std::move(folded.per_slab);
      map_slabs();
      return {};
    }
    return write_whole(folded);
  }

  // A fold's output once its passes are done: a table, or an array written at once.
  Table write_whole(const detail::Folded& folded) {
    if (folded.whole.is_table()) return folded.whole.table;
    // An array of another shape (a projection's plane): one write.
    const Array& a = folded.whole.array;
    start_sink(a.shape(), a.dtype());
    const auto t0 = Clock::now();
    if (std::byte* dst = output_->planes(0)) {
      detail::read_all(detail::Access::impl(a), dst, output_->pinned_for(a.device()));
      report_.pull_seconds += since(t0);
    } else {
      const HostArray h = a.pull();
      report_.pull_seconds += since(t0);
      const auto t1 = Clock::now();
      output_->write(0, a.shape()[0], h.data());
      report_.write_seconds += since(t1);
    }
    report_.bytes_out += a.bytes();
    if (options_.progress) options_.progress(1.0);
    return {};
  }

  const FilterInfo& info_;
  const std::string who_;
  std::span<SlabSource* const> inputs_;
  SlabSink* output_;
  const Params& params_;
  const TiledOptions& options_;
  std::vector<Device> devices_;
  std::size_t workers_per_device_ = 1;
  Shape shape_;
  std::size_t planes_ = 0, plane_ = 0, halo_ = 0, slab_ = 0, tiles_ = 0, in_plane_bytes_ = 0;
  std::function<Array(std::span<const Array>, std::size_t z0)> slab_fn_;

  mutable std::mutex mutex_;  // what follows, and the report
  std::mutex read_mutex_;     // one SlabSource::read at a time
  std::size_t next_ = 0, done_ = 0, units_ = 0;
  bool started_ = false;
  DType out_dtype_ = DType::u8;
  std::optional<Turns> turns_;
  std::exception_ptr error_;
  TiledReport report_;
};

}  // namespace

HostArraySource::HostArraySource(HostArray array)
    : array_(std::move(array)),
      plane_bytes_(array_.valid() ? array_.bytes() / std::max<std::size_t>(array_.shape()[0], 1)
                                  : 0) {
  if (!array_.valid()) throw InvalidArgument("HostArraySource needs a valid HostArray");
}

void HostArraySource::read(std::size_t from, std::size_t to, std::byte* dst) {
  if (from > to || to > array_.shape()[0]) {
    throw OutOfRange("HostArraySource: planes [" + std::to_string(from) + ", " +
                     std::to_string(to) + ") of " + array_.shape().str());
  }
  std::memcpy(dst, array_.data() + from * plane_bytes_, (to - from) * plane_bytes_);
}

const std::byte* HostArraySource::planes(std::size_t from) const {
  return array_.data() + from * plane_bytes_;
}

namespace {

// Pinned host memory moves by DMA to the device it was pinned for and, on CUDA, to every CUDA
// device (cuMemHostAlloc's CU_MEMHOSTALLOC_PORTABLE); an OpenCL context does not know another
// context's page-locked memory, so there it is staged like pageable memory.
bool dma_ready(const HostArray& a, const Device& d) {
  if (!a.is_pinned()) return false;
  const Device& p = a.pinned_device();
  return p == d || (p.info().backend == Backend::cuda && d.info().backend == Backend::cuda);
}

}  // namespace

bool HostArraySource::pinned_for(const Device& d) const {
  return dma_ready(array_, d);
}

bool HostArraySink::pinned_for(const Device& d) const {
  return dma_ready(array_, d);
}

HostArraySink::HostArraySink(HostArray into) : array_(std::move(into)), given_(true) {
  if (!array_.valid()) throw InvalidArgument("HostArraySink was given an invalid HostArray");
}

void HostArraySink::start(const Shape& shape, DType dtype) {
  if (given_) {
    if (!(array_.shape() == shape) || array_.dtype() != dtype) {
      throw InvalidArgument("the output array must be " + shape.str() + " " +
                            std::string(name(dtype)) + "; it is " + array_.shape().str() + " " +
                            std::string(name(array_.dtype())));
    }
  } else {
    array_ = HostArray::empty(shape, dtype);
  }
  plane_bytes_ = array_.bytes() / std::max<std::size_t>(shape[0], 1);
}

void HostArraySink::write(std::size_t from, std::size_t to, const std::byte* src) {
  std::memcpy(array_.data() + from * plane_bytes_, src, (to - from) * plane_bytes_);
}

std::byte* HostArraySink::planes(std::size_t from) {
  return array_.data() + from * plane_bytes_;
}

// The halo rules, the folds and the reasons a filter does not tile live in the catalog rows
// (core/src/filters/*.cpp), beside the parameters they read.
TileInfo tile_info(std::string_view name) {
  const FilterInfo& info = filter(name);  // InvalidArgument with suggestions for a typo
  return {info.tiles, info.folds, info.untiled};
}

std::size_t tile_halo(std::string_view name, int ndim, const Params& params) {
  return detail::entry(name).halo(ndim, params);
}

Table run_tiled(std::string_view name, std::span<SlabSource* const> inputs, SlabSink* output,
                const Params& params, const TiledOptions& options) {
  return TiledRun(filter(name), inputs, output, params, options).run();
}

HostArray run_tiled(std::string_view name, std::span<const HostArray> inputs, const Params& params,
                    const TiledOptions& options) {
  const FilterInfo& info = filter(name);
  const std::string who = "run_tiled: filter '" + info.name + "'";
  if (info.output == OutputKind::table) {
    throw InvalidArgument(who + " returns a table: give run_tiled a HostArraySource and no sink");
  }
  std::vector<std::unique_ptr<HostArraySource>> sources;
  std::vector<SlabSource*> pointers;
  for (const HostArray& h : inputs) {
    if (!h.valid()) throw InvalidArgument(who + " needs valid input arrays");
    sources.push_back(std::make_unique<HostArraySource>(h));
    pointers.push_back(sources.back().get());
  }
  if (pointers.empty()) throw InvalidArgument(who + " needs an input array");
  HostArraySink sink = options.output ? HostArraySink(*options.output) : HostArraySink();
  (void)run_tiled(name, pointers, &sink, params, options);
  return sink.array();
}

Result run_in_slabs(std::string_view name, std::span<const Array> inputs, const Params& params,
                    const RunOptions& options, std::size_t slabs) {
  const TileInfo ti = tile_info(name);
  if (inputs.empty() || !inputs[0].valid() || !ti.tileable || ti.folds) {
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
  const auto cancelled = [&](std::size_t done) {
    if (options.cancel && options.cancel->load()) {
      throw Cancelled("filter '" + std::string(name) + "' was cancelled after " +
                      std::to_string(done) + " of " + std::to_string(tiles) + " slabs");
    }
  };
  for (std::size_t t = 0; t < tiles; ++t) {
    cancelled(t);
    const auto [z0, z1, l0, l1] = slab_planes(t, per, planes, halo);
    std::vector<Array> views;
    views.reserve(inputs.size());
    for (const Array& a : inputs) views.push_back(a.view(planes_box(dims, l0, l1)));
    detail::report_phase("slab " + std::to_string(t + 1) + " of " + std::to_string(tiles));
    // The filter's own progress is not passed on: it comes as its passes are queued, not as
    // the device does them, and moved the bar through a slab before the device had begun it.
    RunOptions ro;
    ro.cancel = options.cancel;
    const Result r = run(name, views, params, ro);
    if (!out.valid()) out = Array::empty(shape, r.array.dtype(), inputs[0].device());
    // Blocking: when it returns, the device has done this slab.
    out.view(planes_box(dims, z0, z1)).copy_from(r.array.view(planes_box(dims, z0 - l0, z1 - l0)));
    if (options.progress) {
      options.progress(static_cast<double>(t + 1) / static_cast<double>(tiles));
    }
  }
  // A cancel during the last slab discards the result too.
  cancelled(tiles);
  Result result;
  result.array = std::move(out);
  return result;
}

}  // namespace gpix
