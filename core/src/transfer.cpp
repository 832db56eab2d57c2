// Transfers between host and device and between arrays, for every layout: contiguous
// buffers take the backend's plain calls; padded arrays, images and regions take the pitched
// calls; large transfers from ordinary host memory are pipelined through a ring of pinned
// chunks; copies between devices go peer to peer where the backend can (CUDA), otherwise they
// are staged through pinned host memory.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "detail.h"
#include "gpix/error.h"
#include "memory_pool.h"
#include "util.h"

namespace gpix::detail {
namespace {

std::size_t env_mb(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const long n = std::atol(v);
  return n > 0 ? static_cast<std::size_t>(n) * 1024 * 1024 : fallback;
}

// A ring of pinned chunks per device: while the device moves chunk k, the host copies into
// chunk k + 1. GPIX_STAGING_CHUNK_MB (default 16), GPIX_STAGING_MIN_MB (transfers from this
// size on are staged; default 16) and GPIX_NO_STAGING=1 tune it.
class StagingRing {
 public:
  static constexpr int kChunks = 4;
  explicit StagingRing(DeviceImpl& dev) : dev_(dev) {}

  // False when the backend has no pinned memory or async transfers yet; then the plain path
  // is used (a performance choice, the result is the same).
  bool ready() {
    if (state_ == State::unknown) {
      try {
        const std::size_t chunk = env_mb("GPIX_STAGING_CHUNK_MB", 16u << 20);
        for (auto& c : chunks_) c = dev_.allocate_host(chunk);
        dev_.default_queue();
        state_ = State::ready;
      } catch (const Error&) {
        for (auto& c : chunks_) c.reset();
        state_ = State::unavailable;
      }
    }
    return state_ == State::ready;
  }
  std::size_t chunk_bytes() const { return chunks_[0]->bytes(); }
  std::byte* chunk(int k) {
    return static_cast<std::byte*>(chunks_[static_cast<std::size_t>(k)]->data());
  }
  std::mutex mutex;

