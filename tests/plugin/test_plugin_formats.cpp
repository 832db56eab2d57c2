// The gpix plugin's formats go through the one implementation of each: raw files through
// gpix_io (the same file read with the CLI's --shape/--dtype, through its sidecar, and by the
// plugin gives the same pixels) and PNG through gpix_qt's QImage conversion.
#include <QCoreApplication>
#include <QGuiApplication>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <filesystem>

#include "formats.h"
#include "gpix/filters.h"
#include "gpix/io.h"
#include "gpix/qimage.h"
#include "gpix/raw.h"
#include "support/process.h"
#include "support/random.h"

using namespace gpix;

namespace {

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace

class TestPluginFormats : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void raw_reads_the_same_everywhere() {
    const Shape s{4, 6, 5};
    const HostArray want = HostArray::from(test::random_values<std::uint16_t>(s.elements()), s);
    // Written by the plugin's writer: pixels plus sidecar.
    const QString path = tmp_.filePath(QStringLiteral("scan.raw"));
    plugin::Layer l;
    l.name = QStringLiteral("scan");
    l.host = want;
    formats::raw_writer().write(l, path);
    const auto file = std::filesystem::u8path(path.toStdString());
    // The plugin's reader and gpix_io, with the sidecar and with the CLI's explicit layout.
    const QList<plugin::Layer> read = formats::raw_reader().read(path);
    QCOMPARE(read.size(), 1);
    QVERIFY(same_bytes(read.first().host, want));
    QVERIFY(same_bytes(io::read_raw(file), want));
    QVERIFY(same_bytes(io::read_raw(file, {s, DType::u16}), want));
    // A name that says its layout needs no sidecar.
    const QString named = tmp_.filePath(QStringLiteral("cells_4x6x5_u16.raw"));
    QVERIFY(QFile::copy(path, named));
    QVERIFY(same_bytes(formats::raw_reader().read(named).first().host, want));
    // The CLI: --shape/--dtype and the sidecar give the pixels the plugin read (invert is one
    // to one, so equal outputs mean equal inputs).
    const QString a = tmp_.filePath(QStringLiteral("a.tif")),
                  b = tmp_.filePath(QStringLiteral("b.tif"));
    test::ProcessResult r = test::run_cli({QStringLiteral("run"), QStringLiteral("invert"), path, a,
                                           QStringLiteral("--shape"), QStringLiteral("4,6,5"),
                                           QStringLiteral("--dtype"), QStringLiteral("u16")});
    QVERIFY2(r.code == 0, r.err.constData());
    r = test::run_cli({QStringLiteral("run"), QStringLiteral("invert"), path, b});
    QVERIFY2(r.code == 0, r.err.constData());
    const HostArray inv = invert(Array::push(read.first().host)).pull();
    QVERIFY(same_bytes(io::read(a.toStdString()).pixels, inv));
    QVERIFY(same_bytes(io::read(b.toStdString()).pixels, inv));
    // Wrong sizes are reported with both numbers by either path.
    QVERIFY_THROWS_EXCEPTION(IoError, io::read_raw(file, {Shape{4, 6, 6}, DType::u16}));
    r = test::run_cli({QStringLiteral("info"), path, QStringLiteral("--shape"),
                       QStringLiteral("4,6,6"), QStringLiteral("--dtype"), QStringLiteral("u16")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("240 bytes"), r.err.constData());
  }

