// Round trips write -> read for every format, extension and dtype gpix_io claims, 2D and 3D,
// comparing pixels and the metadata each format keeps; every dtype with its extremes to every
// format that stores them all; device reads and writes; the RGB,
// palette and 1-bit policies on files written by Qt.
#include <zlib.h>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstring>
#include <fstream>

#include "gpix/io.h"
#include "support/devices.h"
#include "support/random.h"
#include "support/threads.h"

using namespace gpix;

namespace {

std::filesystem::path in(const QTemporaryDir& d, const std::string& name) {
  return std::filesystem::path(d.path().toStdString()) / name;
}

template <class T>
HostArray random_host(const Shape& s, bool smooth, bool finite) {
  if (smooth) {  // JPEG is lossy: a gentle ramp survives it within a few grey levels
    std::vector<T> v(s.elements());
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<T>(40 + (i % s.width()) * 7 % 150);
    return HostArray::from(v, s);
  }
  // NIfTI's reader turns NaN and infinities into 0, so gpix refuses to write them there.
  if (finite) return HostArray::from(test::random_values<T>(s.elements()), s);
  return HostArray::from(test::random_bits<T>(s.elements()), s);
}

io::Metadata random_meta(int ndim) {
  std::uniform_real_distribution<double> sp(0.1, 5.0), org(-100.0, 100.0);
  io::Metadata m;
  m.unit = "mm";  // a unit every format that keeps one can name
  for (int i = 0; i < ndim; ++i) {
    m.spacing.push_back(sp(test::rng()));
    m.origin.push_back(org(test::rng()));
  }
  // A 90 degree rotation of the two fastest axes (determinant +1, as NIfTI needs).
  const auto n = static_cast<std::size_t>(ndim);
  m.direction.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) m.direction[i * n + i] = 1.0;
  if (n >= 2) {
    const std::size_t a = n - 2, b = n - 1;
    m.direction[a * n + a] = 0;
    m.direction[b * n + b] = 0;
    m.direction[a * n + b] = -1;
    m.direction[b * n + a] = 1;
  }
  return m;
}

// Random bits with the dtype's extremes mixed in at a random place: lowest, max, 0, 1, -1,
// and for floats the smallest normal and denormal, -0, epsilon, infinities and NaNs (random
// bits add NaNs with payloads). `finite` replaces non-finite floats (NIfTI refuses them).
template <class T>
std::vector<T> extreme_values(std::size_t n, bool finite) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = test::random_bits<T>(n);
  std::vector<T> special = {L::lowest(), L::max(), T(0), T(1)};
  if constexpr (std::is_signed_v<T>) special.push_back(T(-1));
  if constexpr (std::is_floating_point_v<T>) {
    special.insert(special.end(),
                   {L::min(), L::denorm_min(), -L::denorm_min(), T(-0.0), L::epsilon(),
                    L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN()});
  }
  const std::size_t at = static_cast<std::size_t>(test::rng()() % n);
  for (std::size_t i = 0; i < special.size(); ++i) v[(at + i) % n] = special[i];
  if constexpr (std::is_floating_point_v<T>) {
    if (finite) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(v[i])) v[i] = static_cast<T>(i) * T(-0.5);
      }
    }
  }
  return v;
}

// Allocates and frees buffers of the size read() is about to allocate, filled with a pattern:
// the allocator tends to hand the same memory back, so a reader that skipped pixels would
// leave the pattern there rather than zeros (which a test could mistake for data).
void poison(const Shape& s, DType t) {
  for (int i = 0; i < 3; ++i) {
    HostArray h = HostArray::empty(s, t);
    std::memset(h.data(), 0xa5, h.bytes());
  }
}

// The first differing element, for the failure message.
QString first_difference(const HostArray& a, const HostArray& b) {
  const std::size_t size = size_of(a.dtype());
  const std::size_t n = a.shape().elements();
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(a.data() + i * size, b.data() + i * size, size) != 0) {
      return QStringLiteral("element %1 of %2 differs").arg(i).arg(n);
    }
  }
  return QStringLiteral("no difference");
}

bool close(double a, double b, double rel) {
  return std::abs(a - b) <= rel * std::max(1.0, std::abs(b));
}