 private:
  enum class State { unknown, ready, unavailable };
  DeviceImpl& dev_;
  State state_ = State::unknown;
  std::array<std::unique_ptr<HostMemory>, kChunks> chunks_;
};

std::mutex g_rings_mutex;
std::map<const DeviceImpl*, std::unique_ptr<StagingRing>>& rings() {
  static std::map<const DeviceImpl*, std::unique_ptr<StagingRing>> m;
  return m;
}

StagingRing& ring(DeviceImpl& dev) {
  std::lock_guard lock(g_rings_mutex);
  auto& r = rings()[&dev];
  if (!r) r = std::make_unique<StagingRing>(dev);
  return *r;
}

// memcpy between pageable memory and a pinned chunk, split over several threads: one core
// copies pageable memory at ~6-10 GB/s, well under the ~55 GB/s the pinned DMA then moves,
// so the host side is the pipeline's bottleneck. GPIX_STAGING_THREADS (default: up to 8,
// at most the hardware's threads) tunes it; 1 copies on the calling thread.
void parallel_copy(std::byte* dst, const std::byte* src, std::size_t n) {
  static const unsigned threads = [] {
    const char* v = std::getenv("GPIX_STAGING_THREADS");
    if (v && *v) return static_cast<unsigned>(std::max(1L, std::atol(v)));
    return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  }();
  constexpr std::size_t kMinPart = std::size_t{2} << 20;  // below this a thread costs more
  const std::size_t parts = std::min<std::size_t>(threads, std::max<std::size_t>(1, n / kMinPart));
  if (parts <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
  const std::size_t step = (n / parts + 63) / 64 * 64;
  std::vector<std::thread> pool;
  pool.reserve(parts - 1);
  for (std::size_t i = 1; i < parts; ++i) {
    const std::size_t begin = std::min(n, i * step), end = std::min(n, (i + 1) * step);
    if (begin < end) pool.emplace_back([=] { std::memcpy(dst + begin, src + begin, end - begin); });
  }
  std::memcpy(dst, src, std::min(n, step));
  for (auto& t : pool) t.join();
}

bool want_staging(std::size_t bytes) {
  return !env_flag("GPIX_NO_STAGING") && bytes >= env_mb("GPIX_STAGING_MIN_MB", 16u << 20);
}

Pitched linear(std::size_t offset, std::size_t bytes) {
  return Pitched{{offset, 0, 0}, bytes, bytes};
}

// Host -> contiguous device range, pipelined through the ring. The ring's lock is held.
void staged_write(DeviceImpl& dev, StagingRing& r, Memory& dst, std::size_t offset,
                  const std::byte* src, std::size_t bytes) {
  QueueImpl& q = dev.default_queue();
  const std::size_t cb = r.chunk_bytes();
  std::array<std::shared_ptr<EventImpl>, StagingRing::kChunks> busy;
  int k = 0;
  for (std::size_t pos = 0; pos < bytes; pos += cb, k = (k + 1) % StagingRing::kChunks) {
    const std::size_t n = std::min(cb, bytes - pos);
    if (busy[static_cast<std::size_t>(k)]) busy[static_cast<std::size_t>(k)]->wait();
    parallel_copy(r.chunk(k), src + pos, n);
    busy[static_cast<std::size_t>(k)] =
        dev.write_rect(q, dst, linear(offset + pos, n), r.chunk(k), linear(0, n), {n, 1, 1}, {});
  }
  for (auto& e : busy) {
    if (e) e->wait();
  }
}

// Contiguous device range -> host, pipelined: reads run ahead into the ring while the host
// copies finished chunks out.
void staged_read(DeviceImpl& dev, StagingRing& r, const Memory& src, std::size_t offset,
                 std::byte* dst, std::size_t bytes) {
  QueueImpl& q = dev.default_queue();
  const std::size_t cb = r.chunk_bytes();
  const std::size_t pieces = (bytes + cb - 1) / cb;
  std::array<std::shared_ptr<EventImpl>, StagingRing::kChunks> busy;
  auto enqueue = [&](std::size_t i) {
    const int k = static_cast<int>(i % StagingRing::kChunks);
    const std::size_t pos = i * cb, n = std::min(cb, bytes - pos);
    busy[static_cast<std::size_t>(k)] =
        dev.read_rect(q, src, linear(offset + pos, n), r.chunk(k), linear(0, n), {n, 1, 1}, {});
  };
  for (std::size_t i = 0; i < std::min<std::size_t>(pieces, StagingRing::kChunks); ++i) enqueue(i);
  for (std::size_t i = 0; i < pieces; ++i) {
    const int k = static_cast<int>(i % StagingRing::kChunks);
    const std::size_t pos = i * cb, n = std::min(cb, bytes - pos);
    busy[static_cast<std::size_t>(k)]->wait();
    parallel_copy(dst + pos, r.chunk(k), n);
    if (i + StagingRing::kChunks < pieces) enqueue(i + StagingRing::kChunks);
  }
}

Pitched dense_host(const ArrayImpl& a) {
  const std::size_t row = a.shape.width() * a.element_bytes();
  return Pitched{{0, 0, 0}, row, row * a.shape.height()};
}

// A contiguous buffer copy of a on the same device (a itself when it already is one).
std::shared_ptr<ArrayImpl> contiguous_copy(const ArrayImpl& a) {
  auto c = std::make_shared<ArrayImpl>(
      a.device, a.device->pool().allocate(a.shape.elements() * a.element_bytes()), a.shape,
      a.dtype);
  QueueImpl& q = a.device->default_queue();
  copy_box_async(*a.device, q, a, a.at(), *c, c->at(), a.whole(), {})->wait();
  return c;
}

}  // namespace

void write_all(ArrayImpl& a, const void* src, bool host_pinned) {
  DeviceImpl& dev = *a.device;
  const std::size_t bytes = a.shape.elements() * a.element_bytes();
  if (a.contiguous()) {
    if (!host_pinned && want_staging(bytes)) {
      StagingRing& r = ring(dev);
      std::lock_guard lock(r.mutex);
      if (r.ready()) {
        staged_write(dev, r, *a.memory, 0, static_cast<const std::byte*>(src), bytes);
        return;
      }
    }
    dev.write(*a.memory, 0, src, bytes);
    return;
  }
  dev.write_rect(dev.default_queue(), *a.memory, a.at(), src, dense_host(a), a.whole(), {})->wait();
}

void read_all(const ArrayImpl& a, void* dst, bool host_pinned) {
  DeviceImpl& dev = *a.device;
  const std::size_t bytes = a.shape.elements() * a.element_bytes();
  if (a.contiguous()) {
    if (!host_pinned && want_staging(bytes)) {
      StagingRing& r = ring(dev);
      std::lock_guard lock(r.mutex);
      if (r.ready()) {
        staged_read(dev, r, *a.memory, 0, static_cast<std::byte*>(dst), bytes);
        return;
      }
    }
    dev.read(*a.memory, 0, dst, bytes);
    return;
  }
  dev.read_rect(dev.default_queue(), *a.memory, a.at(), dst, dense_host(a), a.whole(), {})->wait();
}

std::shared_ptr<EventImpl> copy_box_async(DeviceImpl& dev, QueueImpl& q, const ArrayImpl& src,
                                          const Pitched& s, ArrayImpl& dst, const Pitched& d,
                                          const Extent& e, Waits waits) {
  const bool src_image = src.memory->is_image(), dst_image = dst.memory->is_image();
  // Buffer <-> image copies need a tightly packed buffer box (see DeviceImpl::copy_rect);
  // other boxes go through a tight temporary on the device.
  if (src_image == dst_image || is_dense(src_image ? d : s, e)) {
    return dev.copy_rect(q, *src.memory, s, *dst.memory, d, e, waits);
  }
  auto tmp = dev.pool().allocate(e[0] * e[1] * e[2]);
  const Pitched t{{0, 0, 0}, e[0], e[0] * e[1]};
  auto first = dev.copy_rect(q, *src.memory, s, *tmp, t, e, waits);
  EventImpl* w[] = {first.get()};
  auto second = dev.copy_rect(q, *tmp, t, *dst.memory, d, e, w);
  // The temporary returns to the pool only after the copy has read it.
  dev.retain(second, tmp);
  return second;
}

void copy_box(const ArrayImpl& src, const Pitched& s, ArrayImpl& dst, const Pitched& d,
              const Extent& e) {
  if (src.device == dst.device) {
    DeviceImpl& dev = *src.device;
    copy_box_async(dev, dev.default_queue(), src, s, dst, d, e, {})->wait();
    return;
  }
  // Whole contiguous arrays between devices: pipelined through the source's pinned ring.
  const bool whole = s.origin == std::array<std::size_t, 3>{} &&
                     d.origin == std::array<std::size_t, 3>{} && e == src.whole() &&
                     e == dst.whole();
  if (whole) {
    std::shared_ptr<const ArrayImpl> sc;
    const ArrayImpl* sp = &src;
    if (!src.contiguous()) {
      sc = contiguous_copy(src);
      sp = sc.get();
    }
    std::shared_ptr<ArrayImpl> dc;
    ArrayImpl* dp = &dst;
    if (!dst.contiguous()) {
      dc = std::make_shared<ArrayImpl>(dst.device, dst.device->pool().allocate(e[0] * e[1] * e[2]),
                                       dst.shape, dst.dtype);
      dp = dc.get();
    }
    const std::size_t bytes = e[0] * e[1] * e[2];
    // Device to device where the pair has a direct path (CUDA peer to peer).
    if (auto ev = sp->device->copy_peer(*sp->memory, 0, *dp->device, *dp->memory, 0, bytes)) {
      ev->wait();
      if (dc) copy_box(*dc, dc->at(), dst, d, e);
      return;
    }
    StagingRing& r = ring(*sp->device);
    std::unique_lock lock(r.mutex);
    if (r.ready()) {
      DeviceImpl& sd = *sp->device;
      DeviceImpl& dd = *dp->device;
      const std::size_t cb = r.chunk_bytes();
      // busy[k]: the write out of chunk k; the read into chunk k waits for it, so while the
      // destination takes chunk k the source fills the next one.
      std::array<std::shared_ptr<EventImpl>, StagingRing::kChunks> busy;
      int k = 0;
      try {
        for (std::size_t pos = 0; pos < bytes; pos += cb, k = (k + 1) % StagingRing::kChunks) {
          const std::size_t n = std::min(cb, bytes - pos);
          auto& slot = busy[static_cast<std::size_t>(k)];
          if (slot) slot->wait();
          sd.read_rect(sd.default_queue(), *sp->memory, linear(pos, n), r.chunk(k), linear(0, n),
                       {n, 1, 1}, {})
              ->wait();
          slot = dd.write_rect(dd.default_queue(), *dp->memory, linear(pos, n), r.chunk(k),
                               linear(0, n), {n, 1, 1}, {});
        }
        for (auto& ev : busy) {
          if (ev) ev->wait();
        }
      } catch (...) {
        for (auto& ev : busy) {
          try {
            if (ev) ev->wait();
          } catch (const Error&) {
          }
        }
        throw;
      }
    } else {
      lock.unlock();
      std::vector<std::byte> host(bytes);
      sp->device->read(*sp->memory, 0, host.data(), bytes);
      dp->device->write(*dp->memory, 0, host.data(), bytes);
    }
    if (dc) copy_box(*dc, dc->at(), dst, d, e);
    return;
  }
  // A box between devices: through a host block.
  std::vector<std::byte> host(e[0] * e[1] * e[2]);
  const Pitched h{{0, 0, 0}, e[0], e[0] * e[1]};
  src.device->read_rect(src.device->default_queue(), *src.memory, s, host.data(), h, e, {})->wait();
  dst.device->write_rect(dst.device->default_queue(), *dst.memory, d, host.data(), h, e, {})
      ->wait();
}

Submission submission(const std::shared_ptr<DeviceImpl>& dev, const Queue& q,
                      const std::vector<Event>& after) {
  Submission s;
  s.device = dev.get();
  if (q.valid()) {
    const auto& qs = Access::state(q);
    if (qs->device != dev) {
      throw InvalidArgument("a queue of '" + qs->device->info().name + "' was given for work on '" +
                            dev->info().name +
                            "'; use a queue of the array's device (Queue::create(array.device()))");
    }
    s.queue = qs->queue;
  } else {
    s.queue = &dev->default_queue();
  }
  for (const Event& e : after) {
    const auto& st = Access::state(e);
    if (!st) continue;
    if (st->device == dev) {
      s.waits.push_back(st->event.get());
    } else {
      st->event->wait();  // events of other devices (contexts) cannot sit in a wait list
    }
  }
  return s;
}

Event make_event(std::shared_ptr<EventImpl> e, std::shared_ptr<DeviceImpl> dev,
                 std::vector<std::shared_ptr<const void>> keep) {
  // Whatever the event must keep alive survives a dropped Event too: the device holds it
  // until the event is done.
  for (const auto& k : keep) dev->retain(e, k);
  auto st = std::make_shared<EventState>();
  st->event = std::move(e);
  st->device = std::move(dev);
  st->keep = std::move(keep);
  return Access::event(std::move(st));
}

}  // namespace gpix::detail