  void png_goes_through_gpix_qt() {
    QImage gray(7, 5, QImage::Format_Grayscale8), deep(7, 5, QImage::Format_Grayscale16);
    QImage rgb(7, 5, QImage::Format_RGB32), rgb16(7, 5, QImage::Format_RGBX64);
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 7; ++x) {
        gray.setPixel(x, y, qRgb(x * 30, x * 30, x * 30));
        reinterpret_cast<std::uint16_t*>(deep.scanLine(y))[x] = std::uint16_t(x * 9000 + y);
        rgb.setPixel(x, y, qRgb(x * 30, y * 50, 200 - x * 10));
        reinterpret_cast<QRgba64*>(rgb16.scanLine(y))[x] =
            QRgba64::fromRgba64(std::uint16_t(x * 9000), std::uint16_t(y * 700), 40000, 65535);
      }
    }
    for (const QImage& img : {gray, deep, rgb, rgb16}) {
      const QString path = tmp_.filePath(QStringLiteral("f%1.png").arg(int(img.format())));
      QVERIFY(img.save(path, "PNG"));
      const QList<plugin::Layer> layers = formats::png_reader().read(path);
      if (img.isGrayscale()) {
        QCOMPARE(layers.size(), 1);
        QVERIFY(same_bytes(layers.first().host, qt::from_qimage(img)));
        // And back through the writer: the same file contents as pixels.
        const QString again = tmp_.filePath(QStringLiteral("again.png"));
        formats::png_writer().write(layers.first(), again);
        QVERIFY(same_bytes(qt::from_qimage(QImage(again).convertToFormat(img.format())),
                           layers.first().host));
      } else {
        // One composite: (3, y, x), plane c is channel c, shown in red, green and blue.
        QCOMPARE(layers.size(), 1);
        const plugin::Layer& l = layers.first();
        QCOMPARE(l.host.shape(), (Shape{3, 5, 7}));
        QCOMPARE(l.channels.size(), std::size_t{3});
        const QRgb colours[] = {qRgb(255, 0, 0), qRgb(0, 255, 0), qRgb(0, 0, 255)};
        for (int c = 0; c < 3; ++c) {
          const HostArray want = qt::from_qimage(img, io::Channels::channel, c);
          QCOMPARE(
              std::memcmp(l.host.data() + std::size_t(c) * want.bytes(), want.data(), want.bytes()),
              0);
          QCOMPARE(l.channels[std::size_t(c)].colour, colours[c]);
        }
      }
    }
  }

  // A multi-channel TIFF opens as a composite; saved from the viewer (TIFF, NRRD, MetaImage)
  // it keeps its channel mark, so that it opens as a composite again with its pixels.
  void composites_keep_their_channels() {
    const Shape shape{3, 6, 9};
    const auto data = test::random_values<std::uint16_t>(shape.elements());
    io::Metadata m;
    m.channels = 3;
    const QString in = tmp_.filePath(QStringLiteral("channels.tif"));
    io::write(in.toStdString(), HostArray::from(data, shape), m);
    QList<plugin::Layer> layers = formats::io_reader().read(in);
    QCOMPARE(layers.size(), 1);
    QCOMPARE(layers.first().channels.size(), std::size_t{3});
    // Colours the user chose come back with the file (TIFF as ImageJ LUTs).
    const QRgb chosen[] = {qRgb(0, 128, 255), qRgb(255, 0, 0), qRgb(255, 255, 0)};
    for (std::size_t c = 0; c < 3; ++c) layers.first().channels[c].colour = chosen[c];
    for (const char* ext : {"tif", "nrrd", "mha"}) {
      const QString out = tmp_.filePath(QStringLiteral("saved.%1").arg(ext));
      formats::io_writer().write(layers.first(), out);
      QCOMPARE(io::read(out.toStdString()).meta.channels, 3);
      const QList<plugin::Layer> again = formats::io_reader().read(out);
      QCOMPARE(again.size(), 1);
      QVERIFY2(again.first().composite(), ext);
      QCOMPARE(again.first().channels.size(), std::size_t{3});
      for (std::size_t c = 0; c < 3; ++c)
        QCOMPARE(again.first().channels[c].colour | 0xff000000u, chosen[c] | 0xff000000u);
      QVERIFY(same_bytes(again.first().host, layers.first().host));
    }
    // An RGB photo saved as TIFF reopens in red, green and blue (not the fluorescence colours
    // of a composite without colours).
    QImage photo(7, 5, QImage::Format_RGB32);
    photo.fill(qRgb(200, 100, 50));
    const QString png = tmp_.filePath(QStringLiteral("photo.png"));
    QVERIFY(photo.save(png, "PNG"));
    const QList<plugin::Layer> rgb = formats::io_reader().read(png);
    QCOMPARE(rgb.size(), 1);
    QCOMPARE(rgb.first().channels.size(), std::size_t{3});
    const QString saved = tmp_.filePath(QStringLiteral("photo.tif"));
    formats::io_writer().write(rgb.first(), saved);
    const QList<plugin::Layer> back = formats::io_reader().read(saved);
    QCOMPARE(back.first().channels.size(), std::size_t{3});
    const QRgb want[] = {qRgb(255, 0, 0), qRgb(0, 255, 0), qRgb(0, 0, 255)};
    for (std::size_t c = 0; c < 3; ++c)
      QCOMPARE(back.first().channels[c].colour | 0xff000000u, want[c] | 0xff000000u);
    // A plain stack stays a stack.
    plugin::Layer plain = layers.first();
    plain.channels.clear();
    const QString stack = tmp_.filePath(QStringLiteral("stack.tif"));
    formats::io_writer().write(plain, stack);
    QCOMPARE(io::read(stack.toStdString()).meta.channels, 1);
  }

  // Fiji's multi-channel z stack (an ImageJ hyperstack, pages in CZT order) opens as one z
  // stack per channel with the slice spacing, not as one stack with the channels interleaved
  // into z.
  void hyperstacks_open_as_a_layer_per_channel() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile");
    const QString in = tmp_.filePath(QStringLiteral("fiji zc.tif"));
    const test::ProcessResult r = test::run_python(
        py,
        QStringLiteral("import sys, numpy as np, tifffile\n"
                       "a = np.arange(4 * 2 * 6 * 5, dtype='u2').reshape(4, 2, 6, 5)\n"
                       "tifffile.imwrite(sys.argv[1], a, imagej=True, resolution=(4, 4),\n"
                       "    metadata={'axes': 'ZCYX', 'spacing': 3.0, 'unit': 'um'})\n"),
        {in});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<plugin::Layer> layers = formats::io_reader().read(in);
    QCOMPARE(layers.size(), 2);
    for (int c = 0; c < 2; ++c) {
      const plugin::Layer& l = layers[c];
      QCOMPARE(l.name, QStringLiteral("fiji zc [C%1]").arg(c + 1));
      QCOMPARE(l.shape(), (Shape{4, 6, 5}));
      QCOMPARE(l.spacing, (std::vector<double>{3.0, 0.25, 0.25}));
      QVERIFY(!l.composite());
      // Shown added together, as Fiji shows the channels (opaque, C2 hid C1); C1 covers the
      // layers below the hyperstack.
      QCOMPARE(l.additive, c > 0);
      // Slice z of channel c is page z * 2 + c: values (z * 2 + c) * 30 + i.
      const auto px = l.host.as<std::uint16_t>();
      for (std::size_t z = 0; z < 4; ++z)
        QCOMPARE(px[z * 30 + 7], std::uint16_t((z * 2 + std::size_t(c)) * 30 + 7));
    }
    QCOMPARE(layers[0].colormap, QStringLiteral("green"));
    QCOMPARE(layers[1].colormap, QStringLiteral("magenta"));
    // With Fiji's LUTs (a channel's colour is its LUT's brightest entry): each channel in its
    // colour where a colour map is black to it; another colour is said, and shown in gray.
    const QString luts = tmp_.filePath(QStringLiteral("fiji luts.tif"));
    const test::ProcessResult w = test::run_python(
        py,
        QStringLiteral("import sys, numpy as np, tifffile\n"
                       "t = np.arange(256)\n"
                       "lut = lambda r, g, b: np.stack([t * r // 255, t * g // 255,\n"
                       "                                t * b // 255]).astype('u1')\n"
                       "a = np.arange(3 * 4 * 6 * 5, dtype='u2').reshape(3, 4, 6, 5)\n"
                       "tifffile.imwrite(sys.argv[1], a, imagej=True, metadata={\n"
                       "    'axes': 'ZCYX', 'LUTs': [lut(255, 0, 0), lut(0, 255, 255),\n"
                       "    lut(255, 255, 255), lut(255, 128, 0)]})\n"),
        {luts});
    QVERIFY2(w.code == 0, w.err.constData());
    const QList<plugin::Layer> coloured = formats::io_reader().read(luts);
    QCOMPARE(coloured.size(), 4);
    QCOMPARE(coloured[0].colormap, QStringLiteral("red"));
    QCOMPARE(coloured[1].colormap, QStringLiteral("cyan"));
    QCOMPARE(coloured[2].colormap, QStringLiteral("gray"));
    QVERIFY(!coloured[2].metadata.contains(QStringLiteral("colour")));
    QCOMPARE(coloured[3].colormap, QStringLiteral("gray"));
    QVERIFY2(coloured[3].metadata.value(QStringLiteral("colour")).toString().contains("#ff8000"),
             qPrintable(coloured[3].metadata.value(QStringLiteral("colour")).toString()));
    QCOMPARE(io::hyperstack_colours(luts.toStdString(), 4),
             (std::vector<std::uint32_t>{0xff0000, 0x00ffff, 0xffffff, 0xff8000}));
    QVERIFY(io::hyperstack_colours(luts.toStdString(), 3).empty());  // not one a channel
    QVERIFY(io::hyperstack_colours(in.toStdString(), 2).empty());    // no LUTs
    // OME-TIFF (Bio-Formats, microscopes' exports): each Channel's Color, a signed RGBA number,
    // for a composite's channels and a hyperstack's layers alike.
    const QString ome_c = tmp_.filePath(QStringLiteral("channels.ome.tif"));
    const QString ome_zc = tmp_.filePath(QStringLiteral("stack.ome.tif"));
    const test::ProcessResult o = test::run_python(
        py,
        QStringLiteral("import sys, numpy as np, tifffile\n"
                       "ch = {'Name': ['a', 'b', 'c'],\n"
                       "      'Color': [-16776961, 16711935, -1]}\n"
                       "tifffile.imwrite(sys.argv[1], np.zeros((3, 6, 5), 'u2'), ome=True,\n"
                       "    metadata={'axes': 'CYX', 'Channel': ch})\n"
                       "tifffile.imwrite(sys.argv[2], np.zeros((4, 3, 6, 5), 'u2'), ome=True,\n"
                       "    metadata={'axes': 'ZCYX', 'Channel': ch})\n"),
        {ome_c, ome_zc});
    QVERIFY2(o.code == 0, o.err.constData());
    const io::Image composite = io::read(ome_c.toStdString());
    QCOMPARE(composite.meta.channels, 3);
    QCOMPARE(composite.meta.channel_colours,
             (std::vector<std::uint32_t>{0xff0000, 0x00ff00, 0xffffff}));
    const QList<plugin::Layer> ome_layers = formats::io_reader().read(ome_zc);
    QCOMPARE(ome_layers.size(), 3);
    QCOMPARE(ome_layers[0].shape(), (Shape{4, 6, 5}));
    QCOMPARE(ome_layers[0].colormap, QStringLiteral("red"));
    QCOMPARE(ome_layers[1].colormap, QStringLiteral("green"));
    QCOMPARE(ome_layers[2].colormap, QStringLiteral("gray"));
  }
};

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  TestPluginFormats t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_plugin_formats.moc"
