// Files plane by plane (gpix/slab_files.h) and `gpix run --tiled` on them:
//  - every streamed format (TIFF, MetaImage .mha/.mhd, NRRD .nrrd/.nhdr, raw) read in uneven
//    plane ranges equals io::read, and written plane by plane reads back (io::read) with the
//    pixels and metadata io::write would keep; 2D and 3D, odd sizes, every dtype;
//  - TIFF layouts libtiff makes (strips of a few rows, tiles, Deflate, bottom-left rows,
//    big-endian) read in row ranges that cut strips and tiles;
//  - big-endian MetaImage and NRRD, HeaderSize and byte skip;
//  - formats that do not stream say so (null), and a sink dropped before finish() leaves
//    nothing behind;
//  - run_tiled from files to files equals the whole-array run, connected_components too (by
//    run_tiled and by `gpix run --tiled`);
//  - `gpix run --tiled` on a TIFF much larger than its budget streams: the peak resident memory
//    of the process (getrusage of the child) stays under a bound set by the budget, well below
//    the file's size, and the output equals the whole-array result.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <tiffio.h>
#include <unistd.h>

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <bit>
#include <cstring>
#include <random>

#include "gpix/gpix.h"
#include "gpix/io.h"
#include "gpix/slab_files.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;
namespace fs = std::filesystem;

namespace {

fs::path at(const QTemporaryDir& dir, const char* name) {
  return fs::u8path(dir.filePath(name).toStdString());
}

HostArray random_host(const Shape& s, DType t) {
  return visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    return HostArray::from(test::random_values<T>(s.elements()), s);
  });
}

bool same(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// All planes of a source, read in uneven ranges (1, 2, 3, ... planes).
HostArray read_all(SlabSource& src) {
  HostArray h = HostArray::empty(src.shape(), src.dtype());
  std::memset(h.data(), 0xA5, h.bytes());  // poison
  const std::size_t planes = src.shape()[0], pb = h.bytes() / planes;
  for (std::size_t z = 0, n = 1; z < planes; z += n, ++n) {
    const std::size_t to = std::min(planes, z + n);
    src.read(z, to, h.data() + z * pb);
  }
  return h;
}

// A HostArray written through a sink in uneven plane ranges.
void write_all(SlabSink& sink, const HostArray& h) {
  sink.start(h.shape(), h.dtype());
  const std::size_t planes = h.shape()[0], pb = h.bytes() / planes;
  for (std::size_t z = 0, n = 3; z < planes; z += n, n = n % 4 + 1) {
    const std::size_t to = std::min(planes, z + n);
    sink.write(z, to, h.data() + z * pb);
  }
  sink.finish();
}

io::Metadata geometry(int ndim) {
  io::Metadata m;
  const auto n = static_cast<std::size_t>(ndim);
  for (std::size_t i = 0; i < n; ++i) {
    m.spacing.push_back(0.25 + 0.5 * static_cast<double>(i));
    m.origin.push_back(-3.5 + static_cast<double>(i));
  }
  m.direction.assign(n * n, 0.0);
  if (n == 1) {
    m.direction[0] = 1;
  } else {
    // A rotation in the last two axes (x, y) by 30 degrees.
    for (std::size_t i = 0; i < n; ++i) m.direction[i * n + i] = 1;
    const double c = std::sqrt(3.0) / 2, s = 0.5;
    m.direction[(n - 2) * n + (n - 2)] = c;
    m.direction[(n - 2) * n + (n - 1)] = -s;
    m.direction[(n - 1) * n + (n - 2)] = s;
    m.direction[(n - 1) * n + (n - 1)] = c;
  }
  return m;
}

void compare_meta(const io::Metadata& a, const io::Metadata& b, const QByteArray& where) {
  auto close = [&](const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::fabs(x[i] - y[i]) > 1e-9) return false;
    }
    return true;
  };
  QVERIFY2(close(a.spacing, b.spacing), where + " spacing");
  QVERIFY2(close(a.origin, b.origin), where + " origin");
  QVERIFY2(close(a.direction, b.direction), where + " direction");
}

