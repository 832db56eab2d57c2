#pragma once
// An allocator that keeps freed blocks for the next allocation of the same size class, so that
// what every filter call creates and drops (its output's ArrayImpl, the pool block's
// shared_ptr control block, the defines and kernel arguments of each launch) costs no heap
// allocation once a few calls have run (issue 17: "no allocation on the hot path of a
// repeated call"; bench_launch counts them), and the small tables of reductions and
// histograms. Blocks of up to kLargestRecycled bytes are rounded up to a power of two from 64
// bytes, aligned to 64, and kept in one process-wide free list per size (a lock and a pop: tens
// of nanoseconds), at most kRecycledBlocks each up to 4 KiB and 1 MiB's worth each above (about
// 15 MB in all at most); larger blocks and those past the bound go to and from the heap as
// usual. Under AddressSanitizer every block goes to the heap: a recycled block would hide a
// use after free of the objects that live in it.
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace gpix::detail {

inline constexpr std::size_t kSmallestRecycled = 64;
// 512 KiB: Otsu's host arrays for a 16-bit image that spans its whole range (65536 bins of
// uint64 counts and of float64 class means, and the device's uint32 counts read back); the
// table of a histogram's largest bin count (4096 bins, three float64 columns) takes 128 KiB.
inline constexpr std::size_t kLargestRecycled = std::size_t{512} << 10;
inline constexpr std::size_t kRecycledBlocks = 1024;
inline constexpr std::size_t kRecycledBytesLarge = std::size_t{1} << 20;
inline constexpr std::size_t kRecycledAlign = 64;

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kRecycling = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kRecycling = false;
#else
inline constexpr bool kRecycling = true;
#endif
#else
inline constexpr bool kRecycling = true;
#endif

class FreeBlocks {
 public:
  // The list for blocks of `bytes` (rounded up); nullptr past kLargestRecycled.
  static FreeBlocks* of(std::size_t bytes) {
    if (!kRecycling || bytes > kLargestRecycled) return nullptr;
    static std::array<FreeBlocks*, kClasses> lists = [] {
      // Never destroyed: blocks may come back from static destructors after main().
      std::array<FreeBlocks*, kClasses> l{};
      for (std::size_t i = 0; i < kClasses; ++i) l[i] = new FreeBlocks(kSmallestRecycled << i);
      return l;
    }();
    const std::size_t rounded = std::bit_ceil(std::max(bytes, kSmallestRecycled));
    return lists[static_cast<std::size_t>(std::countr_zero(rounded / kSmallestRecycled))];
  }
  std::size_t block_bytes() const { return bytes_; }
  void* pop() {
    {
      std::lock_guard lock(mutex_);
      if (!blocks_.empty()) {
        void* p = blocks_.back();
        blocks_.pop_back();
        return p;
      }
    }
    return ::operator new(bytes_, std::align_val_t(kRecycledAlign));
  }
  void push(void* p) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (blocks_.size() < capacity_) {
        blocks_.push_back(p);  // reserved: never allocates
        return;
      }
    }
    ::operator delete(p, std::align_val_t(kRecycledAlign));
  }

 private:
  static constexpr std::size_t kClasses =
      static_cast<std::size_t>(std::countr_zero(kLargestRecycled / kSmallestRecycled)) + 1;
  explicit FreeBlocks(std::size_t bytes)
      : bytes_(bytes), capacity_(bytes <= 4096 ? kRecycledBlocks : kRecycledBytesLarge / bytes) {
    blocks_.reserve(capacity_);
  }
  std::size_t bytes_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::vector<void*> blocks_;
};

template <class T>
struct Recycling {
  using value_type = T;
  static_assert(alignof(T) <= kRecycledAlign);
  Recycling() = default;
  template <class U>
  Recycling(const Recycling<U>& /*other*/) noexcept {}  // NOLINT(google-explicit-constructor)

  T* allocate(std::size_t n) {
    if (FreeBlocks* f = FreeBlocks::of(n * sizeof(T))) return static_cast<T*>(f->pop());
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (FreeBlocks* f = FreeBlocks::of(n * sizeof(T))) return f->push(p);
    ::operator delete(p, std::align_val_t(alignof(T)));
  }
  template <class U>
  bool operator==(const Recycling<U>& /*other*/) const noexcept {
    return true;
  }
};

// A vector of a launch's own (taps, passes, partial results), recycled the same way.
template <class T>
using RecycledVector = std::vector<T, Recycling<T>>;

}  // namespace gpix::detail