void compare_meta(const io::Format& f, const io::Metadata& want, const io::Metadata& got,
                  int ndim) {
  const auto n = static_cast<std::size_t>(ndim);
  QCOMPARE(got.spacing.size(), n);
  QCOMPARE(got.origin.size(), n);
  QCOMPARE(got.direction.size(), n * n);
  const double rel =
      f.name == "NIfTI" ? 1e-5 : (f.name == "TIFF" || f.name == "PNG" ? 1e-3 : 1e-12);
  switch (f.metadata) {
    case io::Kept::all:
      for (std::size_t i = 0; i < n; ++i) {
        QVERIFY2(close(got.spacing[i], want.spacing[i], rel),
                 qPrintable(QString::number(got.spacing[i])));
        QVERIFY2(close(got.origin[i], want.origin[i], rel),
                 qPrintable(QString::number(got.origin[i])));
      }
      for (std::size_t i = 0; i < n * n; ++i)
        QVERIFY(close(got.direction[i], want.direction[i], 1e-6));
      QCOMPARE(got.unit, want.unit);
      break;
    case io::Kept::spacing_origin:  // TIFF: a rational resolution, an ImageJ description
      for (std::size_t i = 0; i < n; ++i) {
        QVERIFY2(close(got.spacing[i], want.spacing[i], 1e-6),
                 qPrintable(QString("%1 vs %2").arg(got.spacing[i]).arg(want.spacing[i])));
        QVERIFY2(close(got.origin[i], want.origin[i], 1e-6),
                 qPrintable(QString("%1 vs %2").arg(got.origin[i]).arg(want.origin[i])));
      }
      QCOMPARE(got.unit, want.unit);
      break;
    case io::Kept::spacing_yx:
      for (std::size_t i = n - 2; i < n; ++i) {
        QVERIFY2(close(got.spacing[i], want.spacing[i], rel),
                 qPrintable(QString("%1 vs %2").arg(got.spacing[i]).arg(want.spacing[i])));
      }
      for (double o : got.origin) QCOMPARE(o, 0.0);
      break;
    case io::Kept::none:  // JPEG: a density in whole dots per inch, not a spacing to rely on
      break;
  }
}

}  // namespace

class TestIoFormats : public QObject {
  Q_OBJECT
 private slots:
  // Every catalog filter's array output (every output dtype a filter produces: binary uint8,
  // uint32 labels, float results, the input's dtype) saved in every format that stores stacks
  // and read back bit for bit, as `gpix run FILTER in out.EXT` does.
  void every_filter_output_every_format() {
    const Device dev = test::test_devices().front();
    QTemporaryDir dir;
    std::size_t written = 0;
    for (const FilterInfo& f : filters()) {
      if (f.output == OutputKind::table) continue;
      const DType t = std::find(f.dtypes.begin(), f.dtypes.end(), DType::u16) != f.dtypes.end()
                          ? DType::u16
                          : f.dtypes.front();
      const int dims = f.dims.back();
      const Shape s = dims == 3 ? Shape{3, 5, 7} : (dims == 2 ? Shape{9, 7} : Shape{13});
      std::vector<Array> inputs;
      for (std::size_t i = 0; i < f.inputs.size(); ++i) {
        // Values 1..20: finite results everywhere (no log(0), x/0 or exp overflow), fit for
        // every dtype (NIfTI refuses non-finite pixels, tested elsewhere).
        auto v = test::random_values<std::uint8_t>(s.elements());
        for (auto& x : v) x = static_cast<std::uint8_t>(1 + x % 20);
        inputs.push_back(convert(Array::push(v, s, dev), t));
      }
      const Array out = run(f.name, std::span<const Array>(inputs)).array;
      const HostArray want = out.pull();
      for (const char* ext : {".tif", ".nrrd", ".mha", ".nii.gz"}) {
        const auto path = in(dir, f.name + ext);
        io::write(path, out);
        const io::Image back = io::read(path);
        const QByteArray where = QByteArray::fromStdString(f.name + " -> " + ext);
        // A single-slice stack is a single-page TIFF, which reads back as 2D.
        QCOMPARE(back.pixels.elements(), want.elements());
        QVERIFY2(back.pixels.dtype() == want.dtype(), where);
        QVERIFY2(std::memcmp(back.pixels.data(), want.data(), want.bytes()) == 0,
                 where + ": " + first_difference(back.pixels, want).toUtf8());
        ++written;
      }
    }
    QVERIFY(written > 150);
  }