// A child process's exit status and peak resident memory (getrusage of the child: wait4).
struct Child {
  int code = -1;
  long max_rss_kb = 0;
  QByteArray out, err;
};
Child spawn(const QStringList& args, const QString& dir) {
  const QString out = dir + "/child.out", err = dir + "/child.err";
  std::vector<std::string> words = {GPIX_CLI_PATH};
  for (const QString& a : args) words.push_back(a.toStdString());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const std::string out_s = out.toStdString(), err_s = err.toStdString();
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = ::open(out_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_s.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  Child c;
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid) qFatal("wait4 failed");
  c.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.max_rss_kb = ru.ru_maxrss;
  QFile fo(out), fe(err);
  if (fo.open(QIODevice::ReadOnly)) c.out = fo.readAll();
  if (fe.open(QIODevice::ReadOnly)) c.err = fe.readAll();
  return c;
}

// A TIFF written with libtiff itself: rows_per_strip rows a strip (or tiles of 16 x 16),
// optional Deflate, row order, byte order ("w" or "wb").
template <class T>
void write_libtiff(const fs::path& path, const std::vector<T>& v, const Shape& s, const char* mode,
                   std::uint32_t rows_per_strip, bool tiles, bool deflate, bool bottom_left) {
  TIFF* t = TIFFOpen(path.c_str(), mode);
  QVERIFY(t);
  const std::uint32_t pages = s.ndim() == 3 ? static_cast<std::uint32_t>(s[0]) : 1;
  const auto h = static_cast<std::uint32_t>(s.height()), w = static_cast<std::uint32_t>(s.width());
  for (std::uint32_t p = 0; p < pages; ++p) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(8 * sizeof(T)));
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT,
                 std::is_floating_point_v<T> ? SAMPLEFORMAT_IEEEFP
                 : std::is_signed_v<T>       ? SAMPLEFORMAT_INT
                                             : SAMPLEFORMAT_UINT);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_ORIENTATION, bottom_left ? ORIENTATION_BOTLEFT : ORIENTATION_TOPLEFT);
    TIFFSetField(t, TIFFTAG_COMPRESSION, deflate ? COMPRESSION_ADOBE_DEFLATE : COMPRESSION_NONE);
    // The page's rows in file order.
    std::vector<T> rows(std::size_t{w} * h);
    for (std::uint32_t y = 0; y < h; ++y) {
      const std::uint32_t src = bottom_left ? h - 1 - y : y;
      std::memcpy(rows.data() + std::size_t{y} * w, v.data() + (std::size_t{p} * h + src) * w,
                  w * sizeof(T));
    }
    if (tiles) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, 16);
      TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
      std::vector<T> tile(16 * 16);
      for (std::uint32_t ty = 0; ty < h; ty += 16) {
        for (std::uint32_t tx = 0; tx < w; tx += 16) {
          std::fill(tile.begin(), tile.end(), T{});
          for (std::uint32_t y = ty; y < std::min(h, ty + 16); ++y) {
            for (std::uint32_t x = tx; x < std::min(w, tx + 16); ++x)
              tile[(y - ty) * 16 + (x - tx)] = rows[std::size_t{y} * w + x];
          }
          QVERIFY(TIFFWriteTile(t, tile.data(), tx, ty, 0, 0) > 0);
        }
      }
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rows_per_strip);
      for (std::uint32_t y = 0, k = 0; y < h; y += rows_per_strip, ++k) {
        const std::uint32_t n = std::min(rows_per_strip, h - y);
        std::vector<T> strip(rows.begin() + std::ptrdiff_t{y} * w,
                             rows.begin() + std::ptrdiff_t{y + n} * w);
        QVERIFY(TIFFWriteEncodedStrip(t, k, strip.data(),
                                      static_cast<tmsize_t>(strip.size() * sizeof(T))) > 0);
      }
    }
    QVERIFY(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
}

// The folder holds only these names (no temporary folder left behind).
QStringList names(const QTemporaryDir& dir) {
  return QDir(dir.path()).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden);
}

}  // namespace

