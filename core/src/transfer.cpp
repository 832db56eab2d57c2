// Transfers between host and device and between arrays, for every layout: contiguous
// buffers take the backend's plain calls; padded arrays, images and regions take the pitched
// calls; large transfers from ordinary host memory are pipelined through a ring of pinned
// chunks; copies between devices go peer to peer where the backend can (CUDA), otherwise they
// are staged through pinned host memory. Pushes and pulls have a ring, copy threads and (for
// large pushes) a queue each, so one of each can be in flight on a device at once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>  // SSE2 (baseline x86-64): non-temporal stores for staged pieces
#endif

#include "config.h"
#include "copy_threads.h"
#include "detail.h"
#include "gpix/error.h"
#include "memory_pool.h"
#include "staging_ring.h"
#include "util.h"

namespace gpix::detail {
namespace {

// How transfers from ordinary (pageable) host memory are staged: config().staging
// (core/src/config.h; the variables are in docs/ENVIRONMENT.md). Defaults from
// `bench_memory --sweep` on an H200 host (2026-11-22): staging from 0.5 MB with a thread per
// 64 kB and pieces of at least 512 kB (1 MB in two pieces by eight threads, with the threads
// polling: 20-21 GB/s push and 17-18 pull, against 16-17 and 13-14 with a thread per 256 kB and
// 256 kB pieces); non-temporal stores lifted pulls of 256 MB from 26-35 to 45-49 GB/s and pushes
// of 16 MB from 17-27 to 29-33, but held pushes of 256 MB at 27-32 where memcpy reached 32-47.
constexpr std::size_t kStreamPushMax = std::size_t{64} << 20;

// Pushes and pulls of pinned memory from this size on run on the device's push and pull
// queues, beside each other: the two queue calls that order the transfer after the default
// queue (a few microseconds on CUDA) are then well under a percent of the transfer, where for
// the 1 MB transfers that bench_transfer times they would show.
constexpr std::size_t kPinnedQueueMin = std::size_t{16} << 20;

// The split of one staged transfer. The bytes go through the ring in `pieces` pieces of
// `piece` bytes (the last one shorter), one DMA each, `slots` of them in flight (piece k in
// slot k % slots). Every piece is copied in `per_piece` slices of `slice` bytes, and the
// transfer's `workers` threads take the slices in order, whichever thread is free: all of
// them work on the first piece while later ones are in flight, so the copy that trails the
// last DMA is one slice, not one piece, and a thread that wakes late only joins in.
struct StagingPlan {
  std::size_t piece = 0, pieces = 0, slots = 1, slice = 0, per_piece = 1;
  unsigned workers = 1;
};

constexpr std::size_t kMinPiece = std::size_t{512} << 10;
constexpr std::size_t kSliceAlign = std::size_t{4} << 10;

StagingPlan plan_staging(std::size_t bytes, const StagingConfig& c, std::size_t ring_bytes) {
  StagingPlan p;
  // One thread per GPIX_STAGING_WORKER_MB at most: a thread costs a wake-up (or its polling)
  // and a slice of tens of kB.
  p.workers = static_cast<unsigned>(std::clamp<std::size_t>(
      bytes / std::max<std::size_t>(c.per_worker, 1), 1, std::max(1u, c.threads)));
  std::size_t piece = bytes / std::max(1u, c.pieces);
  piece = (piece + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
  piece = std::clamp(piece, std::min(kMinPiece, c.max_piece), std::max(c.max_piece, kPieceAlign));
  p.piece = std::max<std::size_t>(std::min(piece, ring_bytes), 1);
  p.pieces = (bytes + p.piece - 1) / p.piece;
  p.slots = std::min(p.pieces, ring_bytes / p.piece);
  if (c.depth > 0) p.slots = std::min<std::size_t>(p.slots, c.depth);
  p.slice = (p.piece + p.workers - 1) / p.workers;
  p.slice = (p.slice + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
  p.per_piece = (p.piece + p.slice - 1) / p.slice;
  return p;
}

// Copies one staged piece. With `streaming` (x86-64), the stores bypass the cache
// (non-temporal): the destination is either pinned memory that only the DMA engine reads next
// or the caller's buffer, megabytes that would only evict the cache, and the stores skip the
// read-for-ownership that ordinary stores pay. Elsewhere, or without `streaming`, memcpy.
void piece_copy(std::byte* dst, const std::byte* src, std::size_t n, bool streaming) {
#if defined(__x86_64__) || defined(_M_X64)
  if (streaming && n >= 4096) {
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % 16;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    const std::size_t blocks = n / 64;
    auto* d = reinterpret_cast<__m128i*>(dst);
    const auto* sv = reinterpret_cast<const __m128i*>(src);
    for (std::size_t b = 0; b < blocks; ++b, d += 4, sv += 4) {
      const __m128i v0 = _mm_loadu_si128(sv), v1 = _mm_loadu_si128(sv + 1);
      const __m128i v2 = _mm_loadu_si128(sv + 2), v3 = _mm_loadu_si128(sv + 3);
      _mm_stream_si128(d, v0);
      _mm_stream_si128(d + 1, v1);
      _mm_stream_si128(d + 2, v2);
      _mm_stream_si128(d + 3, v3);
    }
    std::memcpy(dst + blocks * 64, src + blocks * 64, n - blocks * 64);
    _mm_sfence();  // the streamed stores are visible before the DMA is queued / the caller reads
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, src, n);
}

bool want_staging(std::size_t bytes, const StagingConfig& c) {
  return !c.off && bytes >= c.min_bytes;
}

Pitched linear(std::size_t offset, std::size_t bytes) {
  return Pitched{{offset, 0, 0}, bytes, bytes};
}

// A staged push that a kernel on the device takes in while the threads copy it into the ring
// (DeviceImpl::stream_in): the threads take the slices in order and mark each one ready once
// it is in the ring; the caller launches the kernel first thing. The kernel starts reading
// with the first slice, and no driver call is made between the launch and the end (a DMA
// call takes ~5 us while the other threads copy; a 1 MB push queued two of them).
void streamed(DeviceImpl& dev, DeviceImpl::StreamedPush& push, std::byte* ring,
              const std::byte* from, std::size_t bytes, std::size_t slice, unsigned workers,
              bool stream) {
  const std::size_t slices = (bytes + slice - 1) / slice;
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;  // start()'s, on the caller
  dev.copy_threads(true).run(workers, [&](unsigned w) {
    if (w == 0) {
      try {
        push.start();
      } catch (...) {
        error = std::current_exception();
        next.store(slices);  // the other threads stop after their current slice
      }
    }
    for (;;) {
      const std::size_t k = next.fetch_add(1, std::memory_order_relaxed);
      if (k >= slices) return;
      const std::size_t lo = k * slice;
      piece_copy(ring + lo, from + lo, std::min(slice, bytes - lo), stream);
      push.ready(k);
    }
  });
  push.finish(error != nullptr);
  if (error) std::rethrow_exception(error);
}

// The slice of a streamed push of `bytes`: 1/128 of it, 32 kB to 1 MB, 4 kB aligned.
std::size_t stream_slice(std::size_t bytes, const StagingConfig& c) {
  if (c.slice > 0) return (c.slice + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
  const std::size_t s = (bytes / 128 + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
  return std::clamp(s, std::size_t{32} << 10, std::size_t{1} << 20);
}

// Queue q (the device's push or pull queue) ordered after everything submitted to its
// default queue so far: a push into memory that queued kernels still read (a pool block
// handed on) waits for them, a pull waits for the kernels that make its bytes, as when both
// went on the default queue, and kernels queued after the transfer returns see its bytes (it
// is waited for first). The wait is a marker of the default queue that q's next command waits
// for on the device (an in-order queue starts a command after the one before it), not a wait
// on the host. Pulls run on a queue of their own so that this marker never holds a push
// behind a pull.
QueueImpl& after_default(DeviceImpl& dev, QueueImpl& q) {
  const std::shared_ptr<EventImpl> before = dev.marker(dev.default_queue(), {});
  EventImpl* w[] = {before.get()};
  (void)dev.marker(q, w);
  return q;
}
QueueImpl& push_queue_after_default(DeviceImpl& dev) {
  return after_default(dev, dev.push_queue());
}
// The push queue after `after` only (write_all_after).
QueueImpl& push_queue_after(DeviceImpl& dev, EventImpl& after) {
  EventImpl* w[] = {&after};
  (void)dev.marker(dev.push_queue(), w);
  return dev.push_queue();
}
QueueImpl& pull_queue_after_default(DeviceImpl& dev) {
  return after_default(dev, dev.pull_queue());
}

// One staged transfer between pageable host memory and a contiguous device range, the
// direction's ring's lock held; from (host -> device) or to (device -> host) is set. Pushes
// run on the push queue, pulls on the pull queue (after_default), so a push and a pull travel
// at once. Pulls: the caller
// queues the reads of the first `slots` pieces before any thread starts (the DMA engine
// starts at once, not after a thread wake-up); the thread that copies out a piece's last
// slice queues the read of the piece that takes over its slot. Pushes: the thread that
// copies in a piece's last slice queues its write; a piece's slices wait for the write of the
// piece that held the slot before. Slices are taken in order, so every wait is for a piece
// whose slices were all taken earlier: the transfer cannot deadlock, and a failure stops
// every thread (queued DMAs are waited for before the ring is released).
void staged(DeviceImpl& dev, StagingRing& r, Memory& mem, std::size_t offset, const std::byte* from,
            std::byte* to, std::size_t bytes, const StagingConfig& c, EventImpl* after = nullptr) {
  const bool to_device = from != nullptr;
  const bool stream =
      c.streaming == 1 || (c.streaming == -1 && (!to_device || bytes < kStreamPushMax));
  QueueImpl& q = !to_device ? pull_queue_after_default(dev)
                 : after    ? push_queue_after(dev, *after)
                            : push_queue_after_default(dev);
  StagingConfig cd = c;
  if (const unsigned limit = dev.max_transfer_threads(); limit > 0) {
    cd.threads = std::min(cd.threads, limit);
  }
  const StagingPlan p = plan_staging(bytes, cd, r.bytes());
  if (to_device && bytes <= std::min(c.kernel_max, r.bytes())) {
    const std::size_t slice = stream_slice(bytes, c);
    std::byte* ring_at = r.at(r.take(bytes));
    if (auto push = dev.stream_in(q, mem, offset, ring_at, bytes, slice)) {
      streamed(dev, *push, ring_at, from, bytes, slice, p.workers, stream);
      return;
    }
  }
  struct Piece {
    std::shared_ptr<EventImpl> dma;
    std::atomic<bool> queued{false};   // dma is set (release / acquire)
    std::atomic<bool> waiting{false};  // one thread waits for dma in the driver ...
    std::atomic<bool> done{false};     // ... and the others for this
    std::atomic<std::size_t> left{0};  // slices not yet copied
  };
  std::vector<Piece> pieces(p.pieces);
  for (Piece& pc : pieces) pc.left.store(p.per_piece, std::memory_order_relaxed);
  auto extent = [&](std::size_t k) { return std::min(p.piece, bytes - k * p.piece); };
  const std::size_t base = r.take(p.slots * p.piece);
  auto slot = [&](std::size_t k) { return r.at(base + k % p.slots * p.piece); };
  auto queue = [&](std::size_t k) {
    const std::size_t n = extent(k);
    const Pitched dev_range = linear(offset + k * p.piece, n);
    pieces[k].dma = to_device
                        ? dev.write_rect(q, mem, dev_range, slot(k), linear(0, n), {n, 1, 1}, {})
                        : dev.read_rect(q, mem, dev_range, slot(k), linear(0, n), {n, 1, 1}, {});
    pieces[k].queued.store(true, std::memory_order_release);
  };
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto fail = [&](std::exception_ptr e) {
    std::lock_guard lock(error_mutex);
    if (!error) error = std::move(e);
    failed.store(true);
  };
  // Waits for piece k's DMA, which another thread may still have to queue; false when the
  // transfer failed meanwhile. One thread waits in the driver, the others for its word: the
  // slices of one piece start together, and eight threads in cuEventSynchronize at once cost
  // more than the copy of a slice.
  auto until = [&](const std::atomic<bool>& flag) {
    while (!flag.load(std::memory_order_acquire)) {
      if (failed.load(std::memory_order_relaxed)) return false;
      relax();
    }
    return true;
  };
  auto landed = [&](std::size_t k) {
    Piece& pc = pieces[k];
    if (pc.done.load(std::memory_order_acquire)) return true;
    if (!until(pc.queued)) return false;
    if (pc.waiting.exchange(true)) return until(pc.done);
    pc.dma->wait();
    pc.done.store(true, std::memory_order_release);
    return true;
  };
  if (!to_device) {
    try {
      for (std::size_t k = 0; k < p.slots; ++k) queue(k);
    } catch (...) {
      fail(std::current_exception());
    }
  }
  std::atomic<std::size_t> next{0};
  const std::size_t slices = p.pieces * p.per_piece;
  dev.copy_threads(to_device).run(p.workers, [&](unsigned) {
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        const std::size_t u = next.fetch_add(1, std::memory_order_relaxed);
        if (u >= slices) return;
        const std::size_t k = u / p.per_piece, lo = u % p.per_piece * p.slice, n = extent(k);
        // Pull: piece k has landed. Push: the slot's previous piece has left.
        if (!(to_device ? k < p.slots || landed(k - p.slots) : landed(k))) return;
        if (lo < n) {
          const std::size_t len = std::min(p.slice, n - lo);
          if (to_device) {
            piece_copy(slot(k) + lo, from + k * p.piece + lo, len, stream);
          } else {
            piece_copy(to + k * p.piece + lo, slot(k) + lo, len, stream);
          }
        }
        if (pieces[k].left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          if (to_device) {
            queue(k);
          } else if (k + p.slots < p.pieces) {
            queue(k + p.slots);
          }
        }
      }
    } catch (...) {
      fail(std::current_exception());
    }
  });
  // The ring is reused only after every queued DMA, also after a failure.
  for (Piece& pc : pieces) {
    if (!pc.queued.load(std::memory_order_acquire)) continue;
    try {
      pc.dma->wait();
    } catch (...) {
      fail(std::current_exception());
    }
  }
  if (error) std::rethrow_exception(error);
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

// Where a's pixels lie as one byte range of its buffer (contiguous arrays, and region views
// whose box is dense: whole rows of whole slices, as a slab of planes is), or none. Such a
// view moves as a linear transfer through the staging ring: a pitched transfer from pageable
// memory runs at a few GB/s on CUDA (the driver stages it row by row).
std::optional<std::size_t> linear_offset(const ArrayImpl& a) {
  if (a.contiguous()) return 0;
  if (a.memory->is_image()) return std::nullopt;
  const Pitched p = a.at();
  if (!is_dense(p, a.whole())) return std::nullopt;
  return p.offset(0, 0, 0);
}

namespace {
void write_all_impl(ArrayImpl& a, const void* src, bool host_pinned, EventImpl* after) {
  DeviceImpl& dev = *a.device;
  const std::size_t bytes = a.shape.elements() * a.element_bytes();
  if (const auto offset = linear_offset(a)) {
    // Pinned memory goes straight to the DMA engine (at 1 MB a call takes ~27 us, and
    // microseconds of overhead show).
    const StagingConfig& c = config().staging;
    if (!host_pinned && want_staging(bytes, c)) {
      StagingRing& r = dev.staging_ring(true);
      std::lock_guard lock(r.mutex);
      if (r.ready()) {
        staged(dev, r, *a.memory, *offset, static_cast<const std::byte*>(src), nullptr, bytes, c,
               after);
        return;
      }
    }
    // With `after`, on the push queue at any size: that is what lets it pass later kernels.
    if (host_pinned && (bytes >= kPinnedQueueMin || after)) {
      QueueImpl& q = after ? push_queue_after(dev, *after) : push_queue_after_default(dev);
      dev.write_rect(q, *a.memory, linear(*offset, bytes), src, linear(0, bytes), {bytes, 1, 1}, {})
          ->wait();
      return;
    }
    dev.write(*a.memory, *offset, src, bytes);
    return;
  }
  dev.write_rect(dev.default_queue(), *a.memory, a.at(), src, dense_host(a), a.whole(), {})->wait();
}
}  // namespace

void write_all(ArrayImpl& a, const void* src, bool host_pinned) {
  write_all_impl(a, src, host_pinned, nullptr);
}

void write_all_after(ArrayImpl& a, const void* src, bool host_pinned, EventImpl& after) {
  write_all_impl(a, src, host_pinned, &after);
}

void read_all(const ArrayImpl& a, void* dst, bool host_pinned) {
  DeviceImpl& dev = *a.device;
  const std::size_t bytes = a.shape.elements() * a.element_bytes();
  if (const auto offset = linear_offset(a)) {
    const StagingConfig& c = config().staging;
    if (!host_pinned && want_staging(bytes, c)) {
      StagingRing& r = dev.staging_ring(false);
      std::lock_guard lock(r.mutex);
      if (r.ready()) {
        staged(dev, r, *a.memory, *offset, nullptr, static_cast<std::byte*>(dst), bytes, c);
        return;
      }
    }
    if (host_pinned && bytes >= kPinnedQueueMin) {
      dev.read_rect(pull_queue_after_default(dev), *a.memory, linear(*offset, bytes), dst,
                    linear(0, bytes), {bytes, 1, 1}, {})
          ->wait();
      return;
    }
    dev.read(*a.memory, *offset, dst, bytes);
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
  // The temporary is a pool block that may have an earlier owner's kernels still queued on the
  // default queue (see Submission::after_earlier_owners).
  std::vector<EventImpl*> w0(waits.begin(), waits.end());
  std::vector<std::shared_ptr<EventImpl>> keep;
  after_earlier_owners(dev, q, *tmp, w0, keep);
  auto first = dev.copy_rect(q, *src.memory, s, *tmp, t, e, {w0.data(), w0.size()});
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
    // The source's pull ring: the chunks are read from it first.
    StagingRing& r = sp->device->staging_ring(false);
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

void after_earlier_owners(DeviceImpl& dev, QueueImpl& q, Memory& m, std::vector<EventImpl*>& waits,
                          std::vector<std::shared_ptr<EventImpl>>& keep) {
  if (&q == &dev.default_queue()) return;  // in order with the earlier owners' work
  Memory::HandOn& h = m.hand_on();
  const std::lock_guard lock(h.mutex);
  if (h.pending) {
    // If this throws, the block stays pending: the next call records the marker.
    h.marker = dev.marker(dev.default_queue(), {});
    h.pending = false;
  } else if (!h.marker) {
    return;
  } else if (h.marker->done()) {
    h.marker.reset();
    return;
  }
  // Once per event: a view and its base (one block) in one call wait once.
  if (std::find(waits.begin(), waits.end(), h.marker.get()) != waits.end()) return;
  waits.push_back(h.marker.get());
  keep.push_back(h.marker);
}

void Submission::after_earlier_owners(std::initializer_list<Memory*> blocks) {
  for (Memory* m : blocks) detail::after_earlier_owners(*device, *queue, *m, waits, keep);
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
