#include "support/random.h"

#include <QString>
#include <QtGlobal>

namespace gpix::test {

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    bool ok = false;
    std::uint64_t v = qEnvironmentVariable("GPIX_TEST_SEED").toULongLong(&ok);
    if (!ok) v = std::random_device{}();
    qInfo("GPIX_TEST_SEED=%llu", static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::mt19937_64& rng() {
  static std::mt19937_64 r(seed());
  return r;
}

std::vector<Shape> odd_shapes() {
  return {Shape{1},      Shape{1, 1},    Shape{1, 17},   Shape{17, 1},   Shape{13},
          Shape{31, 37}, Shape{3, 5, 7}, Shape{1, 1, 9}, Shape{9, 1, 1}, Shape{11, 23, 29}};
}

}  // namespace gpix::test