class TestIoStream : public QObject {
  Q_OBJECT
 private slots:
  void round_trips() {
    QTemporaryDir dir;
    const char* files[] = {"a.tif", "a.mha", "m.mhd", "a.nrrd", "n.nhdr", "a.raw"};
    for (const char* file : files) {
      const fs::path path = at(dir, file);
      const bool tiff = std::string(file) == "a.tif", raw = std::string(file) == "a.raw";
      for (const Shape& s : {Shape{7, 5, 3}, Shape{11, 13}, Shape{17}}) {
        if (tiff && s.ndim() < 2) continue;
        for (DType t : kAllDTypes) {
          const QByteArray where = QByteArray(file) + " " +
                                   QByteArray::fromStdString(s.str() + " " + std::string(name(t)));
          const HostArray h = random_host(s, t);
          const io::Metadata meta = tiff ? io::Metadata{} : geometry(static_cast<int>(s.ndim()));
          // Written whole, read in planes.
          if (raw) {
            io::write_raw(path, h);
          } else {
            io::write(path, h, meta);
          }
          auto src = io::open_slabs(path);
          QVERIFY2(src, where + " does not stream");
          QVERIFY2(src->shape() == s && src->dtype() == t, where);
          QVERIFY2(same(read_all(*src), h), where + " read in planes");
          if (!raw) compare_meta(src->metadata(), io::read(path).meta, where + " (source)");
          src.reset();
          // Written in planes, read whole (a header removed with its data file: a data file
          // left alone is not replaced).
          fs::remove(path);
          if (path.extension() == ".mhd" || path.extension() == ".nhdr")
            fs::remove(fs::path(path).replace_extension(".raw"));
          auto sink = io::create_slabs(path, raw ? io::Metadata{} : meta);
          QVERIFY2(sink, where + " is not written in planes");
          write_all(*sink, h);
          sink.reset();
          if (raw) {
            QVERIFY2(same(io::read_raw(path), h), where + " written in planes");
          } else {
            const io::Image back = io::read(path);
            QVERIFY2(same(back.pixels, h), where + " written in planes");
            if (!tiff) compare_meta(back.meta, meta, where + " (sink)");
          }
        }
      }
    }
    // Only the files themselves (and the .raw of .mhd/.nhdr and the raw file's sidecar).
    for (const QString& n : names(dir)) QVERIFY2(!n.startsWith(".gpix-write"), qPrintable(n));
  }

  // TIFF with the spacing kept, and libtiff's own layouts read in row ranges that cut strips
  // and tiles.
  void tiff_layouts() {
    QTemporaryDir dir;
    const fs::path path = at(dir, "t.tif");
    for (const Shape& s : {Shape{3, 37, 21}, Shape{41, 35}}) {
      const auto v = test::random_values<std::uint16_t>(s.elements());
      const HostArray h = HostArray::from(v, s);
      for (int layout = 0; layout < 5; ++layout) {
        const bool tiles = layout == 1, deflate = layout == 2, bottom = layout == 3;
        const char* mode = layout == 4 ? "wb" : "w";
        write_libtiff(path, v, s, mode, 5, tiles, deflate, bottom);
        auto src = io::open_slabs(path);
        QVERIFY(src);
        QVERIFY2(same(read_all(*src), h), QByteArray::number(layout) + " " + s.str().c_str());
        QVERIFY2(same(io::read(path).pixels, h), QByteArray::number(layout));
      }
    }
    // The spacing as io::write keeps it.
    io::Metadata m;
    m.spacing = {1.0, 0.5, 0.25};
    const HostArray h = random_host(Shape{4, 6, 8}, DType::f32);
    auto sink = io::create_slabs(path, m);
    write_all(*sink, h);
    const io::Image back = io::read(path);
    QVERIFY(same(back.pixels, h));
    // (a TIFF resolution is a float of dots per inch)
    QVERIFY(std::fabs(back.meta.spacing[1] - 0.5) < 1e-6);
    QVERIFY(std::fabs(back.meta.spacing[2] - 0.25) < 1e-6);
    // Compressed on request (still streamed: strips are compressed one by one).
    sink = io::create_slabs(path, {}, io::WriteOptions{.compress = true});
    QVERIFY(sink);
    write_all(*sink, h);
    QVERIFY(same(io::read(path).pixels, h));
  }

