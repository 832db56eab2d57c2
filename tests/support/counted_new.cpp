// The counting replacements of the global allocation functions (counted_new.h).
#include "support/counted_new.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> g_news{0};
}  // namespace

std::uint64_t gpix::test::news() {
  return g_news.load(std::memory_order_relaxed);
}

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  const auto al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
// The nothrow forms too: libstdc++'s call the two above, but AddressSanitizer replaces them
// with its own, whose blocks the deletes below would then free() (an alloc-dealloc mismatch).
void* operator new(std::size_t n, const std::nothrow_t& /*tag*/) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t& /*tag*/) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  const auto al = static_cast<std::size_t>(a);
  return std::aligned_alloc(al, (n + al - 1) / al * al);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t /*n*/) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t /*a*/) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t /*n*/, std::align_val_t /*a*/) noexcept {
  std::free(p);
}
