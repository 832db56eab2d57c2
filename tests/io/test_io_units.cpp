// Physical units end to end in gpix_io: ImageJ and OME-TIFF files made by tifffile read with
// their spacing and unit (whole and streamed), every format keeps spacing, origin and unit
// through a write and a read (whole and streamed writes), other tools read what gpix wrote
// (tifffile's ImageJ metadata, the NIfTI header's xyzt_units, NRRD's space units), and
// `gpix info --json` and `gpix run` (whole and --tiled) carry them.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstring>

#include "gpix/io.h"
#include "gpix/raw.h"
#include "gpix/slab_files.h"
#include "support/process.h"
#include "support/random.h"

using namespace gpix;
namespace fs = std::filesystem;

namespace {

bool have_tifffile() {
  return !test::python_with_tifffile().isEmpty();
}

// Runs a Python script with arguments; fails the test with its output when it fails.
QByteArray python(const QString& script, const QStringList& args = {}) {
  const auto r = test::run_python(test::python_with_tifffile(), script, args);
  if (r.code != 0) qWarning("python failed: %s %s", r.out.constData(), r.err.constData());
  return r.code == 0 ? r.out : QByteArray("FAILED");
}

fs::path p(const QTemporaryDir& d, const char* name) {
  return fs::u8path((d.path() + "/" + name).toStdString());
}

bool near(double a, double b, double rel) {
  return std::abs(a - b) <= rel * std::max(1.0, std::abs(b));
}

void expect(const io::Metadata& m, const std::vector<double>& spacing,
            const std::vector<double>& origin, const std::string& unit, double rel,
            const std::string& where) {
  QVERIFY2(m.unit == unit, (where + ": unit '" + m.unit + "', expected '" + unit + "'").c_str());
  QCOMPARE(m.spacing.size(), spacing.size());
  for (std::size_t i = 0; i < spacing.size(); ++i) {
    QVERIFY2(near(m.spacing[i], spacing[i], rel),
             (where + ": spacing[" + std::to_string(i) + "] " + std::to_string(m.spacing[i]) +
              ", expected " + std::to_string(spacing[i]))
                 .c_str());
  }
  if (origin.empty()) return;
  QCOMPARE(m.origin.size(), origin.size());
  for (std::size_t i = 0; i < origin.size(); ++i) {
    QVERIFY2(near(m.origin[i], origin[i], rel),
             (where + ": origin[" + std::to_string(i) + "] " + std::to_string(m.origin[i]) +
              ", expected " + std::to_string(origin[i]))
                 .c_str());
  }
}

HostArray ramp(const Shape& s) {
  HostArray h = HostArray::empty(s, DType::u16);
  auto v = h.as<std::uint16_t>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(i * 7919u);
  return h;
}

}  // namespace

class TestIoUnits : public QObject {
  Q_OBJECT
 private slots:
  void names_are_normalised() {
    for (const char* um : {"um", "µm", "μm", "micron", "Microns", " micrometre ", "\\u00B5m"})
      QCOMPARE(io::normalise_unit(um), std::string("um"));
    for (const char* none : {"", "pixel", "pixels", " px "})
      QCOMPARE(io::normalise_unit(none), std::string());
    QCOMPARE(io::normalise_unit("Millimeter"), std::string("mm"));
    QCOMPARE(io::normalise_unit("inch"), std::string("in"));
    QCOMPARE(io::normalise_unit(" parsec "), std::string("parsec"));  // kept as it is
    QCOMPARE(io::metres_per("um"), 1e-6);
    QCOMPARE(io::metres_per("parsec"), 0.0);
  }

