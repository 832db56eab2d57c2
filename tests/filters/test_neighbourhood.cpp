// Reference tests for the "Neighbourhood" category.
#include "harness.h"
#include "reference.h"

using namespace gpix;
using namespace gpix::test;

namespace {

GPIX_REFERENCE("gaussian_blur") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape, false);
    const double sx = 1.3, sy = 0.7, sz = shape.ndim() == 3 ? 1.1 : 0.0;
    const Result r = run("gaussian_blur", a, {{"sigma_x", sx}, {"sigma_y", sy}, {"sigma_z", sz}});
    QCOMPARE(r.array.dtype(), dtype);
    auto ref = ref::to_double(host);
    const double sig[3] = {sx, sy, sz};
    for (int axis = 0; axis < shape.ndim(); ++axis) {
      if (sig[axis] > 0) ref = ref::convolve_axis(ref, shape, ref::gaussian_taps(sig[axis]), axis);
    }
    // float32 accumulation over up to ~25 taps: 1e-5 relative; integers may differ by one
    // where the exact value sits near .5.
    compare(r.array.pull_as<T>(), ref::cast<T>(ref), 1, std::is_same_v<T, double> ? 1e-12 : 1e-5,
            where("gaussian_blur", dtype, shape));
  });
});

}  // namespace

class TestNeighbourhood : public QObject {
  Q_OBJECT
 private slots:
  void neighbourhood_data() { add_rows("Neighbourhood"); }
  void neighbourhood() { run_row(); }
};

QTEST_APPLESS_MAIN(TestNeighbourhood)
#include "test_neighbourhood.moc"
