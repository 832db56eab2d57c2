#pragma once
// Random test data, from one seed per run (printed, and taken from GPIX_TEST_SEED when set, so
// that a failure can be replayed).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "gpix/shape.h"

namespace gpix::test {

std::uint64_t seed();
std::mt19937_64& rng();

// Random values over the dtype's whole range (integers) or a wide signed range (floats).
template <class T>
std::vector<T> random_values(std::size_t n) {
  std::vector<T> v(n);
  auto& r = rng();
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> small(std::numeric_limits<T>::lowest() < 0 ? -1000 : 0,
                                                   1000);
    for (auto& x : v) {
      // Mostly full-range bits, some small values so sums are not dominated by extremes.
      if (r() % 4 == 0) {
        x = static_cast<T>(small(r));
      } else {
        const std::uint64_t bits = r();
        std::memcpy(&x, &bits, sizeof(T));
      }
    }
  } else {
    std::uniform_real_distribution<double> d(-1000.0, 1000.0);
    for (auto& x : v) x = static_cast<T>(d(r));
  }
  return v;
}

// Random bit patterns: for floats this includes NaNs with payloads, infinities, -0 and
// denormals, for the bit-exact round trip.
template <class T>
std::vector<T> random_bits(std::size_t n) {
  std::vector<T> v(n);
  auto& r = rng();
  for (auto& x : v) {
    const std::uint64_t bits = r();
    std::memcpy(&x, &bits, sizeof(T));
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(),  std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),  T(-0.0),
                          std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::lowest()};
    for (std::size_t i = 0; i < std::min<std::size_t>(n, 6); ++i) v[(i * 7919) % n] = specials[i];
  }
  return v;
}

// Shapes that find stride and edge bugs: 1-pixel dims, odd sizes, 2D and 3D.
std::vector<Shape> odd_shapes();

}  // namespace gpix::test