  // The biologist's file: ImageJ, 0.2 um in x/y and 1.5 um in z, a realistic 64x512x512
  // stack, read whole and streamed; a 2D ImageJ file in nm; an OME-TIFF with z in nm.
  void tifffile_imagej_and_ome() {
    if (!have_tifffile()) QSKIP("no /usr/bin/python3 with numpy and tifffile");
    QTemporaryDir dir;
    const QByteArray out =
        python(QStringLiteral("import sys, numpy as np, tifffile\n"
                              "d = sys.argv[1]\n"
                              "a = np.random.default_rng(1).integers(0, 4000, (64, 512, "
                              "512), dtype=np.uint16)\n"
                              "tifffile.imwrite(d + '/ij.tif', a, imagej=True, "
                              "resolution=(1 / 0.2, 1 / 0.2), metadata={'spacing': 1.5, "
                              "'unit': 'um', 'axes': 'ZYX'})\n"
                              "tifffile.imwrite(d + '/ij2d.tif', a[0, :37, :55], "
                              "imagej=True, resolution=(1 / 65.0, 1 / 130.0), "
                              "metadata={'unit': 'nm'})\n"
                              "tifffile.imwrite(d + '/ome.tif', a[:5, :33, :21], "
                              "ome=True, metadata={'axes': 'ZYX', 'PhysicalSizeX': 0.2, "
                              "'PhysicalSizeY': 0.25, 'PhysicalSizeZ': 1500, "
                              "'PhysicalSizeZUnit': 'nm'})\n"
                              "tifffile.imwrite(d + '/ome1.tif', a[:5, :33, :21], "
                              "ome=True, metadata={'axes': 'ZYX', 'PhysicalSizeX': 0.5, "
                              "'PhysicalSizeY': 0.5, 'PhysicalSizeZ': 1, "
                              "'PhysicalSizeZUnit': 'mm'})\n"
                              "print('ok')\n"),
               {dir.path()});
    QVERIFY2(out.startsWith("ok"), out.constData());

    const io::Image ij = io::read(p(dir, "ij.tif"));
    QCOMPARE(ij.pixels.shape(), (Shape{64, 512, 512}));
    expect(ij.meta, {1.5, 0.2, 0.2}, {0, 0, 0}, "um", 1e-6, "ImageJ stack");
    const auto streamed = io::open_slabs(p(dir, "ij.tif"));
    QVERIFY(streamed);
    expect(streamed->metadata(), {1.5, 0.2, 0.2}, {0, 0, 0}, "um", 1e-6, "ImageJ streamed");

    expect(io::read(p(dir, "ij2d.tif")).meta, {130.0, 65.0}, {0, 0}, "nm", 1e-6, "ImageJ 2D");

    const io::Image ome = io::read(p(dir, "ome.tif"));
    expect(ome.meta, {1.5, 0.25, 0.2}, {0, 0, 0}, "um", 1e-6, "OME-TIFF");
    expect(io::open_slabs(p(dir, "ome.tif"))->metadata(), {1.5, 0.25, 0.2}, {}, "um", 1e-6,
           "OME-TIFF streamed");
    // A spacing of exactly 1 in another unit is converted as any other (it was taken as "not
    // given" and kept as 1 um).
    expect(io::read(p(dir, "ome1.tif")).meta, {1000, 0.5, 0.5}, {0, 0, 0}, "um", 1e-6,
           "OME-TIFF, z of 1 mm");
  }

  // TIFF pages that are ImageJ channels carry no z spacing: said in the warnings.
  void imagej_channels_are_no_z_spacing() {
    if (!have_tifffile()) QSKIP("no /usr/bin/python3 with numpy and tifffile");
    QTemporaryDir dir;
    const QByteArray out =
        python(QStringLiteral("import sys, numpy as np, tifffile\n"
                              "tifffile.imwrite(sys.argv[1] + '/c.tif', np.zeros((3, 8, 9), "
                              "np.uint8), imagej=True, resolution=(2, 2), metadata={'spacing': "
                              "4.0, 'unit': 'um', 'axes': 'CYX'})\n"
                              "print('ok')\n"),
               {dir.path()});
    QVERIFY2(out.startsWith("ok"), out.constData());
    const io::Image img = io::read(p(dir, "c.tif"));
    expect(img.meta, {1.0, 0.5, 0.5}, {}, "um", 1e-6, "ImageJ channels");
    QCOMPARE(img.meta.channels, 3);
    QVERIFY(std::any_of(img.warnings.begin(), img.warnings.end(),
                        [](const std::string& w) { return w.find("channel") != w.npos; }));
    // Streamed (gpix run --tiled) the same: channels, and the warning.
    const auto streamed = io::open_slabs(p(dir, "c.tif"));
    QVERIFY(streamed);
    expect(streamed->metadata(), {1.0, 0.5, 0.5}, {}, "um", 1e-6, "ImageJ channels streamed");
    QCOMPARE(streamed->metadata().channels, 3);
    QCOMPARE(streamed->warnings().size(), std::size_t{1});
    QVERIFY(streamed->warnings()[0].find("channel") != std::string::npos);
  }