  void round_trip_data() {
    QTest::addColumn<QString>("ext");
    QTest::addColumn<DType>("dtype");
    for (const auto& f : io::formats()) {
      for (const auto& e : f.extensions) {
        for (DType t : f.write_dtypes) {
          QTest::newRow((e + " " + std::string(name(t))).c_str()) << QString::fromStdString(e) << t;
        }
      }
    }
  }
  void round_trip() {
    QFETCH(QString, ext);
    QFETCH(DType, dtype);
    QTemporaryDir dir;
    const auto path = in(dir, "image" + ext.toStdString());
    const io::Format& f = io::format_for(path);
    std::vector<Shape> shapes = {Shape{13, 17}, Shape{1, 5}, Shape{7, 1}};
    if (f.max_write_dims == 3)
      shapes.insert(shapes.end(), {Shape{3, 5, 7}, Shape{1, 4, 6}, Shape{2, 1, 1}});
    if (f.min_write_dims == 1) shapes.push_back(Shape{9});
    for (const Shape& s : shapes) {
      const HostArray h = visit_dtype(
          dtype, [&](auto z) { return random_host<decltype(z)>(s, f.lossy, f.name == "NIfTI"); });
      const io::Metadata meta = random_meta(s.ndim());
      io::write(path, h, meta);
      const io::Image back = io::read(path);
      // A single-slice stack is a single-page TIFF, which reads back as 2D.
      const Shape want = f.name == "TIFF" && s.ndim() == 3 && s[0] == 1 ? Shape{s[1], s[2]} : s;
      QVERIFY2(back.pixels.shape() == want,
               qPrintable(QString::fromStdString(back.pixels.shape().str() + " vs " + want.str())));
      QCOMPARE(back.pixels.dtype(), dtype);
      QCOMPARE(back.format, f.name);
      if (f.lossy) {
        const auto a = h.as<std::uint8_t>();
        const auto b = back.pixels.as<std::uint8_t>();
        for (std::size_t i = 0; i < a.size(); ++i) QVERIFY(std::abs(int(a[i]) - int(b[i])) <= 16);
      } else {
        QVERIFY2(std::memcmp(back.pixels.data(), h.data(), h.bytes()) == 0,
                 qPrintable(QString::fromStdString(s.str())));
      }
      if (want == s) compare_meta(f, meta, back.meta, s.ndim());
      if (QTest::currentTestFailed()) return;
      // Nothing but the image (and a detached header's data file) is left in the folder.
      const auto entries =
          QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
      QVERIFY2(entries.size() == 1 || (entries.size() == 2 && (ext == ".mhd" || ext == ".nhdr")),
               qPrintable(entries.join(",")));
    }
  }

