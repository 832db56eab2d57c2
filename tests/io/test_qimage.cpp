// QImage <-> HostArray (gpix_qt) and the render_rgba -> QImage display path.
#include <QImage>
#include <QTest>

#include "gpix/qimage.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

class TestQImage : public QObject {
  Q_OBJECT
 private slots:
  void gray() {
    for (const auto& [w, h] : {std::pair{7, 5}, {1, 1}, {13, 1}, {1, 9}}) {
      const Shape s{static_cast<std::size_t>(h), static_cast<std::size_t>(w)};
      const HostArray a8 = HostArray::from(test::random_bits<std::uint8_t>(s.elements()), s);
      const QImage q8 = qt::to_qimage(a8);
      QCOMPARE(q8.format(), QImage::Format_Grayscale8);
      QCOMPARE(q8.width(), w);
      QCOMPARE(q8.height(), h);
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x)
          QCOMPARE(q8.constScanLine(y)[x],
                   a8.as<std::uint8_t>()[static_cast<std::size_t>(y * w + x)]);
      }
      const HostArray b8 = qt::from_qimage(q8);
      QVERIFY(std::memcmp(b8.data(), a8.data(), a8.bytes()) == 0);
      const HostArray a16 = HostArray::from(test::random_bits<std::uint16_t>(s.elements()), s);
      const QImage q16 = qt::to_qimage(a16);
      QCOMPARE(q16.format(), QImage::Format_Grayscale16);
      QCOMPARE(reinterpret_cast<const std::uint16_t*>(q16.constScanLine(h - 1))[w - 1],
               a16.as<std::uint16_t>().back());
      const HostArray b16 = qt::from_qimage(q16);
      QCOMPARE(b16.dtype(), DType::u16);
      QVERIFY(std::memcmp(b16.data(), a16.data(), a16.bytes()) == 0);
    }
  }

  void colour() {
    QImage im(6, 4, QImage::Format_ARGB32);
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 6; ++x) im.setPixel(x, y, static_cast<QRgb>(test::rng()()));
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, qt::from_qimage(im));
    const HostArray split = qt::from_qimage(im, io::Channels::split);
    QCOMPARE(split.shape(), (Shape{4, 4, 6}));
    const HostArray blue = qt::from_qimage(im, io::Channels::channel, 2);
    const HostArray lum = qt::from_qimage(im, io::Channels::luminance);
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 6; ++x) {
        const QRgb p = im.pixel(x, y);
        const auto i = static_cast<std::size_t>(y * 6 + x);
        QCOMPARE(int(blue.as<std::uint8_t>()[i]), qBlue(p));
        QCOMPARE(int(split.as<std::uint8_t>()[72 + i]), qAlpha(p));
        QCOMPARE(lum.as<float>()[i],
                 static_cast<float>(0.2126 * qRed(p) + 0.7152 * qGreen(p) + 0.0722 * qBlue(p)));
      }
    }
    // Back: (4, h, w) -> ARGB32, (3, h, w) -> RGB32.
    const QImage again = qt::to_qimage(split);
    QCOMPARE(again.format(), QImage::Format_ARGB32);
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 6; ++x) QCOMPARE(again.pixel(x, y), im.pixel(x, y));
    }
    const QImage rgb = im.convertToFormat(QImage::Format_RGB32);
    const HostArray s3 = qt::from_qimage(rgb, io::Channels::split);
    QCOMPARE(s3.shape(), (Shape{3, 4, 6}));
    QCOMPARE(qt::to_qimage(s3).pixel(5, 3), rgb.pixel(5, 3));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, qt::from_qimage(rgb, io::Channels::channel, 3));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             qt::from_qimage(im.convertToFormat(QImage::Format_Indexed8)));
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, qt::to_qimage(HostArray::from(
                                                   test::random_values<float>(6), Shape{2, 3})));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument,
        qt::to_qimage(HostArray::from(test::random_values<std::uint8_t>(30), Shape{5, 2, 3})));
  }

  void render_to_qimage_data() { test::add_device_rows(); }
  void render_to_qimage() {
    const Device dev = test::fetch_device();
    const auto vals = test::random_values<std::uint16_t>(2 * 5 * 7);
    const Array a = Array::push(vals, Shape{2, 5, 7}, dev);
    const QImage im = qt::rgba_to_qimage(render_rgba(a, 0, 65536, lut("gray"), 1).pull());
    QCOMPARE(im.format(), QImage::Format_RGBA8888);
    QCOMPARE(im.size(), QSize(7, 5));
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 7; ++x) {
        const int v = vals[static_cast<std::size_t>(35 + y * 7 + x)] >>
                      8;  // 65536 / 256 = 256 levels per entry
        QCOMPARE(im.pixel(x, y), qRgba(v, v, v, 255));
      }
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             qt::rgba_to_qimage(HostArray::from(vals, Shape{2, 5, 7})));
  }
};

QTEST_MAIN(TestQImage)
#include "test_qimage.moc"