  // A stack of channels written keeps its mark where the format has room (TIFF as an ImageJ
  // hyperstack, NRRD and MetaImage as a key), whole and plane by plane, and reads back as
  // channels with its pixels and calibration; tifffile reads gpix's TIFF as ImageJ's channels.
  // NIfTI has no room for it (a z stack again); a mark that does not match the planes is
  // refused before anything is written.
  void channels_written_and_read_back() {
    QTemporaryDir dir;
    HostArray a = HostArray::empty(Shape{3, 17, 23}, DType::u16);
    auto* v = reinterpret_cast<std::uint16_t*>(a.data());
    for (std::size_t i = 0; i < a.elements(); ++i) v[i] = static_cast<std::uint16_t>(i * 37 % 4099);
    io::Metadata m;
    m.spacing = {2.0, 0.25, 0.5};  // a z spacing the channel axis does not keep, in any format
    m.unit = "um";
    m.channels = 3;
    // Colours too (ImageJ LUTs in TIFF, a key in NRRD and MetaImage); NIfTI keeps neither.
    m.channel_colours = {0x0000ff, 0xff8000, 0x00ff00};
    for (const char* name : {"c.tif", "c.nrrd", "c.mha", "s.tif", "s.nrrd", "s.mha", "c.nii"}) {
      const fs::path f = p(dir, name);
      if (name[0] == 's') {
        auto sink = io::create_slabs(f, m);
        QVERIFY2(sink, name);
        sink->start(a.shape(), a.dtype());
        sink->write(0, 3, a.data());
        sink->finish();
      } else {
        io::write(f, a, m);
      }
      const bool kept = std::string(name).find(".nii") == std::string::npos;
      for (const bool streamed : {false, true}) {
        io::Metadata got;
        HostArray px;
        if (streamed) {
          auto src = io::open_slabs(f);
          if (!src) continue;  // NIfTI does not stream
          got = src->metadata();
          px = HostArray::empty(src->shape(), src->dtype());
          src->read(0, src->shape()[0], px.data());
        } else {
          const io::Image img = io::read(f);
          got = img.meta;
          px = img.pixels;
        }
        const std::string where = std::string(name) + (streamed ? " streamed" : " whole");
        QVERIFY2(got.channels == (kept ? 3 : 1),
                 (where + ": " + std::to_string(got.channels) + " channels").c_str());
        QVERIFY2(got.channel_colours == (kept ? m.channel_colours : std::vector<std::uint32_t>{}),
                 where.c_str());
        QCOMPARE(px.shape(), a.shape());
        QVERIFY2(std::memcmp(px.data(), a.data(), a.bytes()) == 0, where.c_str());
        QVERIFY2(near(got.spacing.at(1), 0.25, 1e-6) && near(got.spacing.at(2), 0.5, 1e-6),
                 where.c_str());
        QVERIFY2(got.spacing.at(0) == 1.0, where.c_str());
      }
    }
    if (have_tifffile()) {
      // tifffile (and so Fiji) reads the LUTs: black to each colour.
      const QByteArray out = python(
          QStringLiteral("import sys, tifffile\n"
                         "for n in ('c.tif', 's.tif'):\n"
                         "    t = tifffile.TiffFile(sys.argv[1] + '/' + n)\n"
                         "    ij = t.imagej_metadata\n"
                         "    luts = [l[:, 255].tolist() + l[:, 128].tolist() + l[:, 0].tolist()\n"
                         "            for l in ij['LUTs']]\n"
                         "    print(ij['channels'], t.series[0].axes, luts)\n"
                         "    for page in t.pages[1:]:\n"
                         "        assert 50839 not in page.tags\n"),
          {dir.path()});
      const QByteArray line =
          "3 CYX [[0, 0, 255, 0, 0, 128, 0, 0, 0], [255, 128, 0, 128, 64, 0, 0, 0, 0], "
          "[0, 255, 0, 0, 128, 0, 0, 0, 0]]\n";
      QCOMPARE(out, line + line);
      // Fiji's LUTs in a file tifffile writes as ImageJ does: the colours, and no warning
      // about ImageJ's tags.
      const QByteArray wrote = python(
          QStringLiteral("import sys, numpy as np, tifffile\n"
                         "luts = [np.stack([np.linspace(0, v, 256).astype('u1') for v in c])\n"
                         "        for c in ([0, 0, 255], [255, 255, 0])]\n"
                         "tifffile.imwrite(sys.argv[1] + '/fiji.tif', np.zeros((2, 4, 5), 'u2'),\n"
                         "                 imagej=True, metadata={'axes': 'CYX', 'LUTs': luts,\n"
                         "                 'Ranges': (0, 100, 0, 200)})\n"
                         "print('ok')\n"),
          {dir.path()});
      QCOMPARE(wrote, QByteArray("ok\n"));
      const io::Image fiji = io::read(p(dir, "fiji.tif"));
      QCOMPARE(fiji.meta.channels, 2);
      QCOMPARE(fiji.meta.channel_colours, (std::vector<std::uint32_t>{0x0000ff, 0xffff00}));
      QVERIFY2(fiji.warnings.empty(), fiji.warnings.empty() ? "" : fiji.warnings[0].c_str());
      QCOMPARE(io::open_slabs(p(dir, "fiji.tif"))->metadata().channel_colours,
               fiji.meta.channel_colours);
    }
    // A mark that does not match the planes when read (a file cropped by other software that
    // kept the key): z slices, and a warning that says why.
    {
      const fs::path f = p(dir, "two.nrrd");
      io::Metadata two = m;
      two.channels = 2;
      two.channel_colours.clear();
      io::write(f, HostArray::empty(Shape{2, 5, 6}, DType::u8), two);
      QFile file(QString::fromStdString(f.string()));
      QVERIFY(file.open(QIODevice::ReadOnly));
      QByteArray bytes = file.readAll();
      file.close();
      QVERIFY(bytes.contains("gpix_channels:=2"));
      bytes.replace("gpix_channels:=2", "gpix_channels:=3");
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(bytes);
      file.close();
      const io::Image img = io::read(f);
      QCOMPARE(img.meta.channels, 1);
      QVERIFY(std::any_of(img.warnings.begin(), img.warnings.end(), [](const std::string& w) {
        return w.find("gpix_channels=3") != w.npos && w.find("z slices") != w.npos;
      }));
      QCOMPARE(io::open_slabs(f)->metadata().channels, 1);
    }
    // Colours for another number of channels: refused, nothing written.
    {
      io::Metadata two_colours = m;
      two_colours.channel_colours.pop_back();
      const fs::path f = p(dir, "colours.tif");
      try {
        io::write(f, a, two_colours);
        QFAIL("2 colours were written for 3 channels");
      } catch (const IoError& e) {
        QVERIFY2(std::string(e.what()).find("2 channel colours for 3") != std::string::npos,
                 e.what());
      }
      QVERIFY(!fs::exists(f));
    }
    // A mark for another number of planes, or on a 2D image: refused, nothing written.
    for (const Shape& wrong : {Shape{4, 17, 23}, Shape{17, 23}}) {
      const HostArray b = HostArray::empty(wrong, DType::u16);
      const fs::path f = p(dir, "wrong.tif");
      try {
        io::write(f, b, m);
        QFAIL("a mark of 3 channels was written on another shape");
      } catch (const IoError& e) {
        QVERIFY2(std::string(e.what()).find("3 channels") != std::string::npos, e.what());
      }
      QVERIFY(!fs::exists(f));
    }
  }

