#include "support/compare.h"

#include <cstring>

namespace gpix::test {

bool same_bits(const Array& a, const Array& b) {
  const HostArray x = a.pull(), y = b.pull();
  return x.shape() == y.shape() && x.dtype() == y.dtype() && x.bytes() == y.bytes() &&
         std::memcmp(x.data(), y.data(), x.bytes()) == 0;
}

}  // namespace gpix::test
