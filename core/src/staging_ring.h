#pragma once
// The pinned staging ring of one device (transfer.cpp stages pageable transfers through it).
#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "config.h"
#include "gpix/error.h"

namespace gpix::detail {

// Pieces of staged transfers, and so the ring's chunks, are multiples of 64 kB.
constexpr std::size_t kPieceAlign = std::size_t{64} << 10;

// A pinned ring per device and direction (GPIX_STAGING_RING_MB, default 64 MB, one allocation
// each, made on the first staged transfer of that direction): staged transfers cut it into
// slots per worker; cross-device copies into kChunks equal chunks. DeviceImpl::staging_ring()
// owns them, beside the device's memory pool; each ring's mutex is held for a whole transfer.
class StagingRing {
 public:
  static constexpr int kChunks = 4;
  explicit StagingRing(DeviceImpl& dev) : dev_(dev) {}
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // False when the backend has no pinned memory or async transfers yet; then the plain path
  // is used (a performance choice, the result is the same).
  bool ready() {
    if (state_ == State::unknown) {
      try {
        const std::size_t bytes = std::max(config().staging.ring_bytes, kPieceAlign * kChunks);
        block_ = dev_.allocate_host(bytes / kPieceAlign * kPieceAlign);
        dev_.default_queue();
        state_ = State::ready;
      } catch (const Error&) {
        block_.reset();
        state_ = State::unavailable;
      }
    }
    return state_ == State::ready;
  }
  std::size_t bytes() const { return block_->bytes(); }
  std::byte* at(std::size_t offset) { return static_cast<std::byte*>(block_->data()) + offset; }
  std::size_t chunk_bytes() const { return bytes() / kChunks / kPieceAlign * kPieceAlign; }
  std::byte* chunk(int k) { return at(static_cast<std::size_t>(k) * chunk_bytes()); }
  // Where a staged transfer that needs `used` bytes of slots starts: after the previous one,
  // around the ring. A DMA into or out of pinned memory whose lines sit in a CPU's cache (the
  // copy threads just read them) waits for the snoops: a 1 MiB pull 26 -> 34-45 us on an
  // H200 host, 29 us once 8 MB of other data has passed through the cache. Moving on through
  // the ring gives the lines that time (same lease, staged pulls: 1 MB 15-18 -> 22-26 GB/s,
  // 16 MB 35-39 -> 44-47). Call with `mutex` held.
  std::size_t take(std::size_t used) {
    if (cursor_ + used > bytes()) cursor_ = 0;
    const std::size_t base = cursor_;
    cursor_ = (base + used + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
    return base;
  }
  std::mutex mutex;

 private:
  enum class State { unknown, ready, unavailable };
  DeviceImpl& dev_;
  State state_ = State::unknown;
  std::unique_ptr<HostMemory> block_;
  std::size_t cursor_ = 0;
};

}  // namespace gpix::detail