  // ImageJ's yunit= and zunit=: y and z numbers in units of their own, converted to unit=
  // (a z spacing of 1500 nm is 1.5 um, not 1500); one that cannot be converted is taken as it
  // is, said in the warnings, as is a spacing that is not a length. Read whole and streamed.
  void imagej_axis_units() {
    if (!have_tifffile()) QSKIP("no /usr/bin/python3 with numpy and tifffile");
    QTemporaryDir dir;
    const QByteArray out = python(
        QStringLiteral("import sys, numpy as np, tifffile\n"
                       "d = sys.argv[1]\n"
                       "a = np.zeros((4, 8, 9), np.uint16)\n"
                       "def w(name, res, **m):\n"
                       "    tifffile.imwrite(d + '/' + name, a, imagej=True, resolution=res,\n"
                       "                     metadata=dict(axes='ZYX', **m))\n"
                       "w('z_nm.tif', (2, 2), spacing=1500, unit='um', zunit='nm')\n"
                       "w('y_mm.tif', (2, 0.5), spacing=3, unit='um', yunit='mm')\n"
                       "w('z_s.tif', (2, 2), spacing=0.25, unit='um', zunit='sec')\n"
                       "w('z_neg.tif', (2, 2), spacing=-2, unit='um')\n"
                       "w('z_same.tif', (2, 2), spacing=1, unit='um', zunit='micron')\n"
                       "print(tifffile.TiffFile(d + '/z_nm.tif').pages[0].description)\n"
                       "print('ok')\n"),
        {dir.path()});
    QVERIFY2(out.contains("zunit=nm") && out.trimmed().endsWith("ok"), out.constData());
    struct Case {
      const char* file;
      std::vector<double> spacing;
      const char* warning;  // a part of a warning, or nullptr for none
    };
    const Case cases[] = {
        {"z_nm.tif", {1.5, 0.5, 0.5}, nullptr},
        {"y_mm.tif", {3.0, 2000.0, 0.5}, nullptr},
        {"z_s.tif", {0.25, 0.5, 0.5}, "zunit=sec cannot be converted"},
        {"z_neg.tif", {1.0, 0.5, 0.5}, "spacing=-2 is not a length"},
        {"z_same.tif", {1.0, 0.5, 0.5}, nullptr},
    };
    for (const Case& c : cases) {
      const io::Image img = io::read(p(dir, c.file));
      expect(img.meta, c.spacing, {}, "um", 1e-9, c.file);
      const auto streamed = io::open_slabs(p(dir, c.file));
      QVERIFY(streamed);
      expect(streamed->metadata(), c.spacing, {}, "um", 1e-9, std::string(c.file) + " streamed");
      const bool warned =
          c.warning && std::any_of(img.warnings.begin(), img.warnings.end(), [&](const auto& w) {
            return w.find(c.warning) != std::string::npos;
          });
      QVERIFY2(c.warning ? warned : img.warnings.empty(), c.file);
      QVERIFY2(streamed->warnings().size() == (c.warning ? 1U : 0U) &&
                   (!c.warning || streamed->warnings()[0].find(c.warning) != std::string::npos),
               c.file);
    }
    // gpix run says it on stderr, whole and tiled, and runs.
    for (const bool tiled : {false, true}) {
      QStringList args{"run", "mean_box", dir.path() + "/z_s.tif", dir.path() + "/out.tif"};
      if (tiled) args << "--tiled";
      const auto r = test::run_cli(args);
      QVERIFY2(r.code == 0, r.err.constData());
      QVERIFY2(r.err.contains("z_s.tif: warning: the ImageJ zunit=sec cannot be converted"),
               r.err.constData());
    }
  }

