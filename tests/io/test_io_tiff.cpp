// TIFF through libtiff: files gpix writes read the same in tifffile (Python) and files
// tifffile writes read bit for bit in gpix (every dtype, big-endian, tiled, compressed);
// files made with libtiff here for the reader's edge cases (row order, thumbnails, pages that
// differ, float16, RGB through ITK); and libtiff's warnings and errors never reach stderr raw
// (the `gpix info` CLI run as a subprocess), but gpix's message or Image::warnings.
#include <tiffio.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <fstream>

#include "gpix/io.h"
#include "gpix/slab_files.h"
#include "support/devices.h"
#include "support/process.h"
#include "support/random.h"

using namespace gpix;
namespace fs = std::filesystem;

namespace {

QByteArray slurp(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

bool mentions(const std::vector<std::string>& lines, const std::string& word) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(word) != std::string::npos; });
}

// Sets a SHORT or LONG tag of the first directory of a little-endian classic TIFF (as gpix
// writes them) to `value`, to make broken files.
void patch_tag(const QString& path, std::uint16_t tag, std::uint32_t value) {
  QByteArray b = slurp(path);
  QVERIFY(b.size() > 8 && b.startsWith("II*"));
  auto u16 = [&](qsizetype at) {
    return static_cast<std::uint16_t>(static_cast<std::uint8_t>(b[at]) |
                                      (static_cast<std::uint8_t>(b[at + 1]) << 8));
  };
  auto u32 = [&](qsizetype at) {
    return static_cast<std::uint32_t>(u16(at)) | (static_cast<std::uint32_t>(u16(at + 2)) << 16);
  };
  const qsizetype ifd = u32(4);
  const int n = u16(ifd);
  for (int i = 0; i < n; ++i) {
    const qsizetype e = ifd + 2 + 12 * i;
    if (u16(e) != tag) continue;
    QCOMPARE(u32(e + 4), 1u);  // one value, stored in the entry
    const std::uint16_t type = u16(e + 2);
    QVERIFY(type == TIFF_SHORT || type == TIFF_LONG);
    for (int k = 0; k < (type == TIFF_SHORT ? 2 : 4); ++k)
      b[e + 8 + k] = static_cast<char>((value >> (8 * k)) & 0xff);
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(b);
    return;
  }
  QFAIL(qPrintable(QStringLiteral("tag %1 not found in %2").arg(tag).arg(path)));
}

// A page for write_tiff: raw sample bytes in the file's row order.
struct Page {
  std::uint32_t width = 0, height = 0;
  std::uint16_t spp = 1, bits = 8, format = SAMPLEFORMAT_UINT;
  std::uint16_t photometric = PHOTOMETRIC_MINISBLACK, orientation = ORIENTATION_TOPLEFT;
  std::uint32_t subfile = 0;
  std::vector<std::uint8_t> data;
};

// Writes pages with libtiff directly; mode "w" (little-endian) or "wb" (big-endian, libtiff
// swaps the samples).
void write_tiff(const QString& path, const char* mode, const std::vector<Page>& pages) {
  TIFF* t = TIFFOpen(path.toLocal8Bit().constData(), mode);
  QVERIFY(t);
  for (const Page& p : pages) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, p.width);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, p.height);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, p.spp);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, p.bits);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, p.format);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, p.photometric);
    TIFFSetField(t, TIFFTAG_ORIENTATION, p.orientation);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, p.height);
    if (p.subfile) TIFFSetField(t, TIFFTAG_SUBFILETYPE, p.subfile);
    std::vector<std::uint8_t> copy = p.data;  // libtiff may swap in place
    QVERIFY(TIFFWriteEncodedStrip(t, 0, copy.data(), static_cast<tmsize_t>(copy.size())) ==
            static_cast<tmsize_t>(copy.size()));
    QVERIFY(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
}

template <class T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Every line of stderr is gpix's own ("gpix: ..."), one at most: no libtiff text before it.
void expect_clean_stderr(const test::ProcessResult& r) {
  const QList<QByteArray> lines = r.err.trimmed().split('\n');
  if (r.err.trimmed().isEmpty()) return;
  QVERIFY2(lines.size() == 1 && lines[0].startsWith("gpix: "), r.err.constData());
}

}  // namespace

