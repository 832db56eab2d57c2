// itk::Image <-> gpix both ways, for every pixel type, 1D to 3D, with metadata; and on devices.
#include <itkImage.h>
#include <QTest>

#include "gpix/itk.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

template <class TPixel, unsigned D>
void check_pixel_type(const Device& dev) {
  using Img = itk::Image<TPixel, D>;
  const Shape s = D == 1 ? Shape{7} : D == 2 ? Shape{5, 9} : Shape{3, 1, 11};
  // gpix -> ITK
  HostArray h = HostArray::empty(s, io::itk_dtype<TPixel>());
  const auto bits = test::random_bits<std::uint8_t>(h.bytes());
  std::memcpy(h.data(), bits.data(), h.bytes());
  io::Metadata m;
  for (unsigned i = 0; i < D; ++i) {
    m.spacing.push_back(0.5 + i);
    m.origin.push_back(-3.0 * i + 1.25);
  }
  m.direction.assign(D * D, 0.0);
  for (unsigned i = 0; i < D; ++i) m.direction[(D - 1 - i) * D + i] = 1.0;  // axes swapped
  typename Img::Pointer img = io::to_itk<TPixel, D>(h, m);
  // ITK's index (x, y, z) is gpix's (z, y, x) reversed.
  typename Img::IndexType last;
  for (unsigned i = 0; i < D; ++i)
    last[i] = static_cast<itk::IndexValueType>(s[static_cast<int>(D - 1 - i)] - 1);
  QVERIFY(std::memcmp(&img->GetPixel(last), h.data() + h.bytes() - sizeof(TPixel),
                      sizeof(TPixel)) == 0);
  for (unsigned i = 0; i < D; ++i) {
    QCOMPARE(img->GetSpacing()[i], m.spacing[D - 1 - i]);
    QCOMPARE(img->GetOrigin()[i], m.origin[D - 1 - i]);
  }
  // ITK -> gpix, host and device
  const io::Image back = io::from_itk(img.GetPointer());
  QCOMPARE(back.pixels.shape(), s);
  QVERIFY(std::memcmp(back.pixels.data(), h.data(), h.bytes()) == 0);
  QCOMPARE(back.meta.spacing, m.spacing);
  QCOMPARE(back.meta.origin, m.origin);
  QCOMPARE(back.meta.direction, m.direction);
  if (io::itk_dtype<TPixel>() != DType::f64 || dev.supports_fp64()) {
    const io::DeviceImage d = io::from_itk(img.GetPointer(), dev);
    QVERIFY(d.pixels.device() == dev);
    const HostArray pulled = d.pixels.pull();
    QVERIFY(std::memcmp(pulled.data(), h.data(), h.bytes()) == 0);
    typename Img::Pointer again = io::to_itk<TPixel, D>(d);
    QVERIFY(std::memcmp(again->GetBufferPointer(), h.data(), h.bytes()) == 0);
    QCOMPARE(again->GetDirection(), img->GetDirection());
  }
}

template <class TPixel>
void all_dims(const Device& dev) {
  check_pixel_type<TPixel, 1>(dev);
  check_pixel_type<TPixel, 2>(dev);
  check_pixel_type<TPixel, 3>(dev);
}

}  // namespace

class TestIoItk : public QObject {
  Q_OBJECT
 private slots:
  void round_trip_data() { test::add_device_rows(); }
  void round_trip() {
    const Device dev = test::fetch_device();
    all_dims<unsigned char>(dev);
    all_dims<signed char>(dev);
    all_dims<char>(dev);
    all_dims<unsigned short>(dev);
    all_dims<short>(dev);
    all_dims<unsigned int>(dev);
    all_dims<int>(dev);
    all_dims<unsigned long>(dev);
    all_dims<long>(dev);
    all_dims<unsigned long long>(dev);
    all_dims<long long>(dev);
    all_dims<float>(dev);
    all_dims<double>(dev);
  }

  void cropped_buffer_keeps_physical_position() {
    using Img = itk::Image<float, 2>;
    auto img = Img::New();
    Img::IndexType start{{4, 2}};
    Img::SizeType size{{3, 2}};
    img->SetRegions(Img::RegionType(start, size));
    img->Allocate();
    img->FillBuffer(1.5f);
    Img::SpacingType sp;
    sp[0] = 0.5;
    sp[1] = 2.0;
    img->SetSpacing(sp);
    const io::Image g = io::from_itk(img.GetPointer());
    QCOMPARE(g.pixels.shape(), (Shape{2, 3}));
    QCOMPARE(g.meta.origin, (std::vector<double>{4.0, 2.0}));  // (y, x): 2 * 2.0, 4 * 0.5
  }

  void errors() {
    const HostArray h = HostArray::from(test::random_values<float>(6), Shape{2, 3});
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, (io::to_itk<double, 2>(h)));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (io::to_itk<float, 3>(h)));
    io::Metadata m;
    m.spacing = {1, 2, 3};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (io::to_itk<float, 2>(h, m)));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             io::from_itk(static_cast<const itk::Image<float, 2>*>(nullptr)));
  }
};

QTEST_GUILESS_MAIN(TestIoItk)
#include "test_io_itk.moc"