  // Every format that stores stacks keeps spacing, origin and unit, through io::write and
  // through the streamed writer, read whole and streamed; odd shapes, 2D and 3D.
  void round_trip_every_format() {
    QTemporaryDir dir;
    const std::vector<std::pair<Shape, io::Metadata>> cases = {
        {Shape{7, 33, 21}, {{1.5, 0.2, 0.25}, {-3.0, 12.5, 0.75}, {}, "um"}},
        {Shape{19, 45}, {{0.4, 0.3}, {2.0, -1.0}, {}, "mm"}},
        {Shape{5, 9, 11}, {{2.0, 0.5, 0.5}, {0, 0, 0}, {}, ""}},
    };
    const char* names[] = {"a.tif", "a.nrrd", "n.nhdr", "a.mha", "m.mhd", "a.nii", "a.nii.gz"};
    for (const auto& [shape, meta] : cases) {
      const HostArray h = ramp(shape);
      for (const char* name : names) {
        const fs::path file = p(dir, name);
        const std::string where = std::string(name) + " " + shape.str() + " " + meta.unit;
        const double rel = std::string(name).find(".nii") != std::string::npos ? 1e-6 : 1e-7;
        io::write(file, h, meta);
        const io::Image back = io::read(file);
        QVERIFY(std::memcmp(back.pixels.data(), h.data(), h.bytes()) == 0);
        expect(back.meta, meta.spacing, meta.origin, meta.unit, rel, where + " whole");
        if (auto s = io::open_slabs(file)) {
          expect(s->metadata(), meta.spacing, meta.origin, meta.unit, rel, where + " streamed");
        }
        if (auto sink = io::create_slabs(file, meta)) {
          sink->start(shape, DType::u16);
          sink->write(0, shape[0], h.data());
          sink->finish();
          expect(io::read(file).meta, meta.spacing, meta.origin, meta.unit, rel,
                 where + " written streamed");
        }
      }
    }
  }