  // Every dtype to every format that claims it, 2D and 3D with 1-pixel and odd extents, the
  // dtype's extremes included, read back bit for bit into poisoned memory.
  void every_dtype_every_format_data() {
    QTest::addColumn<QString>("ext");
    QTest::addColumn<DType>("dtype");
    for (const char* e : {".tif", ".tiff", ".nrrd", ".nhdr", ".mha", ".mhd", ".nii", ".nii.gz"}) {
      for (DType t : kAllDTypes) {
        QTest::newRow((std::string(e) + " " + std::string(name(t))).c_str()) << QString(e) << t;
      }
    }
  }
  void every_dtype_every_format() {
    QFETCH(QString, ext);
    QFETCH(DType, dtype);
    QTemporaryDir dir;
    const auto path = in(dir, "every" + ext.toStdString());
    const io::Format& f = io::format_for(path);
    QVERIFY2(std::find(f.write_dtypes.begin(), f.write_dtypes.end(), dtype) != f.write_dtypes.end(),
             "the format table does not list this dtype");
    std::vector<Shape> shapes = {Shape{1, 1},    Shape{1, 17},     Shape{17, 1},   Shape{31, 37},
                                 Shape{1, 1, 1}, Shape{1, 1, 9},   Shape{9, 1, 1}, Shape{2, 1, 1},
                                 Shape{3, 5, 7}, Shape{11, 23, 29}};
    if (f.min_write_dims == 1) shapes.insert(shapes.end(), {Shape{1}, Shape{13}});
    const bool nifti = f.name == "NIfTI";
    for (const Shape& s : shapes) {
      const HostArray want = visit_dtype(dtype, [&](auto z) {
        return HostArray::from(extreme_values<decltype(z)>(s.elements(), nifti), s);
      });
      io::write(path, want);
      // A single-slice stack is a single-page TIFF, which reads back as 2D.
      const Shape shape = f.name == "TIFF" && s.ndim() == 3 && s[0] == 1 ? Shape{s[1], s[2]} : s;
      poison(shape, dtype);
      const io::Image back = io::read(path);
      QVERIFY2(back.pixels.shape() == shape,
               qPrintable(QString::fromStdString(back.pixels.shape().str() + " vs " + s.str())));
      QCOMPARE(back.pixels.dtype(), dtype);
      QVERIFY2(
          std::memcmp(back.pixels.data(), want.data(), want.bytes()) == 0,
          qPrintable(QString::fromStdString(s.str() + ": ") + first_difference(back.pixels, want)));
      QVERIFY2(back.warnings.empty(), back.warnings.empty() ? "" : back.warnings[0].c_str());
    }
    if (nifti && is_float(dtype)) {
      // Refused rather than turned into 0 by the nifti library on reading.
      const HostArray nan = visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        return HostArray::from(std::vector<T>{T(1), std::numeric_limits<T>::quiet_NaN()}, Shape{2});
      });
      QVERIFY_THROWS_EXCEPTION(IoError, io::write(path, nan));
    }
  }

  void compressed() {
    QTemporaryDir dir;
    for (const char* ext : {".nrrd", ".mha", ".nii.gz", ".tif"}) {
      const auto path = in(dir, std::string("c") + ext);
      const HostArray h =
          HostArray::from(test::random_bits<std::uint16_t>(4 * 9 * 11), Shape{4, 9, 11});
      io::write(path, h, {}, {.compress = true});
      const io::Image back = io::read(path);
      QVERIFY(std::memcmp(back.pixels.data(), h.data(), h.bytes()) == 0);
    }
  }

  // Eight threads reading and writing at once, every format: gpix's libtiff reader (Deflate,
  // each read also checking the streams on a thread of its own) and ITK's reader of colour
  // TIFF, PNG, JPEG, gzip NRRD, compressed MetaImage, NIfTI gz. The viewer reads on worker
  // threads, several files at a time; every read must give what it gives alone, and every
  // write read back its pixels.
  void concurrent_reads_and_writes() {
    QTemporaryDir dir;
    struct File {
      std::string name;
      HostArray pixels;
      io::ReadOptions read;
      bool lossless = true;
    };
    const Shape s3{6, 40, 52}, s2{40, 52};
    std::vector<File> files = {
        {"deflate.tif", random_host<std::uint16_t>(s3, false, true), {}},
        {"float.tif", random_host<float>(s3, false, false), {}},
        {"gray.png", random_host<std::uint8_t>(s2, false, true), {}},
        {"stack.nrrd", random_host<std::int16_t>(s3, false, true), {}},
        {"stack.mha", random_host<double>(s3, false, false), {}},
        {"stack.nii.gz", random_host<float>(s3, false, true), {}},
        {"plane.jpg", random_host<std::uint8_t>(s2, true, true), {}, false},
    };
    for (File& f : files) io::write(in(dir, f.name), f.pixels, {}, {.compress = true});
    // A colour TIFF (ITK's reader), made byte by byte: the header, one strip of 8-bit RGB
    // pixels, BitsPerSample's three values, then the directory.
    {
      const std::uint32_t w = 52, h = 40, pixels = 8, bits = pixels + w * h * 3;
      std::string b = "II*";
      b.push_back('\0');
      auto u16 = [&](std::uint32_t v) {
        b.push_back(static_cast<char>(v & 255));
        b.push_back(static_cast<char>((v >> 8) & 255));
      };
      auto u32 = [&](std::uint32_t v) {
        u16(v & 0xffff);
        u16(v >> 16);
      };
      u32(bits + 6);
      for (std::uint32_t i = 0; i < w * h * 3; ++i) {
        b.push_back(static_cast<char>(test::rng()() & 255));
      }
      for (int c = 0; c < 3; ++c) u16(8);
      // tag, type (3 SHORT, 4 LONG), value; BitsPerSample holds 3 values at `bits`.
      const std::uint32_t entries[][3] = {
          {256, 4, w},      {257, 4, h}, {258, 3, bits}, {259, 3, 1},         {262, 3, 2},
          {273, 4, pixels}, {277, 3, 3}, {278, 4, h},    {279, 4, w * h * 3}, {284, 3, 1}};
      u16(10);
      for (const auto& e : entries) {
        u16(e[0]);
        u16(e[1]);
        u32(e[0] == 258 ? 3 : 1);
        if (e[1] == 3 && e[0] != 258) {
          u16(e[2]);
          u16(0);
        } else {
          u32(e[2]);
        }
      }
      u32(0);
      std::ofstream(in(dir, "rgb.tif"), std::ios::binary) << b;
    }
    files.push_back({"rgb.tif", HostArray(), {.channels = io::Channels::split}, false});
    // What each file gives read alone.
    std::vector<HostArray> alone;
    for (const File& f : files) alone.push_back(io::read(in(dir, f.name), f.read).pixels);

    const std::vector<std::string> failures = test::on_threads(8, 12, [&](int t, int k) {
      const std::size_t i = static_cast<std::size_t>(t * 5 + k * 3) % files.size();
      const File& f = files[i];
      try {
        const HostArray got = io::read(in(dir, f.name), f.read).pixels;
        if (got.shape() != alone[i].shape() ||
            std::memcmp(got.data(), alone[i].data(), got.bytes()) != 0) {
          return f.name + ": read on thread " + std::to_string(t) + " differs";
        }
        if (!f.lossless) return std::string();
        const auto copy = in(dir, "t" + std::to_string(t) + "-" + std::to_string(k) + "-" + f.name);
        io::write(copy, got, {}, {.compress = k % 2 == 0});
        const HostArray back = io::read(copy).pixels;
        if (std::memcmp(back.data(), got.data(), got.bytes()) != 0) {
          return f.name + ": written on thread " + std::to_string(t) + ", read back differs";
        }
      } catch (const std::exception& e) {
        return f.name + " on thread " + std::to_string(t) + ": " + e.what();
      }
      return std::string();
    });
    for (const std::string& f : failures) qWarning("%s", f.c_str());
    QVERIFY(failures.empty());
  }

  // A NIfTI header that scales its values (scl_slope, scl_inter: common in scanner output):
  // ITK returns float32 slope * v + inter, and gpix once refused such a file as truncated
  // (the size check took ITK's float32 for the stored int16, twice the bytes). Both .nii
  // and .nii.gz, 2D and 3D.
  void nifti_scaled_values() {
    QTemporaryDir dir;
    for (const Shape& s : {Shape{4, 5, 6}, Shape{7, 9}}) {
      const HostArray h = random_host<std::int16_t>(s, false, true);
      const auto plain = in(dir, "scaled.nii");
      io::write(plain, h);
      std::ifstream f(plain, std::ios::binary);
      std::string b{std::istreambuf_iterator<char>(f), {}};
      f.close();
      QVERIFY(b.size() > 352 && b.compare(344, 3, "n+1") == 0);  // NIfTI-1, little-endian
      const float slope = 0.5f, inter = -3.25f;
      std::memcpy(b.data() + 112, &slope, 4);
      std::memcpy(b.data() + 116, &inter, 4);
      std::ofstream(plain, std::ios::binary | std::ios::trunc) << b;
      const auto zipped = in(dir, "scaled.nii.gz");
      gzFile gz = gzopen(zipped.c_str(), "wb");
      QVERIFY(gz != nullptr);
      QCOMPARE(gzwrite(gz, b.data(), static_cast<unsigned>(b.size())), static_cast<int>(b.size()));
      gzclose(gz);
      for (const auto& path : {plain, zipped}) {
        const io::Image im = io::read(path);
        QCOMPARE(im.pixels.dtype(), DType::f32);
        QVERIFY(std::any_of(im.warnings.begin(), im.warnings.end(), [](const std::string& w) {
          return w.find("the NIfTI header scales the stored values: read as 0.5 * v + -3.25") !=
                 std::string::npos;
        }));
        QCOMPARE(im.pixels.shape(), s);
        const auto v = h.as<std::int16_t>();
        const auto got = im.pixels.as<float>();
        for (std::size_t i = 0; i < v.size(); ++i) {
          QCOMPARE(got[i], slope * static_cast<float>(v[i]) + inter);
        }
      }
    }
  }

  // x.nii.gz next to an x.nii: the nifti library alone would read x.nii.
  void nifti_sibling() {
    QTemporaryDir dir;
    const HostArray a = HostArray::from(test::random_values<float>(35), Shape{5, 7});
    const HostArray b = HostArray::from(test::random_values<float>(35), Shape{5, 7});
    io::write(in(dir, "x.nii"), a);
    io::write(in(dir, "x.nii.gz"), b);
    QVERIFY(std::memcmp(io::read(in(dir, "x.nii.gz")).pixels.data(), b.data(), b.bytes()) == 0);
    QVERIFY(std::memcmp(io::read(in(dir, "x.nii")).pixels.data(), a.data(), a.bytes()) == 0);
  }

  // A MetaImage whose slices lie in a list of files ("ElementDataFile = LIST", with or without
  // the slices' dimension): every slice in order, 3D of 2D files and 2D of 1D rows. A bare
  // LIST was taken for a data file named "LIST" and refused.
  void meta_file_lists() {
    QTemporaryDir dir;
    const Shape s{5, 3, 7};
    const auto v = test::random_values<std::int16_t>(s.elements());
    const std::size_t plane = 3 * 7;
    std::string names;
    for (std::size_t z = 0; z < 5; ++z) {
      const std::string n = "slice " + std::to_string(z) + ".raw";  // a space, as users name them
      std::ofstream(in(dir, n), std::ios::binary)
          .write(reinterpret_cast<const char*>(v.data() + z * plane),
                 static_cast<std::streamsize>(plane * 2));
      names += n + "\n";
    }
    const std::string head =
        "ObjectType = Image\nNDims = 3\nDimSize = 7 3 5\nElementType = MET_SHORT\n"
        "ElementSpacing = 0.5 0.5 2\nElementDataFile = ";
    for (const char* list : {"LIST", "LIST 2D"}) {
      const auto p = in(dir, std::string("stack ") + list + ".mhd");
      std::ofstream(p) << head << list << "\n" << names;
      const io::Image img = io::read(p);
      QCOMPARE(img.pixels.shape(), s);
      QCOMPARE(img.pixels.dtype(), DType::i16);
      QVERIFY2(std::memcmp(img.pixels.data(), v.data(), img.pixels.bytes()) == 0, list);
      QCOMPARE(img.meta.spacing, (std::vector<double>{2, 0.5, 0.5}));
    }
    // MetaIO reads "LIST" case-sensitively: "list" names a data file, which is missing here.
    const auto lower = in(dir, "lower.mhd");
    std::ofstream(lower) << head << "list\n" << names;
    try {
      (void)io::read(lower);
      QFAIL("a missing data file 'list' was read");
    } catch (const IoError& e) {
      QVERIFY2(std::string(e.what()).find("'list' does not exist") != std::string::npos, e.what());
    }
    // 2D of rows.
    const auto r = in(dir, "rows.mhd");
    std::ofstream(r) << "ObjectType = Image\nNDims = 2\nDimSize = 7 3\nElementType = MET_SHORT\n"
                        "ElementDataFile = LIST\n"
                     << "row0.raw\nrow1.raw\nrow2.raw\n";
    for (int y = 0; y < 3; ++y) {
      std::ofstream(in(dir, "row" + std::to_string(y) + ".raw"), std::ios::binary)
          .write(reinterpret_cast<const char*>(v.data() + y * 7), 14);
    }
    const io::Image rows = io::read(r);
    QCOMPARE(rows.pixels.shape(), (Shape{3, 7}));
    QVERIFY(std::memcmp(rows.pixels.data(), v.data(), rows.pixels.bytes()) == 0);
    // MetaIO skips a slice file it cannot open and returns the image without it: a missing
    // or short slice file, or a list shorter than DimSize, is an IoError naming what is wrong.
    const auto refused = [&](const std::filesystem::path& p, const std::string& says) {
      try {
        (void)io::read(p);
        QFAIL(("read " + p.string() + " despite " + says).c_str());
      } catch (const IoError& e) {
        QVERIFY2(std::string(e.what()).find(says) != std::string::npos, e.what());
      }
    };
    // A detached data file whose name has spaces is one file to MetaIO: read, and checked for
    // its size like any other.
    std::ofstream(in(dir, "my volume.raw"), std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 2));
    const auto spaced = in(dir, "spaced.mhd");
    std::ofstream(spaced) << head << "my volume.raw\n";
    QVERIFY(std::memcmp(io::read(spaced).pixels.data(), v.data(), v.size() * 2) == 0);
    std::filesystem::resize_file(in(dir, "my volume.raw"), v.size() * 2 - 2);
    refused(spaced, "data file 'my volume.raw' is truncated");
    const auto stack = in(dir, "stack LIST.mhd");
    std::filesystem::resize_file(in(dir, "slice 2.raw"), plane * 2 - 1);
    refused(stack, "slice file 'slice 2.raw' (3 of 5 in its list) is truncated: 41 bytes, 42");
    std::filesystem::remove(in(dir, "slice 2.raw"));
    refused(stack, "slice file 'slice 2.raw' (3 of 5 in its list) does not exist");
    refused(in(dir, "stack LIST 2D.mhd"), "'slice 2.raw' (3 of 5 in its list) does not exist");
    const auto short_list = in(dir, "short.mhd");
    std::ofstream(short_list) << head << "LIST\nslice 0.raw\nslice 1.raw\n";
    refused(short_list, "lists 2 slice file(s) after the header; its DimSize needs 5");
    // What MetaIO would read wrongly without a word: a last name with no line break (skipped)
    // and an empty line (every later slice shifted).
    std::string all = names;
    for (std::size_t z = 0; z < 5; ++z) {
      std::ofstream(in(dir, "s" + std::to_string(z) + ".raw"), std::ios::binary)
          .write(reinterpret_cast<const char*>(v.data() + z * plane),
                 static_cast<std::streamsize>(plane * 2));
    }
    const std::string plain = "s0.raw\ns1.raw\ns2.raw\ns3.raw\ns4.raw";
    const auto no_break = in(dir, "no_break.mhd");
    std::ofstream(no_break) << head << "LIST\n" << plain;
    refused(no_break, "slice file 5 ('s4.raw') has no line break after it");
    const auto blank = in(dir, "blank.mhd");
    std::ofstream(blank) << head << "LIST\ns0.raw\n\n" << plain.substr(7) << "\n";
    refused(blank, "an empty line where file 2 should be named");
    const auto long_name = in(dir, "long.mhd");
    std::ofstream(long_name) << head << "LIST\ns0.raw\n" << std::string(1100, 'n') << "\n";
    refused(long_name, "slice file 2 is 1100 characters long; MetaIO reads names of up to 1023");
    std::ofstream(no_break) << head << "LIST\n" << plain << "\n";  // mended: it reads
    QVERIFY(std::memcmp(io::read(no_break).pixels.data(), v.data(), v.size() * 2) == 0);
    // HeaderSize applies to every slice file: 16 bytes of each skipped.
    const auto skipped = in(dir, "skipped.mhd");
    std::ofstream(skipped) << "ObjectType = Image\nNDims = 3\nDimSize = 7 3 5\nElementType = "
                              "MET_SHORT\nHeaderSize = 16\nElementDataFile = LIST\n"
                           << plain << "\n";
    refused(skipped, "'s0.raw' (1 of 5 in its list) is truncated: 42 bytes, 58 expected");
    for (std::size_t z = 0; z < 5; ++z) {
      std::ofstream o(in(dir, "s" + std::to_string(z) + ".raw"), std::ios::binary);
      o << std::string(16, 'h');
      o.write(reinterpret_cast<const char*>(v.data() + z * plane),
              static_cast<std::streamsize>(plane * 2));
    }
    QVERIFY(std::memcmp(io::read(skipped).pixels.data(), v.data(), v.size() * 2) == 0);
    // "LIST 3D" of a 3D image (each file the whole volume) comes back unread from MetaIO
    // (ITK 5.2): refused, saying what would work; "LIST 4D" means NDims - 1, as in MetaIO.
    std::ofstream(in(dir, "whole.raw"), std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 2));
    const auto one = in(dir, "one.mhd");
    std::ofstream(one) << head << "LIST 3D\nwhole.raw\n";
    refused(one, "name the file itself (ElementDataFile = FILE)");
    const auto four = in(dir, "four.mhd");
    std::ofstream(four) << "ObjectType = Image\nNDims = 3\nDimSize = 7 3 5\nElementType = "
                           "MET_SHORT\nHeaderSize = 16\nElementDataFile = LIST 4D\n"
                        << plain << "\n";
    QVERIFY(std::memcmp(io::read(four).pixels.data(), v.data(), v.size() * 2) == 0);
  }

  void device_data() { test::add_device_rows(); }
  void device() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    QTemporaryDir dir;
    const auto path = in(dir, "stack.tif");
    const Shape s{3, 11, 13};
    const auto vals = test::random_bits<std::uint16_t>(s.elements());
    const Array a = Array::push(vals, s, dev);
    io::Metadata meta;
    meta.spacing = {1.0, 0.5, 0.25};
    io::write(path, a, meta);
    const io::DeviceImage d = io::read_to_device(path, dev);
    QVERIFY(d.pixels.device() == dev);
    QCOMPARE(d.pixels.shape(), s);
    QVERIFY(d.pixels.pull_as<std::uint16_t>() == vals);
    QVERIFY(close(d.meta.spacing[2], 0.25, 1e-6));
    io::write(in(dir, "again.nrrd"), d);
    QVERIFY(io::read(in(dir, "again.nrrd")).pixels.as<std::uint16_t>().size() == vals.size());
  }

  void rgb_policy() {
    QTemporaryDir dir;
    QImage im(7, 5, QImage::Format_ARGB32);
    auto& r = test::rng();
    for (int y = 0; y < im.height(); ++y) {
      for (int x = 0; x < im.width(); ++x) im.setPixel(x, y, static_cast<QRgb>(r()) | 0x01000000u);
    }
    for (bool alpha : {false, true}) {
      const QImage src = alpha ? im : im.convertToFormat(QImage::Format_RGB32);
      const auto path = in(dir, alpha ? "rgba.png" : "rgb.png");
      QVERIFY(src.save(QString::fromStdString(path.string()), "PNG"));
      const int comps = alpha ? 4 : 3;
      try {
        io::read(path);
        QFAIL("an RGB file read without a policy");
      } catch (const IoError& e) {
        QVERIFY2(std::string(e.what()).find("luminance") != std::string::npos, e.what());
        QCOMPARE(e.path(), path.string());
      }
      const io::Image g = io::read(path, {.channels = io::Channels::channel, .channel = 1});
      QCOMPARE(g.file_components, comps);
      QCOMPARE(g.pixels.shape(), (Shape{5, 7}));
      const io::Image split = io::read(path, {.channels = io::Channels::split});
      QCOMPARE(split.pixels.shape(), (Shape{static_cast<std::size_t>(comps), 5, 7}));
      QCOMPARE(split.meta.spacing.size(), std::size_t{3});
      const io::Image lum = io::read(path, {.channels = io::Channels::luminance});
      QCOMPARE(lum.pixels.dtype(), DType::f32);
      const auto sp = split.pixels.as<std::uint8_t>();
      for (int y = 0; y < 5; ++y) {
        for (int x = 0; x < 7; ++x) {
          const QRgb p = src.pixel(x, y);
          const std::size_t i = static_cast<std::size_t>(y * 7 + x);
          QCOMPARE(int(g.pixels.as<std::uint8_t>()[i]), qGreen(p));
          QCOMPARE(int(sp[i]), qRed(p));
          QCOMPARE(int(sp[35 + i]), qGreen(p));
          QCOMPARE(int(sp[70 + i]), qBlue(p));
          if (alpha) QCOMPARE(int(sp[105 + i]), qAlpha(p));
          QCOMPARE(lum.pixels.as<float>()[i],
                   static_cast<float>(0.2126 * qRed(p) + 0.7152 * qGreen(p) + 0.0722 * qBlue(p)));
        }
      }
      QVERIFY_THROWS_EXCEPTION(
          IoError, io::read(path, {.channels = io::Channels::channel, .channel = comps}));
    }
  }

  void palette_and_one_bit() {
    QTemporaryDir dir;
    QImage pal(6, 4, QImage::Format_Indexed8);
    pal.setColorTable({qRgb(10, 20, 30), qRgb(200, 100, 50), qRgb(0, 255, 0)});
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 6; ++x) pal.setPixel(x, y, static_cast<uint>((x + y) % 3));
    }
    const auto ppath = in(dir, "palette.png");
    QVERIFY(pal.save(QString::fromStdString(ppath.string()), "PNG"));
    // Expanded to RGB by default, so the RGB policy applies.
    QVERIFY_THROWS_EXCEPTION(IoError, io::read(ppath));
    const io::Image red = io::read(ppath, {.channels = io::Channels::channel, .channel = 0});
    QCOMPARE(int(red.pixels.as<std::uint8_t>()[1]), 200);
    const io::Image idx = io::read(ppath, {.palette_indices = true});
    QCOMPARE(idx.pixels.dtype(), DType::u8);
    for (int i = 0; i < 24; ++i)
      QCOMPARE(int(idx.pixels.as<std::uint8_t>()[static_cast<std::size_t>(i)]),
               (i % 6 + i / 6) % 3);

    QImage mono(9, 3, QImage::Format_Mono);
    mono.setColorTable({qRgb(0, 0, 0), qRgb(255, 255, 255)});
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 9; ++x) mono.setPixel(x, y, static_cast<uint>((x * y) % 2));
    }
    const auto mpath = in(dir, "mono.png");
    QVERIFY(mono.save(QString::fromStdString(mpath.string()), "PNG"));
    // Qt writes 1-bit images with a two-entry palette: expanded to RGB by default (one
    // channel gives 0 and 255), indices 0 and 1 with palette_indices.
    QVERIFY_THROWS_EXCEPTION(IoError, io::read(mpath));
    const io::Image ids = io::read(mpath, {.palette_indices = true});
    for (int i = 0; i < 27; ++i) {
      QCOMPARE(int(ids.pixels.as<std::uint8_t>()[static_cast<std::size_t>(i)]),
               ((i % 9) * (i / 9)) % 2);
    }
    const io::Image bits = io::read(mpath, {.channels = io::Channels::channel});
    QCOMPARE(bits.pixels.dtype(), DType::u8);
    for (int i = 0; i < 27; ++i) {
      QCOMPARE(int(bits.pixels.as<std::uint8_t>()[static_cast<std::size_t>(i)]),
               ((i % 9) * (i / 9)) % 2 ? 255 : 0);
    }
  }

  void formats_table() {
    QCOMPARE(io::format_for("a/b.TIF").name, std::string("TIFF"));
    QCOMPARE(io::format_for("x.nii.gz").name, std::string("NIfTI"));
    QCOMPARE(io::format_for("x.mhd").name, std::string("MetaImage"));
    try {
      io::format_for("photo.bmpx");
      QFAIL("unknown extension accepted");
    } catch (const IoError& e) {
      QVERIFY(std::string(e.what()).find(".nrrd") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestIoFormats)
#include "test_io_formats.moc"
