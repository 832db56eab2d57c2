#include "support/shared_buffer.h"

#include <QTest>
#include <cstring>

#include "support/random.h"

namespace gpix::test {

void shared_buffer_round_trip(const Device& dev) {
  const Shape s{33, 17};
  const auto data = random_values<std::int32_t>(s.elements());
  SharedBuffer b = SharedBuffer::allocate(s.elements() * 4, dev);
  QVERIFY(b.data() != nullptr);
  {
    Mapping m = b.map(MapMode::write);
    std::memcpy(m.data(), data.data(), b.bytes());
  }
  Array a = Array::empty(s, DType::i32, dev);
  b.copy_to(a);
  QVERIFY(a.pull_as<std::int32_t>() == data);
  a.fill(-5);
  b.copy_from(a);
  const Mapping m = b.map(MapMode::read);
  const auto* p = reinterpret_cast<const std::int32_t*>(m.data());
  for (std::size_t i = 0; i < s.elements(); ++i) QCOMPARE(p[i], -5);
}

}  // namespace gpix::test