  // Units the format cannot name are converted (nm into um for NIfTI and MetaImage), and a
  // unit that is no known length is refused where it cannot be named, kept where it can.
  void units_a_format_cannot_name() {
    QTemporaryDir dir;
    const HostArray h = ramp(Shape{3, 4, 5});
    const io::Metadata nm{{500.0, 100.0, 100.0}, {1000.0, 0, 0}, {}, "nm"};
    for (const char* name : {"n.nii", "n.mha"}) {
      io::write(p(dir, name), h, nm);
      expect(io::read(p(dir, name)).meta, {0.5, 0.1, 0.1}, {1.0, 0, 0}, "um", 1e-6, name);
    }
    const io::Metadata odd{{2, 2, 2}, {}, {}, "parsec"};
    for (const char* name : {"o.nii", "o.mha"}) {
      try {
        io::write(p(dir, name), h, odd);
        QFAIL("a unit NIfTI and MetaImage cannot name was written");
      } catch (const IoError& e) {
        QVERIFY2(std::string(e.what()).find("parsec") != std::string::npos, e.what());
        QVERIFY(!fs::exists(p(dir, name)));
      }
    }
    for (const char* name : {"o.tif", "o.nrrd"}) {
      io::write(p(dir, name), h, odd);
      QCOMPARE(io::read(p(dir, name)).meta.unit, std::string("parsec"));
    }
  }

  // A NRRD whose space units differ per axis reads without a unit, said in the warnings; the
  // streamed source (gpix run --tiled) says the same.
  void nrrd_mixed_units_warned_streamed() {
    QTemporaryDir dir;
    {
      QFile f(dir.path() + "/m.nhdr");
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(
          "NRRD0004\ntype: uint8\ndimension: 3\nsizes: 4 3 2\nspace dimension: 3\n"
          "space directions: (1,0,0) (0,1,0) (0,0,2)\nspace units: \"um\" \"um\" \"mm\"\n"
          "encoding: raw\ndata file: m.raw\n\n");
      QFile r(dir.path() + "/m.raw");
      QVERIFY(r.open(QIODevice::WriteOnly));
      r.write(QByteArray(24, '\x07'));
    }
    const io::Image img = io::read(p(dir, "m.nhdr"));
    QCOMPARE(img.meta.unit, std::string());
    QCOMPARE(img.warnings.size(), std::size_t{1});
    QVERIFY(img.warnings[0].find("space units differ") != std::string::npos);
    const auto streamed = io::open_slabs(p(dir, "m.nhdr"));
    QVERIFY(streamed);
    QCOMPARE(streamed->metadata().unit, std::string());
    QCOMPARE(streamed->warnings(), img.warnings);
  }