  // MetaImage and NRRD in the other byte order, with HeaderSize and byte skip, read in place.
  void byte_order_and_offsets() {
    QTemporaryDir dir;
    const Shape s{5, 4, 3};
    const auto v = test::random_values<std::int32_t>(s.elements());
    std::vector<std::int32_t> big(v);
    for (auto& x : big)
      x = static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(x)));
    const HostArray h = HostArray::from(v, s);
    const std::string data(reinterpret_cast<const char*>(big.data()), big.size() * 4);
    auto put = [&](const char* name, const std::string& text) {
      QFile f(dir.filePath(name));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(text.data(), static_cast<qint64>(text.size()));
    };
    put("b.mha",
        "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = True\n"
        "CompressedData = False\nDimSize = 3 4 5\nElementType = MET_INT\nElementDataFile = "
        "LOCAL\n" +
            data);
    put("b.dat", std::string(16, 'x') + data);
    put("b.mhd",
        "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = True\n"
        "CompressedData = False\nHeaderSize = 16\nDimSize = 3 4 5\nElementType = MET_INT\n"
        "ElementDataFile = b.dat\n");
    put("b.nrrd",
        "NRRD0004\ntype: int32\ndimension: 3\nsizes: 3 4 5\nendian: big\n"
        "encoding: raw\n\n" +
            data);
    put("b.nhdr",
        "NRRD0004\ntype: int32\ndimension: 3\nsizes: 3 4 5\nendian: big\n"
        "encoding: raw\nbyte skip: -1\ndata file: b.dat\n\n");
    for (const char* name : {"b.mha", "b.mhd", "b.nrrd", "b.nhdr"}) {
      const fs::path path = at(dir, name);
      auto src = io::open_slabs(path);
      QVERIFY2(src, name);
      QVERIFY2(same(io::read(path).pixels, h), name);
      QVERIFY2(same(read_all(*src), h), name);
    }
  }

  // What does not stream says so; a sink dropped before finish() leaves nothing.
  void not_streamed() {
    QTemporaryDir dir;
    const HostArray h = random_host(Shape{9, 8}, DType::u8);
    io::write(at(dir, "p.png"), h);
    QVERIFY(!io::open_slabs(at(dir, "p.png")));
    QVERIFY(!io::create_slabs(at(dir, "p.png")));
    QVERIFY(!io::create_slabs(at(dir, "p.nii")));
    io::write(at(dir, "z.mha"), h, {}, io::WriteOptions{.compress = true});
    QVERIFY(!io::open_slabs(at(dir, "z.mha")));
    QVERIFY(!io::create_slabs(at(dir, "z.mha"), {}, io::WriteOptions{.compress = true}));
    QVERIFY_THROWS_EXCEPTION(IoError, io::open_slabs(at(dir, "missing.tif")));
    // A TIFF cannot hold 1D images: refused at start, as io::write refuses it.
    auto one = io::create_slabs(at(dir, "line.tif"));
    QVERIFY_THROWS_EXCEPTION(IoError, one->start(Shape{5}, DType::u8));
    one.reset();
    const QStringList before = names(dir);
    for (const char* name : {"gone.tif", "gone.mha", "gone.nhdr", "gone.raw"}) {
      auto sink = io::create_slabs(at(dir, name));
      sink->start(h.shape(), h.dtype());
      sink->write(0, 3, h.data());
      sink.reset();  // the run failed
    }
    QCOMPARE(names(dir), before);
    // A truncated raw file is refused when opened.
    QFile f(dir.filePath("short_4x4_u8.raw"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(10, 'x'));
    f.close();
    QVERIFY_THROWS_EXCEPTION(IoError, io::open_slabs(at(dir, "short_4x4_u8.raw")));
  }

  // run_tiled from files to files equals the whole-array run (TIFF to NRRD, MetaImage to TIFF).
  void tiled_files() {
    QTemporaryDir dir;
    const Shape s{29, 17, 13};
    const HostArray h = random_host(s, DType::f32);
    const Device dev = test::test_devices().front();
    const Params p = {{"sigma_x", 1.0}, {"sigma_y", 1.0}, {"sigma_z", 1.5}};
    const HostArray whole = run("gaussian_blur", Array::push(h, dev), p).array.pull();
    io::write(at(dir, "in.tif"), h);
    io::write(at(dir, "in.mha"), h);
    for (const auto& [in, out] :
         {std::pair{"in.tif", "out.nrrd"}, std::pair{"in.mha", "out.tif"}}) {
      auto src = io::open_slabs(at(dir, in));
      auto sink = io::create_slabs(at(dir, out));
      SlabSource* inputs[] = {src.get()};
      TiledOptions o;
      o.devices = {dev};
      // Three planes and the halo at 20 bytes a pixel, run_tiled's working-set rule for
      // float32: twice input plus output, and one more output on its way back.
      o.budget_bytes = 20 * 17 * 13 * (3 + 2 * tile_halo("gaussian_blur", 3, p));
      TiledReport report;
      o.report = &report;
      (void)run_tiled("gaussian_blur", inputs, sink.get(), p, o);
      QVERIFY2(report.slabs >= 8, in);
      QVERIFY2(same(io::read(at(dir, out)).pixels, whole), in);
    }
    // A table from a file: the sum of all pixels, folded.
    auto src = io::open_slabs(at(dir, "in.tif"));
    SlabSource* inputs[] = {src.get()};
    TiledOptions o;
    o.budget_bytes = 2 * 2 * 4 * 17 * 13 * 3;
    const Table t = run_tiled("maximum_of_all_pixels", inputs, nullptr, {}, o);
    QCOMPARE(t(0, 0), run("maximum_of_all_pixels", Array::push(h, dev)).table(0, 0));
  }

  // connected_components from a TIFF into TIFF and NRRD files, slab by slab, labels joined
  // across slab faces: through run_tiled and through `gpix run --tiled`, the whole-array
  // labels (numbers included).
  void tiled_components() {
    QTemporaryDir dir;
    const Device dev = test::test_devices().front();
    const Shape s{53, 41, 37};
    // Blobs: smoothed noise above its middle.
    const Array noise = Array::push(random_host(s, DType::u16), dev);
    const Array blurred =
        run("gaussian_blur", noise, {{"sigma_x", 2.0}, {"sigma_y", 2.0}, {"sigma_z", 2.0}}).array;
    const HostArray bin = run("threshold", blurred, {{"value", 32768.0}}).array.pull();
    io::write(at(dir, "bin.tif"), bin);
    const Params p = {{"connectivity", "face"}};
    const HostArray whole = run("connected_components", Array::push(bin, dev), p).array.pull();
    const std::size_t budget = 41 * 37 * 18 * 5;  // its working set: 18 bytes a pixel
    auto src = io::open_slabs(at(dir, "bin.tif"));
    auto sink = io::create_slabs(at(dir, "labels.nrrd"));
    SlabSource* inputs[] = {src.get()};
    TiledOptions o;
    o.devices = {dev};
    o.budget_bytes = budget;
    TiledReport report;
    o.report = &report;
    (void)run_tiled("connected_components", inputs, sink.get(), p, o);
    QVERIFY(report.slabs >= 8);
    QVERIFY(same(io::read(at(dir, "labels.nrrd")).pixels, whole));
    const Child c = spawn({"run", "connected_components", dir.filePath("bin.tif"),
                           dir.filePath("labels.tif"), "--connectivity", "face", "--tiled",
                           "--tile-budget", QString::number(budget) + "B", "--json"},
                          dir.path());
    QVERIFY2(c.code == 0, c.err);
    const QJsonObject rep = QJsonDocument::fromJson(c.out).object();
    QVERIFY2(rep["slabs"].toInteger() >= 8 && rep["passes"].toInteger() == 2, c.out);
    const io::Image tiled = io::read(at(dir, "labels.tif"));
    QVERIFY(same(tiled.pixels, whole));
    // Marked as labels, as the whole-array run's file is, so that viewers open it as labels.
    QVERIFY(tiled.meta.labels);
  }

  // `gpix run --tiled` on a TIFF far larger than its budget: bounded memory, whole-array bytes.
  // The file is GPIX_TEST_STREAM_MB (default 256) MB of uint16 planes of 256 x 256, the
  // budget GPIX_TEST_STREAM_BUDGET_MB (default 16). Bound: the same command's peak on a 4-plane
  // file (the process, its devices and compiled kernels) plus three budgets (the slab on the
  // device, which is host memory under PoCL; the worker's host planes, half a budget; slack
  // for the allocators' pools).
  void bounded_memory() {
#ifdef __SANITIZE_ADDRESS__
    // ASan keeps freed memory in quarantine and adds shadow memory: resident sizes say nothing.
    QSKIP("peak memory is not measurable under AddressSanitizer (scripts/sanitize.sh)");
#endif
    QTemporaryDir dir;
    auto env = [](const char* name, std::size_t def) {
      return qEnvironmentVariableIsSet(name)
                 ? static_cast<std::size_t>(qEnvironmentVariable(name).toULongLong())
                 : def;
    };
    const std::size_t mb = env("GPIX_TEST_STREAM_MB", 256);
    const std::size_t budget_mb = env("GPIX_TEST_STREAM_BUDGET_MB", 16);
    const std::size_t w = 256, hgt = 256, plane = w * hgt * 2;
    const std::size_t planes = std::max<std::size_t>(8, mb * 1000000 / plane);
    const Shape big{planes, hgt, w};
    const fs::path in = at(dir, "big.tif"), small = at(dir, "small.tif");
    // Written plane by plane (the test's own memory stays small too), values from a seed.
    std::mt19937 rng(static_cast<unsigned>(test::seed()));
    {
      auto sink = io::create_slabs(in);
      sink->start(big, DType::u16);
      std::vector<std::uint16_t> p(w * hgt);
      for (std::size_t z = 0; z < planes; ++z) {
        for (auto& x : p) x = static_cast<std::uint16_t>(rng() >> 16);
        sink->write(z, z + 1, reinterpret_cast<const std::byte*>(p.data()));
      }
      sink->finish();
    }
    io::write(small, random_host(Shape{4, hgt, w}, DType::u16));
    const QStringList filter = {"run", "gaussian_blur"};
    const QStringList opts = {"--sigma_x",
                              "1",
                              "--sigma_y",
                              "1",
                              "--sigma_z",
                              "1",
                              "--tiled",
                              "--tile-budget",
                              QString::number(budget_mb) + "MB",
                              "--json",
                              "--device",
                              "0"};
    const Child base = spawn(
        filter +
            QStringList{QString::fromStdString(small.string()), dir.filePath("small_out.tif")} +
            opts,
        dir.path());
    QVERIFY2(base.code == 0, base.err);
    const QString out = dir.filePath("out.tif");
    const Child c =
        spawn(filter + QStringList{QString::fromStdString(in.string()), out} + opts, dir.path());
    QVERIFY2(c.code == 0, c.err);
    const QJsonObject rep = QJsonDocument::fromJson(c.out).object();
    QVERIFY2(rep["streamed_output"].toBool(), c.out);
    const long budget_kb = static_cast<long>(budget_mb * 1000000 / 1024);
    const long bound_kb = base.max_rss_kb + 3 * budget_kb;
    const long file_kb = static_cast<long>(planes * plane / 1024);
    qInfo(
        "gpix run --tiled on %ld MB (uint16 %s), budget %zu MB: peak RSS %ld MB; 4-plane "
        "file %ld MB; bound %ld MB; %lld slabs, %.1f s",
        file_kb / 1024, big.str().c_str(), budget_mb, c.max_rss_kb / 1024, base.max_rss_kb / 1024,
        bound_kb / 1024, static_cast<long long>(rep["slabs"].toInteger()),
        rep["seconds"].toDouble());
    QVERIFY2(c.max_rss_kb <= bound_kb, "peak resident memory above the bound");
    QVERIFY2(bound_kb < file_kb / 2 + base.max_rss_kb, "the bound does not show streaming");
    QVERIFY(rep["slabs"].toInteger() >= 16);
    // The whole-array result, here in this process, plane by plane against the output
    // (GPIX_TEST_STREAM_SKIP_WHOLE=1 skips it for files too large to filter whole).
    if (qEnvironmentVariableIsSet("GPIX_TEST_STREAM_SKIP_WHOLE")) return;
    const io::Image input = io::read(in);
    const Array whole =
        run("gaussian_blur", Array::push(input.pixels, test::test_devices().front()),
            {{"sigma_x", 1.0}, {"sigma_y", 1.0}, {"sigma_z", 1.0}})
            .array;
    const HostArray expect = whole.pull();
    auto got = io::open_slabs(fs::u8path(out.toStdString()));
    QVERIFY(got && got->shape() == big && got->dtype() == DType::u16);
    std::vector<std::byte> buf(plane);
    for (std::size_t z = 0; z < planes; ++z) {
      got->read(z, z + 1, buf.data());
      if (std::memcmp(buf.data(), expect.data() + z * plane, plane) != 0)
        QFAIL(("plane " + std::to_string(z) + " differs from the whole-array run").c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestIoStream)
#include "test_io_stream.moc"
