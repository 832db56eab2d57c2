#pragma once
// A QImage's pixels as render_rgba's uint32 words (bytes R, G, B, A), for the UI suites that
// compare what the viewer shows with core's rendering.
#include <QImage>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gpix::test {

inline std::vector<std::uint32_t> words(const QImage& img) {
  std::vector<std::uint32_t> v(std::size_t(img.width()) * std::size_t(img.height()));
  for (int y = 0; y < img.height(); ++y) {
    std::memcpy(v.data() + std::size_t(y) * std::size_t(img.width()), img.constScanLine(y),
                std::size_t(img.width()) * 4);
  }
  return v;
}

}  // namespace gpix::test