  // A JPEG's density (dots per inch or centimetre) reads as a spacing in millimetres, as a
  // TIFF resolution in inches does, and says so: it read as 0.0847 with no unit.
  void jpeg_density_is_millimetres() {
    QTemporaryDir dir;
    const HostArray h = ramp(Shape{12, 16});
    HostArray u8 = HostArray::empty(h.shape(), DType::u8);
    for (std::size_t i = 0; i < h.elements(); ++i) u8.as<std::uint8_t>()[i] = std::uint8_t(i);
    io::write(p(dir, "photo.jpg"), u8, io::Metadata{{25.4 / 300, 25.4 / 300}, {}, {}, "mm"});
    const io::Image img = io::read(p(dir, "photo.jpg"));
    QCOMPARE(img.meta.unit, std::string("mm"));
    QVERIFY2(near(img.meta.spacing.at(1), 25.4 / 300, 1e-6),
             std::to_string(img.meta.spacing.at(1)).c_str());
  }

  // What other readers find in gpix's files.
  void other_tools_read_gpix_files() {
    if (!have_tifffile()) QSKIP("no /usr/bin/python3 with numpy and tifffile");
    QTemporaryDir dir;
    const HostArray h = ramp(Shape{6, 20, 30});
    const io::Metadata m{{1.5, 0.2, 0.2}, {0, 0, 0}, {}, "um"};
    for (const char* name : {"g.tif", "g.nii", "g.nrrd"}) io::write(p(dir, name), h, m);
    const QByteArray out = python(
        QStringLiteral("import sys, tifffile\n"
                       "d = sys.argv[1]\n"
                       "t = tifffile.TiffFile(d + '/g.tif')\n"
                       "ij = t.imagej_metadata\n"
                       "x = t.pages[0].tags['XResolution'].value\n"
                       "print(ij['unit'], ij['spacing'], x[0] / x[1], len(t.pages))\n"
                       "h = open(d + '/g.nii', 'rb').read(348)\n"
                       "print(h[123] & 7)\n"
                       "print([l for l in open(d + '/g.nrrd', 'rb').read(2000).split(b'\\n') "
                       "if l.startswith(b'space units')][0].decode())\n"),
        {dir.path()});
    const QList<QByteArray> lines = out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines[0], QByteArray("micron 1.5 5.0 6"));
    QCOMPARE(lines[1], QByteArray("3"));  // NIFTI_UNITS_MICRON
    QCOMPARE(lines[2], QByteArray("space units: \"um\" \"um\" \"um\""));
  }

  // ImageJ reads an uncompressed stack whose description says images=N as one block of N
  // planes from the first page's pixels on, ignoring the other directories, and tifffile reads
  // ImageJ stacks the same way: the pages' pixels must follow one another. libtiff put each
  // page's directory after its pixels, so both read every page after the first shifted (a
  // 2-channel composite saved by gpix opened in Fiji with a garbage second channel). Whole and
  // plane by plane, stacks of channels and of z, one strip a page and several, compressed.
  void stacks_are_one_block() {
    if (!have_tifffile()) QSKIP("no /usr/bin/python3 with numpy and tifffile");
    QTemporaryDir dir;
    struct Case {
      const char* name;
      Shape shape;
      int channels;
      bool compress;
    };
    const Case cases[] = {{"c2.tif", Shape{2, 64, 48}, 2, false},
                          {"c3_strips.tif", Shape{3, 900, 700}, 3, false},
                          {"z5.tif", Shape{5, 33, 21}, 1, false},
                          {"z2_strips.tif", Shape{2, 1000, 600}, 1, false},
                          {"c4_deflate.tif", Shape{4, 70, 50}, 4, true},
                          {"one.tif", Shape{1, 17, 19}, 1, false}};
    QStringList names;
    for (const Case& c : cases) {
      const HostArray h =
          HostArray::from(test::random_values<std::uint16_t>(c.shape.elements()), c.shape);
      io::Metadata m{{2.0, 0.2, 0.25}, {0, 0, 0}, {}, "um"};
      m.channels = c.channels;
      for (const bool streamed : {false, true}) {
        const std::string name = std::string(streamed ? "s_" : "w_") + c.name;
        if (streamed) {
          const auto sink = io::create_slabs(p(dir, name.c_str()), m, {.compress = c.compress});
          QVERIFY(sink);
          sink->start(h.shape(), h.dtype());
          sink->write(0, h.shape()[0], h.data());
          sink->finish();
        } else {
          io::write(p(dir, name.c_str()), h, m, {.compress = c.compress});
        }
        io::write_raw(p(dir, (name + ".raw").c_str()), h);
        names << QString::fromStdString(name);
      }
    }
    // For each file: tifffile's array equals the pixels; uncompressed pages start where the
    // previous ended, and the block read from the first page's offset (ImageJ's way) equals them.
    const QByteArray out = python(
        QStringLiteral("import sys, numpy, tifffile\n"
                       "d = sys.argv[1]\n"
                       "for n in sys.argv[2:]:\n"
                       "    want = numpy.fromfile(d + '/' + n + '.raw', '<u2')\n"
                       "    t = tifffile.TiffFile(d + '/' + n)\n"
                       "    ok = numpy.array_equal(t.asarray().ravel(), want)\n"
                       "    pg = t.pages\n"
                       "    if pg[0].compression == 1:\n"
                       "        start = pg[0].dataoffsets[0]\n"
                       "        plane = want.size // len(pg) * 2\n"
                       "        ok = ok and all(p.dataoffsets[0] == start + i * plane\n"
                       "                        for i, p in enumerate(pg))\n"
                       "        raw = open(d + '/' + n, 'rb').read()[start:start + want.size * 2]\n"
                       "        ok = ok and numpy.array_equal(numpy.frombuffer(raw, '<u2'), want)\n"
                       "    print(n, ok)\n"),
        QStringList{dir.path()} + names);
    const QList<QByteArray> lines = out.trimmed().split('\n');
    QCOMPARE(lines.size(), names.size());
    for (qsizetype i = 0; i < names.size(); ++i) QCOMPARE(lines[i], names[i].toUtf8() + " True");
  }

  // `gpix info --json` shows them; `gpix run` carries them from input to output, whole and
  // tiled, same shape and through a z projection.
  void cli_shows_and_carries() {
    QTemporaryDir dir;
    const io::Metadata m{{1.5, 0.2, 0.25}, {3.0, 1.0, 2.0}, {}, "um"};
    io::write(p(dir, "in.tif"), ramp(Shape{6, 40, 30}), m);
    const auto info = test::run_cli({"info", dir.path() + "/in.tif", "--json"});
    QVERIFY2(info.code == 0, info.err.constData());
    const QJsonObject o = QJsonDocument::fromJson(info.out).object();
    QCOMPARE(o["unit"].toString(), QStringLiteral("um"));
    QCOMPARE(o["spacing"].toArray().at(0).toDouble(), 1.5);
    QCOMPARE(o["origin"].toArray().at(0).toDouble(), 3.0);
    for (const QString& out :
         {QStringLiteral("o.nrrd"), QStringLiteral("o.nii"), QStringLiteral("o.tif")}) {
      for (const bool tiled : {false, true}) {
        QStringList args{
            "run", "gaussian_blur", dir.path() + "/in.tif", dir.path() + "/" + out, "--sigma_x",
            "1"};
        if (tiled) args << "--tiled";
        const auto r = test::run_cli(args);
        QVERIFY2(r.code == 0, r.err.constData());
        expect(io::read(fs::u8path((dir.path() + "/" + out).toStdString())).meta, m.spacing,
               m.origin, "um", 1e-6, out.toStdString() + (tiled ? " tiled" : ""));
      }
    }
    for (const bool tiled : {false, true}) {
      QStringList args{"run", "maximum_z_projection", dir.path() + "/in.tif",
                       dir.path() + "/mip.mha"};
      if (tiled) args << "--tiled";
      const auto r = test::run_cli(args);
      QVERIFY2(r.code == 0, r.err.constData());
      expect(io::read(p(dir, "mip.mha")).meta, {0.2, 0.25}, {1.0, 2.0}, "um", 1e-9,
             tiled ? "projection tiled" : "projection");
    }
  }
};

QTEST_GUILESS_MAIN(TestIoUnits)
#include "test_io_units.moc"
