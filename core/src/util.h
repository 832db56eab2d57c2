#pragma once
// Small helpers shared by core's sources: strings, sizes, busy waits.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>
#endif

#include "gpix/stats.h"

namespace gpix::detail {

inline std::string trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back()))))
    s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return std::string(s);
}

inline std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

inline std::string human(std::uint64_t bytes) {
  return human_bytes(bytes);
}

// One step of a busy wait: a pause instruction where there is one (a few dozen cycles, no
// system call). sched_yield in the staging threads' waits made the driver calls of the thread
// that queues a DMA take 7-60 us instead of 2-3 (H200 host, 2026-11-22).
inline void relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace gpix::detail