class TestIoTiff : public QObject {
  Q_OBJECT
 private slots:
  // gpix writes every dtype, 2D and 3D; tifffile reads the same values with the same dtype,
  // and stacks along z.
  void tifffile_reads_gpix_files() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile (apt install python3-tifffile)");
    QTemporaryDir dir;
    std::vector<std::pair<QString, HostArray>> files;
    for (DType t : kAllDTypes) {
      for (const Shape& s : {Shape{13, 17}, Shape{4, 9, 6}}) {
        const HostArray h = visit_dtype(t, [&](auto z) {
          return HostArray::from(test::random_bits<decltype(z)>(s.elements()), s);
        });
        const QString path = dir.filePath(
            QStringLiteral("%1_%2d.tif").arg(QString::fromUtf8(name(t).data())).arg(s.ndim()));
        io::write(path.toStdString(), h);
        files.emplace_back(path, h);
      }
    }
    const QString script = dir.filePath(QStringLiteral("read.py"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "import sys, numpy as np, tifffile\n"
        "for p in sys.argv[1:]:\n"
        "    a = tifffile.imread(p)\n"
        "    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder('='))\n"
        "    open(p + '.bin', 'wb').write(a.tobytes())\n"
        "    axes = tifffile.TiffFile(p).series[0].axes\n"
        "    print(p, a.dtype.name, 'x'.join(map(str, a.shape)), axes)\n");
    f.close();
    QStringList args{script};
    for (const auto& [p, h] : files) args << p;
    const test::ProcessResult r = test::run_process(py, args);
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), static_cast<qsizetype>(files.size()));
    for (std::size_t i = 0; i < files.size(); ++i) {
      const auto& [path, h] = files[i];
      const QList<QByteArray> w = lines[static_cast<qsizetype>(i)].split(' ');
      QCOMPARE(QString::fromUtf8(w[0]), path);
      QCOMPARE(w[1].toStdString(), std::string(name(h.dtype())));
      QCOMPARE(w[2].toStdString(), [&] {
        std::string s;
        for (std::size_t d : h.shape().dims()) s += (s.empty() ? "" : "x") + std::to_string(d);
        return s;
      }());
      // Stacks as z (an ImageJ description with slices=N): tifffile said IYX without it, and
      // napari showed an unnamed axis.
      QCOMPARE(w[3].toStdString(), std::string(h.shape().ndim() == 3 ? "ZYX" : "YX"));
      const QByteArray got = slurp(path + QStringLiteral(".bin"));
      QVERIFY2(static_cast<std::size_t>(got.size()) == h.bytes() &&
                   std::memcmp(got.constData(), h.data(), h.bytes()) == 0,
               qPrintable(path));
    }
  }

  // tifffile writes (uint32, int64, float64 with NaN and infinities, and the rest; big-endian,
  // tiled, zlib, a predictor; 2D and stacks); gpix reads them bit for bit. One 16 MiB strip of
  // zeros at zlib level 9 (1028:1) stays under Deflate's 1032:1 bound and opens.
  void gpix_reads_tifffile_files() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile (apt install python3-tifffile)");
    QTemporaryDir dir;
    const QString script = dir.filePath(QStringLiteral("write.py"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "import sys, numpy as np, tifffile\n"
        "d, seed = sys.argv[1], int(sys.argv[2])\n"
        "rng = np.random.default_rng(seed)\n"
        "def bits(dtype, shape):\n"
        "    dt = np.dtype(dtype)\n"
        "    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)\n"
        "    a = raw.view(dt).reshape(shape).copy()\n"
        "    if dt.kind == 'f':\n"
        "        a.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]\n"
        "    else:\n"
        "        a.flat[:2] = [np.iinfo(dt).min, np.iinfo(dt).max]\n"
        "    return a\n"
        "cases = [\n"
        "    ('u32', bits('u4', (13, 17)), {}),\n"
        "    ('u32_zlib', bits('u4', (13, 17)), dict(compression='zlib')),\n"
        "    ('u32_bigendian', bits('u4', (5, 7)), dict(byteorder='>')),\n"
        "    ('i64_stack', bits('i8', (4, 9, 6)), {}),\n"
        "    ('i64_tiled', bits('i8', (3, 37, 21)), dict(tile=(16, 16))),\n"
        "    ('f64', bits('f8', (11, 9)), {}),\n"
        "    ('f64_stack_zlib', bits('f8', (2, 5, 3)), dict(compression='zlib')),\n"
        "    ('f64_bigendian', bits('f8', (3, 4)), dict(byteorder='>')),\n"
        "    ('i32_predictor', bits('i4', (8, 8)), dict(compression='zlib', predictor=True)),\n"
        "    ('u64', bits('u8', (1, 9)), {}),\n"
        "    ('f32', bits('f4', (9, 1)), {}),\n"
        "    ('u8', bits('u1', (6, 5)), {}),\n"
        "    ('i8', bits('i1', (2, 6, 5)), {}),\n"
        "    ('u16_tiled', bits('u2', (33, 17)), dict(tile=(16, 16))),\n"
        "    ('i16', bits('i2', (6, 5)), {}),\n"
        "    ('u8_zeros_zlib9', np.zeros((4096, 4096), 'u1'),\n"
        "     dict(compression='zlib', compressionargs={'level': 9}, rowsperstrip=4096)),\n"
        "]\n"
        "for name, a, kw in cases:\n"
        "    p = f'{d}/{name}.tif'\n"
        "    tifffile.imwrite(p, a, photometric='minisblack', **kw)\n"
        "    open(p + '.bin', 'wb').write(np.ascontiguousarray(a).tobytes())\n"
        "    print(name, a.dtype.name, 'x'.join(map(str, a.shape)))\n");
    f.close();
    const test::ProcessResult r =
        test::run_process(py, {script, dir.path(), QString::number(test::rng()() % 1000000)});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 16);
    for (const QByteArray& line : lines) {
      const QList<QByteArray> w = line.split(' ');
      const QString path = dir.filePath(QString::fromUtf8(w[0]) + QStringLiteral(".tif"));
      const io::Image img = io::read(path.toStdString());
      QCOMPARE(std::string(name(img.pixels.dtype())), w[1].toStdString());
      std::vector<std::size_t> dims;
      for (const QByteArray& d : w[2].split('x')) dims.push_back(d.toULongLong());
      QCOMPARE(img.pixels.shape(), Shape(std::span<const std::size_t>(dims)));
      const QByteArray want = slurp(path + QStringLiteral(".bin"));
      QVERIFY2(static_cast<std::size_t>(want.size()) == img.pixels.bytes() &&
                   std::memcmp(want.constData(), img.pixels.data(), img.pixels.bytes()) == 0,
               qPrintable(path));
      QVERIFY2(img.warnings.empty(), img.warnings.empty() ? "" : img.warnings[0].c_str());
    }
  }

  // Samples stored plane by plane (PlanarConfiguration 2: tifffile's default for (3, y, x)
  // RGB, some cameras'): RGB 8 and 16 bits, grey with an extra sample, strips of a few rows,
  // tiles, Deflate, a stack of RGB pages; read split, every value the file's. ITK's reader gave
  // 8-bit RGBA for the RGB ones (16-bit values cut to 8 bits, an alpha channel added), and
  // the grey ones were refused.
  void samples_stored_plane_by_plane() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile (apt install python3-tifffile)");
    QTemporaryDir dir;
    const test::ProcessResult r = test::run_python(
        py,
        QStringLiteral(
            "import sys, numpy as np, tifffile\n"
            "d = sys.argv[1]\n"
            "rng = np.random.default_rng(int(sys.argv[2]))\n"
            "def px(dt, shape):\n"
            "    return rng.integers(0, np.iinfo(dt).max, size=shape, endpoint=True).astype(dt)\n"
            "cases = [\n"
            "  ('rgb8', px('u1', (3, 13, 17)), dict(photometric='rgb')),\n"
            "  ('rgb16_strips', px('u2', (3, 29, 11)), dict(photometric='rgb', rowsperstrip=4)),\n"
            "  ('rgb16_tiles', px('u2', (3, 37, 21)), dict(photometric='rgb', tile=(16, 16))),\n"
            "  ('rgb16_zlib', px('u2', (3, 30, 9)),\n"
            "   dict(photometric='rgb', compression='zlib', rowsperstrip=7)),\n"
            "  ('rgba16', px('u2', (4, 6, 5)), dict(photometric='rgb', extrasamples=[2])),\n"
            "  ('grey2', px('u2', (2, 9, 8)),\n"
            "   dict(photometric='minisblack', extrasamples=[0])),\n"
            "]\n"
            "for name, a, kw in cases:\n"
            "    tifffile.imwrite(f'{d}/{name}.tif', a, planarconfig='separate', **kw)\n"
            "    open(f'{d}/{name}.bin', 'wb').write(a.tobytes())\n"
            "    print(name, 'x'.join(map(str, a.shape)))\n"
            "st = px('u2', (4, 3, 6, 5))\n"
            "tifffile.imwrite(f'{d}/stack.tif', st, photometric='rgb', planarconfig='separate')\n"
            "open(f'{d}/stack.bin', 'wb').write(st.tobytes())\n"
            "print('stack', 'x'.join(map(str, st.shape)))\n"),
        {dir.path(), QString::number(test::rng()() % 1000000)});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 7);
    for (const QByteArray& line : lines) {
      const QList<QByteArray> w = line.split(' ');
      const QString name = QString::fromUtf8(w[0]);
      std::vector<std::size_t> dims;
      for (const QByteArray& d : w[1].split('x')) dims.push_back(d.toULongLong());
      const QString path = dir.filePath(name + QStringLiteral(".tif"));
      if (name == QLatin1String("stack")) {
        // Pages of RGB: one channel of each page, as a z stack (4 pages, 3 samples each).
        for (int c = 0; c < 3; ++c) {
          io::ReadOptions o;
          o.channels = io::Channels::channel;
          o.channel = c;
          const io::Image img = io::read(path.toStdString(), o);
          QCOMPARE(img.pixels.shape(), (Shape{dims[0], dims[2], dims[3]}));
          QCOMPARE(img.pixels.dtype(), DType::u16);
          const QByteArray all = slurp(dir.filePath(QStringLiteral("stack.bin")));
          QCOMPARE(all.size(), qsizetype(4 * 3 * 30 * 2));
          std::vector<std::uint16_t> src(4 * 3 * 30);
          std::memcpy(src.data(), all.constData(), src.size() * 2);
          const auto got = img.pixels.as<std::uint16_t>();
          for (std::size_t z = 0; z < 4; ++z) {
            for (std::size_t i = 0; i < 30; ++i)
              QCOMPARE(got[z * 30 + i], src[(z * 3 + std::size_t(c)) * 30 + i]);
          }
        }
        continue;
      }
      io::ReadOptions o;
      o.channels = io::Channels::split;
      const io::Image img = io::read(path.toStdString(), o);
      QCOMPARE(img.pixels.shape(), Shape(std::span<const std::size_t>(dims)));
      QCOMPARE(img.pixels.dtype(), name.startsWith(QLatin1String("rgb8")) ? DType::u8 : DType::u16);
      const QByteArray want = slurp(dir.filePath(name + QStringLiteral(".bin")));
      QVERIFY2(static_cast<std::size_t>(want.size()) == img.pixels.bytes() &&
                   std::memcmp(want.constData(), img.pixels.data(), img.pixels.bytes()) == 0,
               qPrintable(name));
    }
  }

  // An ImageJ time series (frames only) reads as z planes, and says so in the warnings.
  void time_series_read_as_z_say_so() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile (apt install python3-tifffile)");
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("tyx.tif"));
    const test::ProcessResult r = test::run_python(
        py,
        QStringLiteral("import sys, numpy as np, tifffile\n"
                       "tifffile.imwrite(sys.argv[1], np.arange(5 * 6 * 7, dtype=np.uint16)"
                       ".reshape(5, 6, 7), imagej=True, metadata={'axes': 'TYX', "
                       "'finterval': 2.0})\n"),
        {path});
    QVERIFY2(r.code == 0, r.err.constData());
    const io::Image img = io::read(path.toStdString());
    QCOMPARE(img.pixels.shape(), (Shape{5, 6, 7}));
    QString all;
    for (const std::string& w : img.warnings) all += QString::fromStdString(w) + '\n';
    QVERIFY2(all.contains(QStringLiteral("5 pages are time points")) &&
                 all.contains(QStringLiteral("finterval=2")),
             qPrintable(all));
  }

  // Spacings of a few decimals come back as written, and the origins made from them: libtiff
  // keeps the x/y resolution as float32, and 1.5 read back as 1.49999996 (origin 4.5 as
  // 4.49999987). A spacing float32 cannot hold stays within its rounding.
  void spacing_round_trips_as_written() {
    QTemporaryDir dir;
    const double spacings[] = {1.5, 0.2, 0.325, 0.0645, 2.0, 0.1, 1e-3, 12.75, 2.0 / 3.0};
    for (const double sp : spacings) {
      for (const bool stack : {false, true}) {
        const Shape s = stack ? Shape{3, 5, 4} : Shape{5, 4};
        io::Metadata m;
        m.unit = "um";
        m.spacing = stack ? std::vector<double>{sp, sp, 0.7} : std::vector<double>{sp, sp};
        m.origin =
            stack ? std::vector<double>{3 * sp, 2 * sp, 1.4} : std::vector<double>{3 * sp, 2 * sp};
        const std::string path = dir.filePath(QStringLiteral("s.tif")).toStdString();
        io::write(path, HostArray::from(std::vector<std::uint8_t>(s.elements(), 1), s), m);
        const io::Metadata back = io::read(path).meta;
        const QByteArray where = QByteArray::number(sp, 'g', 17) + (stack ? " 3D" : " 2D");
        QCOMPARE(back.spacing.size(), m.spacing.size());
        for (std::size_t i = 0; i < m.spacing.size(); ++i) {
          const bool short_decimal = sp != 2.0 / 3.0;
          if (short_decimal) {
            QVERIFY2(back.spacing[i] == m.spacing[i] && back.origin[i] == m.origin[i],
                     where + ": " + QByteArray::number(back.spacing[i], 'g', 17) + " " +
                         QByteArray::number(back.origin[i], 'g', 17));
          } else {
            QVERIFY2(std::fabs(back.spacing[i] - m.spacing[i]) <= 1e-7 * m.spacing[i], where);
          }
        }
      }
    }
  }

  // Grayscale pixels of several samples (channels, or gray and alpha as ExtraSamples) are
  // vectors: refused without a policy, split into channels or one picked with it, every dtype,
  // strips or tiles, compressed, 2D and stacks. ITK read them as one sample, a pixel's samples as
  // consecutive pixels (an 11 x 13 x 3 file gave 11 x 13 pixels, two thirds of them lost).
  // Samples stored plane by plane are refused, saying how to store channels gpix reads.
  void grayscale_samples_are_components() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile (apt install python3-tifffile)");
    QTemporaryDir dir;
    const QString script = dir.filePath(QStringLiteral("samples.py"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "import sys, numpy as np, tifffile\n"
        "d, seed = sys.argv[1], int(sys.argv[2])\n"
        "rng = np.random.default_rng(seed)\n"
        "def bits(dtype, shape):\n"
        "    dt = np.dtype(dtype)\n"
        "    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)\n"
        "    return raw.view(dt).reshape(shape).copy()\n"
        "cases = [\n"
        "    ('u16x3', bits('u2', (11, 13, 3)), {}),\n"
        "    ('u8x2_alpha', bits('u1', (7, 5, 2)), dict(extrasamples=['unassalpha'])),\n"
        "    ('f32x4_tiled', bits('f4', (37, 21, 4)), dict(tile=(16, 16), compression='zlib')),\n"
        "    ('i64x2', bits('i8', (1, 9, 2)), {}),\n"
        "    ('u16x3_stack', bits('u2', (4, 6, 5, 3)), dict(compression='zlib')),\n"
        "]\n"
        "for name, a, kw in cases:\n"
        "    p = f'{d}/{name}.tif'\n"
        "    tifffile.imwrite(p, a, photometric='minisblack', planarconfig='contig', **kw)\n"
        "    assert tifffile.TiffFile(p).pages[0].samplesperpixel == a.shape[-1]\n"
        "    open(p + '.bin', 'wb').write(np.ascontiguousarray(np.moveaxis(a, -1, 0)).tobytes())\n"
        "    print(name, a.dtype.name, a.shape[-1], 'x'.join(map(str, a.shape[:-1])))\n"
        "sep = bits('u2', (3, 8, 9))\n"
        "tifffile.imwrite(f'{d}/separate.tif', sep, photometric='minisblack',\n"
        "                 planarconfig='separate')\n"
        "open(f'{d}/separate.bin', 'wb').write(sep.tobytes())\n");
    f.close();
    const test::ProcessResult r =
        test::run_process(py, {script, dir.path(), QString::number(test::rng()() % 1000000)});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 5);
    for (const QByteArray& line : lines) {
      const QList<QByteArray> w = line.split(' ');
      const QString path = dir.filePath(QString::fromUtf8(w[0]) + QStringLiteral(".tif"));
      const std::size_t n = w[2].toULongLong();
      std::vector<std::size_t> dims;
      for (const QByteArray& d : w[3].split('x')) dims.push_back(d.toULongLong());
      const Shape plane{std::span<const std::size_t>(dims)};
      const QByteArray want = slurp(path + QStringLiteral(".bin"));  // (samples, ...) order
      try {
        (void)io::read(path.toStdString());
        QFAIL(qPrintable(path + QStringLiteral(" read without a policy")));
      } catch (const gpix::IoError& e) {
        QVERIFY2(QString(e.what()).contains(QStringLiteral("%1-component").arg(n)), e.what());
      }
      for (std::size_t c = 0; c < n; ++c) {
        const io::Image one =
            io::read(path.toStdString(), {.channels = io::Channels::channel, .channel = int(c)});
        QCOMPARE(std::string(name(one.pixels.dtype())), w[1].toStdString());
        QCOMPARE(one.pixels.shape(), plane);
        QCOMPARE(one.file_components, int(n));
        QVERIFY2(std::memcmp(want.constData() + c * one.pixels.bytes(), one.pixels.data(),
                             one.pixels.bytes()) == 0,
                 qPrintable(path));
      }
      if (plane.ndim() == 2) {
        const io::Image all = io::read(path.toStdString(), {.channels = io::Channels::split});
        QCOMPARE(all.pixels.shape(), (Shape{n, plane[0], plane[1]}));
        QVERIFY(static_cast<std::size_t>(want.size()) == all.pixels.bytes() &&
                std::memcmp(want.constData(), all.pixels.data(), all.pixels.bytes()) == 0);
      }
    }
    // Stored plane by plane (refused before; samples_stored_plane_by_plane has more).
    const io::Image sep = io::read(dir.filePath(QStringLiteral("separate.tif")).toStdString(),
                                   {.channels = io::Channels::split});
    QCOMPARE(sep.pixels.shape(), (Shape{3, 8, 9}));
    const QByteArray want = slurp(dir.filePath(QStringLiteral("separate.bin")));
    QVERIFY(static_cast<std::size_t>(want.size()) == sep.pixels.bytes() &&
            std::memcmp(want.constData(), sep.pixels.data(), sep.pixels.bytes()) == 0);
  }

  // Fiji saves a multi-channel z stack as an ImageJ hyperstack, pages in CZT order; an
  // OME-TIFF orders them as its DimensionOrder says. Read as one z stack, the channels were
  // interleaved into z (a 3D filter mixed them) with only a note about the z spacing. Now they
  // are refused without a channel, saying the layout, and read one channel at a time as a stack
  // of its slices (or time points) with the slice spacing; slices and time points together,
  // several OME images and tifffile arrays of 4 dimensions are refused. Streaming refuses them
  // too. A stack of channels gives one channel's plane (also from NRRD and MetaImage).
  void hyperstacks_read_one_channel_at_a_time() {
    const QString py = test::python_with_tifffile();
    if (py.isEmpty()) QSKIP("no python3 with numpy and tifffile (apt install python3-tifffile)");
    QTemporaryDir dir;
    const QString script = dir.filePath(QStringLiteral("hyper.py"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "import sys, numpy as np, tifffile\n"
        "d, seed = sys.argv[1], int(sys.argv[2])\n"
        "rng = np.random.default_rng(seed)\n"
        "def data(shape, dtype='u2'):\n"
        "    return rng.integers(0, 60000, size=shape).astype(dtype)\n"
        "def save(name, a, c_axis, **kw):\n"
        "    tifffile.imwrite(f'{d}/{name}.tif', a, **kw)\n"
        "    for c in range(a.shape[c_axis]):\n"
        "        np.ascontiguousarray(np.take(a, c, axis=c_axis)).tofile(f'{d}/{name}.{c}.bin')\n"
        "    print(name, a.shape[c_axis])\n"
        "save('zc', data((5, 3, 17, 11)), 1, imagej=True, resolution=(2.0, 2.0),\n"
        "     metadata={'axes': 'ZCYX', 'spacing': 2500, 'zunit': 'nm', 'zorigin': 2,\n"
        "               'unit': 'um'})\n"
        "save('tc', data((4, 2, 9, 8), 'f4'), 1, imagej=True, metadata={'axes': 'TCYX'})\n"
        "save('ome_zc', data((3, 2, 13, 7)), 1, ome=True,\n"
        "     metadata={'axes': 'ZCYX', 'PhysicalSizeZ': 1500, 'PhysicalSizeZUnit': 'nm',\n"
        "               'PhysicalSizeX': 0.25,\n"
        "               'PhysicalSizeY': 0.25})\n"
        "save('ome_cz', data((2, 4, 13, 7)), 0, ome=True, metadata={'axes': 'CZYX'})\n"
        "save('c3', data((3, 10, 12)), 0, imagej=True, metadata={'axes': 'CYX'})\n"
        "tifffile.imwrite(f'{d}/tz.tif', data((3, 4, 9, 8)), imagej=True,\n"
        "                 metadata={'axes': 'TZYX'})\n"
        "tifffile.imwrite(f'{d}/shaped.tif', data((2, 5, 9, 8)))\n"
        "with tifffile.TiffWriter(f'{d}/series.ome.tif', ome=True) as w:\n"
        "    w.write(data((4, 9, 8)), metadata={'axes': 'ZYX'})\n"
        "    w.write(data((2, 9, 8)), metadata={'axes': 'ZYX'})\n");
    f.close();
    const test::ProcessResult r =
        test::run_process(py, {script, dir.path(), QString::number(test::rng()() % 1000000)});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 5);
    const auto file = [&](const QString& name) {
      return dir.filePath(name + QStringLiteral(".tif")).toStdString();
    };
    const auto refused = [&](const QString& name, const io::ReadOptions& o, const char* words) {
      try {
        (void)io::read(file(name), o);
        QFAIL(qPrintable(name + QStringLiteral(" was read")));
      } catch (const gpix::IoError& e) {
        QVERIFY2(QString(e.what()).contains(QLatin1String(words)), e.what());
      }
    };
    for (const QByteArray& line : lines) {
      const QString name = QString::fromUtf8(line.split(' ')[0]);
      const int channels = line.split(' ')[1].toInt();
      const bool hyper = name != QStringLiteral("c3");
      QCOMPARE(io::hyperstack_channels(file(name)), hyper ? std::size_t(channels) : 0);
      if (hyper) {
        refused(name, {}, "read one channel at a time");
        try {
          (void)io::open_slabs(file(name));
          QFAIL("a hyperstack was streamed as one stack");
        } catch (const gpix::IoError& e) {
          QVERIFY2(QString(e.what()).contains(QLatin1String("read one channel")), e.what());
          // A layout gpix cannot give whole, not a damaged file.
          QVERIFY2(!QString(e.what()).contains(QLatin1String("header")), e.what());
        }
        try {
          (void)io::read(file(name));
        } catch (const gpix::IoError& e) {
          QVERIFY2(!QString(e.what()).contains(QLatin1String("header")), e.what());
        }
      }
      for (int c = 0; c < channels; ++c) {
        const io::Image img =
            io::read(file(name), {.channels = io::Channels::channel, .channel = c});
        const QByteArray want = slurp(dir.filePath(QStringLiteral("%1.%2.bin").arg(name).arg(c)));
        QVERIFY2(static_cast<std::size_t>(want.size()) == img.pixels.bytes() &&
                     std::memcmp(want.constData(), img.pixels.data(), want.size()) == 0,
                 qPrintable(QStringLiteral("%1 channel %2").arg(name).arg(c)));
        QCOMPARE(img.meta.channels, 1);
        QCOMPARE(img.pixels.shape().ndim(), hyper ? 3 : 2);
        if (name == QStringLiteral("zc")) {
          // The slices' spacing in unit='s micrometres (zunit=nm), and their origin.
          QCOMPARE(img.meta.spacing, (std::vector<double>{2.5, 0.5, 0.5}));
          QCOMPARE(img.meta.origin.at(0), -5.0);
          QCOMPARE(img.meta.unit, std::string("um"));
          QVERIFY2(img.warnings.empty(), img.warnings.empty() ? "" : img.warnings[0].c_str());
        }
        if (name == QStringLiteral("ome_zc")) {
          QCOMPARE(img.meta.spacing, (std::vector<double>{1.5, 0.25, 0.25}));
          QVERIFY2(img.warnings.empty(), img.warnings.empty() ? "" : img.warnings[0].c_str());
        }
      }
      refused(
          name, {.channels = io::Channels::channel, .channel = channels},
          qPrintable(QStringLiteral("channels 0 to %1, not %2").arg(channels - 1).arg(channels)));
    }
    refused(QStringLiteral("tz"), {}, "save one channel of one time point per file");
    refused(QStringLiteral("tz"), {.channels = io::Channels::channel, .channel = 0},
            "1 channel(s), 4 slice(s) and 3 time point(s)");
    refused(QStringLiteral("shaped"), {}, "2 x 5 x 9 x 8");
    refused(QStringLiteral("series.ome"), {}, "more than one image");
    // A NRRD marked as 3 channels gives the plane of the channel asked for.
    const io::Image c3 = io::read(file(QStringLiteral("c3")));
    QCOMPARE(c3.meta.channels, 3);
    const std::string nrrd = dir.filePath(QStringLiteral("c3.nrrd")).toStdString();
    io::write(nrrd, c3.pixels, c3.meta);
    const io::Image one = io::read(nrrd, {.channels = io::Channels::channel, .channel = 2});
    QCOMPARE(one.pixels.shape(), (Shape{10, 12}));
    QCOMPARE(std::memcmp(one.pixels.data(), c3.pixels.data() + 2 * one.pixels.bytes(),
                         one.pixels.bytes()),
             0);
    QCOMPARE(one.meta.channels, 1);
  }

  // Files made with libtiff: big-endian, bottom-left row order, a thumbnail between two
  // pages, pages that differ, float16, and RGB (read by ITK, through the channel policy).
  void reader_edge_cases() {
    QTemporaryDir dir;
    const auto v = test::random_bits<std::uint16_t>(4 * 5);
    Page p{.width = 5, .height = 4, .bits = 16, .data = bytes_of(v)};
    const QString be = dir.filePath(QStringLiteral("big.tif"));
    write_tiff(be, "wb", {p});
    QVERIFY(same_bytes(io::read(be.toStdString()).pixels, HostArray::from(v, Shape{4, 5})));

    Page bottom = p;
    bottom.orientation = ORIENTATION_BOTLEFT;
    const QString bl = dir.filePath(QStringLiteral("bottom.tif"));
    write_tiff(bl, "w", {bottom});
    std::vector<std::uint16_t> flipped;
    for (int y = 3; y >= 0; --y)
      flipped.insert(flipped.end(), v.begin() + y * 5, v.begin() + y * 5 + 5);
    QVERIFY(same_bytes(io::read(bl.toStdString()).pixels, HostArray::from(flipped, Shape{4, 5})));

    const auto v2 = test::random_bits<std::uint16_t>(4 * 5);
    Page second = p;
    second.data = bytes_of(v2);
    Page thumb{.width = 2,
               .height = 2,
               .bits = 16,
               .subfile = FILETYPE_REDUCEDIMAGE,
               .data = std::vector<std::uint8_t>(8, 7)};
    const QString th = dir.filePath(QStringLiteral("thumb.tif"));
    write_tiff(th, "w", {p, thumb, second});
    std::vector<std::uint16_t> both = v;
    both.insert(both.end(), v2.begin(), v2.end());
    QVERIFY(same_bytes(io::read(th.toStdString()).pixels, HostArray::from(both, Shape{2, 4, 5})));

    Page other = p;
    other.width = 4;
    other.data.resize(4 * 4 * 2);
    const QString un = dir.filePath(QStringLiteral("unequal.tif"));
    write_tiff(un, "w", {p, other});
    QVERIFY_THROWS_EXCEPTION(IoError, io::read(un.toStdString()));
    try {
      io::read(un.toStdString());
    } catch (const IoError& e) {
      QVERIFY2(std::string(e.what()).find("equal pages") != std::string::npos, e.what());
      QCOMPARE(e.path(), un.toStdString());
    }

    Page half = p;
    half.format = SAMPLEFORMAT_IEEEFP;
    const QString hp = dir.filePath(QStringLiteral("half.tif"));
    write_tiff(hp, "w", {half});
    try {
      io::read(hp.toStdString());
      QFAIL("a float16 TIFF was read");
    } catch (const IoError& e) {
      QVERIFY2(std::string(e.what()).find("16-bit floating-point") != std::string::npos, e.what());
    }

    const auto rgb = test::random_bits<std::uint8_t>(3 * 4 * 5);
    Page colour{.width = 5, .height = 4, .spp = 3, .photometric = PHOTOMETRIC_RGB, .data = rgb};
    const QString cp = dir.filePath(QStringLiteral("rgb.tif"));
    write_tiff(cp, "w", {colour});
    QVERIFY_THROWS_EXCEPTION(IoError, io::read(cp.toStdString()));
    const io::Image g =
        io::read(cp.toStdString(), {.channels = io::Channels::channel, .channel = 1});
    QCOMPARE(g.file_components, 3);
    for (std::size_t i = 0; i < 20; ++i) QCOMPARE(g.pixels.as<std::uint8_t>()[i], rgb[3 * i + 1]);

    // Colour pages that differ (ITK's reader kept page 0's width and overflowed a narrower
    // page's buffer, or cropped a wider one): refused with both pages named, either order; a
    // colour stack of equal pages reads.
    const Page narrow{.width = 2,
                      .height = 4,
                      .spp = 3,
                      .photometric = PHOTOMETRIC_RGB,
                      .data = std::vector<std::uint8_t>(rgb.begin(), rgb.begin() + 3 * 4 * 2)};
    for (const auto& pages :
         {std::vector<Page>{colour, narrow}, std::vector<Page>{narrow, colour}}) {
      const QString dp = dir.filePath(QStringLiteral("rgb_differ.tif"));
      write_tiff(dp, "w", pages);
      try {
        io::read(dp.toStdString(), {.channels = io::Channels::channel, .channel = 0});
        QFAIL("colour pages that differ were read");
      } catch (const IoError& e) {
        QVERIFY2(std::string(e.what()).find("page 1 is") != std::string::npos, e.what());
      }
    }
    // ImageJ's stacks over 4 GB: one page, images=N in the description, the rest raw after
    // it. Read as pages that was the first image alone; refused, saying why.
    {
      const QString jp = dir.filePath(QStringLiteral("imagej_raw.tif"));
      TIFF* t = TIFFOpen(jp.toLocal8Bit().constData(), "w");
      QVERIFY(t);
      TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 5u);
      TIFFSetField(t, TIFFTAG_IMAGELENGTH, 4u);
      TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
      TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
      TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
      TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 4u);
      TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, "ImageJ=1.53t\nimages=3\nslices=3\n");
      std::vector<std::uint8_t> px(3 * 20, 7);
      QVERIFY(TIFFWriteEncodedStrip(t, 0, px.data(), 20) == 20);
      QVERIFY(TIFFWriteDirectory(t));
      TIFFClose(t);
      try {
        io::read(jp.toStdString());
        QFAIL("an ImageJ raw stack was read as its first image");
      } catch (const IoError& e) {
        QVERIFY2(
            std::string(e.what()).find("3 images but the file has 1 page") != std::string::npos,
            e.what());
      }
    }
    const QString sp = dir.filePath(QStringLiteral("rgb_stack.tif"));
    write_tiff(sp, "w", {colour, colour});
    const io::Image st =
        io::read(sp.toStdString(), {.channels = io::Channels::channel, .channel = 2});
    QCOMPARE(st.pixels.shape(), (Shape{2, 4, 5}));
    for (std::size_t i = 0; i < 40; ++i)
      QCOMPARE(st.pixels.as<std::uint8_t>()[i], rgb[3 * (i % 20) + 2]);
  }

  // libtiff's "Bogus StripByteCounts" warning: the file reads (libtiff estimates the count),
  // the warning is in Image::warnings and on gpix info's stdout, nothing on stderr. Once for
  // gpix's libtiff reader (grayscale) and once for ITK's private libtiff (RGB).
  void bogus_strip_byte_counts_stay_off_stderr() {
    if (test::test_devices().empty()) QSKIP("no device");
    QTemporaryDir dir;
    const Shape s{13, 17};
    const auto v = test::random_bits<std::uint16_t>(s.elements());
    const QString gray = dir.filePath(QStringLiteral("gray.tif"));
    io::write(gray.toStdString(), HostArray::from(v, s));
    patch_tag(gray, TIFFTAG_STRIPBYTECOUNTS, 0);
    if (QTest::currentTestFailed()) return;
    const io::Image img = io::read(gray.toStdString());
    QVERIFY(same_bytes(img.pixels, HostArray::from(v, s)));
    QVERIFY2(mentions(img.warnings, "StripByteCounts"),
             img.warnings.empty() ? "no warning" : img.warnings[0].c_str());
    const test::ProcessResult r = test::run_cli(
        {QStringLiteral("info"), gray, QStringLiteral("--device"), QStringLiteral("0")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(r.err.isEmpty(), r.err.constData());
    QVERIFY2(r.out.contains("warning: ") && r.out.contains("StripByteCounts"), r.out.constData());

    const auto rgb = test::random_bits<std::uint8_t>(3 * 4 * 5);
    const QString colour = dir.filePath(QStringLiteral("rgb.tif"));
    write_tiff(
        colour, "w",
        {Page{.width = 5, .height = 4, .spp = 3, .photometric = PHOTOMETRIC_RGB, .data = rgb}});
    patch_tag(colour, TIFFTAG_STRIPBYTECOUNTS, 0);
    if (QTest::currentTestFailed()) return;
    const io::Image c =
        io::read(colour.toStdString(), {.channels = io::Channels::channel, .channel = 2});
    for (std::size_t i = 0; i < 20; ++i) QCOMPARE(c.pixels.as<std::uint8_t>()[i], rgb[3 * i + 2]);
    QVERIFY2(mentions(c.warnings, "StripByteCounts"),
             c.warnings.empty() ? "no warning" : c.warnings[0].c_str());
    const test::ProcessResult rc =
        test::run_cli({QStringLiteral("info"), colour, QStringLiteral("--channels"),
                       QStringLiteral("2"), QStringLiteral("--device"), QStringLiteral("0")});
    QVERIFY2(rc.code == 0, rc.err.constData());
    QVERIFY2(rc.err.isEmpty(), rc.err.constData());
  }

  // libtiff's errors end up in gpix's one-line message, never printed before it.
  void libtiff_errors_in_the_message() {
    QTemporaryDir dir;
    const Shape s{13, 17};
    const QString good = dir.filePath(QStringLiteral("good.tif"));
    io::write(good.toStdString(),
              HostArray::from(test::random_bits<std::uint16_t>(s.elements()), s));
    const QByteArray bytes = slurp(good);
    // Pixels past the end of the file (the directory is intact): refused before reading, by
    // what the strips can hold.
    const QString away = dir.filePath(QStringLiteral("away.tif"));
    QVERIFY(QFile::copy(good, away));
    patch_tag(away, TIFFTAG_STRIPOFFSETS, static_cast<std::uint32_t>(bytes.size() + 4096));
    if (QTest::currentTestFailed()) return;
    try {
      io::read(away.toStdString());
      QFAIL("pixels past the end of the file were read");
    } catch (const IoError& e) {
      QCOMPARE(e.path(), away.toStdString());
      QVERIFY2(std::string(e.what()).find("strips hold 0 bytes") != std::string::npos, e.what());
    }
    // A Deflate strip whose data is garbage: libtiff's decoder says so.
    const QString garbled = dir.filePath(QStringLiteral("garbled.tif"));
    io::write(garbled.toStdString(),
              HostArray::from(test::random_bits<std::uint16_t>(s.elements()), s), {},
              {.compress = true});
    QByteArray z = slurp(garbled);
    z.replace(8, 32, QByteArray(32, 'x'));  // libtiff writes the strip first, at offset 8
    QFile g(garbled);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(z);
    g.close();
    try {
      io::read(garbled.toStdString());
      QFAIL("a garbled Deflate strip was read");
    } catch (const IoError& e) {
      QCOMPARE(e.path(), garbled.toStdString());
      QVERIFY2(std::string(e.what()).find("libtiff: ") != std::string::npos, e.what());
    }
    // Cut before the directory (libtiff writes it last), and not a TIFF at all.
    const QString cut = dir.filePath(QStringLiteral("cut.tif"));
    QFile c(cut);
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write(bytes.left(bytes.size() / 2));
    c.close();
    const QString junk = dir.filePath(QStringLiteral("junk.tif"));
    QFile j(junk);
    QVERIFY(j.open(QIODevice::WriteOnly));
    j.write(QByteArray(300, 'x'));
    j.close();
    for (const QString& p : {away, garbled, cut, junk}) {
      const test::ProcessResult r = test::run_cli({QStringLiteral("info"), p});
      QCOMPARE(r.code, 1);
      expect_clean_stderr(r);
      QVERIFY2(r.err.contains(p.toUtf8()), r.err.constData());
    }
  }

  // x/y spacing survives as a resolution, compression is lossless, only the file is left.
  void spacing_compression() {
    QTemporaryDir dir;
    const Shape s{3, 20, 30};
    const HostArray h = HostArray::from(test::random_bits<std::uint32_t>(s.elements()), s);
    io::Metadata m;
    m.spacing = {2.0, 0.3, 0.125};
    const QString path = dir.filePath(QStringLiteral("labels.tif"));
    io::write(path.toStdString(), h, m, {.compress = true});
    const io::Image back = io::read(path.toStdString());
    QVERIFY(same_bytes(back.pixels, h));
    QVERIFY(std::abs(back.meta.spacing[1] - 0.3) < 1e-6);
    QVERIFY(std::abs(back.meta.spacing[2] - 0.125) < 1e-6);
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("labels.tif")});
  }
};

QTEST_GUILESS_MAIN(TestIoTiff)
#include "test_io_tiff.moc"
