// Bad input: every case is a gpix::IoError naming the file, no crash, and no file left behind.
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkJPEGImageIO.h>
#include <itkNrrdImageIO.h>
#include <tiffio.h>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "gpix/io.h"
#include "gpix/raw.h"
#include "gpix/slab_files.h"
#include "support/file_size_limit.h"
#include "support/random.h"
#include "support/threads.h"

using namespace gpix;
namespace fs = std::filesystem;

namespace {

fs::path in(const QTemporaryDir& d, const std::string& name) {
  return fs::path(d.path().toStdString()) / name;
}

void put(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Expects an IoError about path whose message contains `words`.
void expect_io_error(const std::function<void()>& f, const fs::path& path,
                     const std::string& words) {
  try {
    f();
  } catch (const IoError& e) {
    QCOMPARE(e.path(), path.string());
    QVERIFY2(std::string(e.what()).find(words) != std::string::npos, e.what());
    return;
  }
  QFAIL(qPrintable(QString::fromStdString("no IoError for " + path.string())));
}

// A little-endian classic TIFF of one 8-bit grayscale page in one strip: `data` at offset 8,
// the directory after it, StripByteCounts as given (a file may claim more than it holds).
std::string tiny_tiff(std::uint32_t width, std::uint32_t height, std::uint16_t compression,
                      const std::string& data, std::uint32_t byte_count) {
  std::string b = "II*";
  b.push_back('\0');
  auto u16 = [&](std::uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); };
  auto u32 = [&](std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  u32(static_cast<std::uint32_t>(8 + data.size()));  // the directory follows the data
  b += data;
  const std::uint32_t tags[][3] = {{256, 4, width},       {257, 4, height}, {258, 3, 8},
                                   {259, 3, compression}, {262, 3, 1},      {273, 4, 8},
                                   {277, 3, 1},           {278, 4, height}, {279, 4, byte_count}};
  u16(static_cast<std::uint16_t>(std::size(tags)));
  for (const auto& t : tags) {
    u16(static_cast<std::uint16_t>(t[0]));
    u16(static_cast<std::uint16_t>(t[1]));  // 3: SHORT, 4: LONG
    u32(1);
    if (t[1] == 3) {
      u16(static_cast<std::uint16_t>(t[2]));
      u16(0);
    } else {
      u32(t[2]);
    }
  }
  u32(0);  // no next directory
  return b;
}

QStringList entries(const QTemporaryDir& d) {
  return QDir(d.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
}

}  // namespace

class TestIoBad : public QObject {
  Q_OBJECT
 private slots:
  void missing_folder_empty() {
    QTemporaryDir dir;
    expect_io_error([&] { io::read(in(dir, "none.tif")); }, in(dir, "none.tif"), "no such file");
    QVERIFY(QDir(dir.path()).mkdir("stack.tif"));
    expect_io_error([&] { io::read(in(dir, "stack.tif")); }, in(dir, "stack.tif"), "folder");
    put(in(dir, "empty.png"), "");
    expect_io_error([&] { io::read(in(dir, "empty.png")); }, in(dir, "empty.png"), "empty");
    expect_io_error([&] { io::read(in(dir, "x.bmpq")); }, in(dir, "x.bmpq"), ".tif");
  }

  void truncated_and_corrupt_data() {
    QTest::addColumn<QString>("ext");
    for (const char* e : {".tif", ".png", ".jpg", ".nrrd", ".mha", ".nii", ".nii.gz"})
      QTest::newRow(e) << QString(e);
  }
  void truncated_and_corrupt() {
    QFETCH(QString, ext);
    QTemporaryDir dir;
    const auto good = in(dir, "good" + ext.toStdString());
    const HostArray h =
        HostArray::from(test::random_values<std::uint8_t>(3 * 40 * 50), Shape{40, 150});
    io::write(good, h);
    const std::string bytes = slurp(good);
    // Truncated to a half, to the header only, and to a few bytes.
    for (std::size_t keep :
         {bytes.size() / 2, std::min<std::size_t>(bytes.size() / 8, 400), std::size_t{10}}) {
      const auto p = in(dir, "cut" + std::to_string(keep) + ext.toStdString());
      put(p, bytes.substr(0, keep));
      expect_io_error([&] { io::read(p); }, p, "");
    }
    // Garbage with the right extension.
    std::string junk(2000, '\0');
    for (auto& c : junk) c = static_cast<char>(test::rng()());
    const auto p = in(dir, "junk" + ext.toStdString());
    put(p, junk);
    expect_io_error([&] { io::read(p); }, p, "");
  }

  // ReadOptions::max_bytes counts every component in the file's dtype, refuses one byte over
  // before reading, and lets a claim of exactly the limit through.
  void read_size_limit() {
    QTemporaryDir dir;
    const HostArray stack =
        HostArray::from(test::random_values<std::uint16_t>(5 * 30 * 40), Shape{5, 30, 40});
    for (const char* name : {"stack.nrrd", "stack.tif", "stack.mha"}) {
      const auto p = in(dir, name);
      io::write(p, stack);
      expect_io_error([&] { io::read(p, {.max_bytes = 11999}); }, p,
                      "claims 12.0 kB (12000 bytes) of pixels, more than the 12.0 kB (11999 "
                      "bytes) this read allows (ReadOptions::max_bytes)");
      for (std::uint64_t limit : {std::uint64_t{12000}, std::uint64_t{0}}) {
        const io::Image img = io::read(p, {.max_bytes = limit});
        QCOMPARE(img.pixels.shape(), stack.shape());
        QVERIFY2(std::memcmp(img.pixels.data(), stack.data(), stack.bytes()) == 0, name);
      }
    }
    // An RGB JPEG: its claim is width x height x 3 bytes, for the split and luminance
    // policies alike (luminance makes float32 of it, but the limit is on what is decoded).
    const auto rgb = fs::path(GPIX_FUZZ_CORPUS) / "jpeg" / "rgb.jpg";
    const io::Image whole = io::read(rgb, {.channels = io::Channels::split});
    QCOMPARE(whole.pixels.shape()[0], std::size_t{3});
    const std::uint64_t bytes = whole.pixels.bytes();
    for (io::Channels c : {io::Channels::split, io::Channels::luminance}) {
      expect_io_error([&] { io::read(rgb, {.channels = c, .max_bytes = bytes - 1}); }, rgb,
                      "(" + std::to_string(bytes) + " bytes) of pixels, more than");
      QCOMPARE(io::read(rgb, {.channels = c, .max_bytes = bytes}).pixels.elements(),
               c == io::Channels::split ? whole.pixels.elements() : whole.pixels.elements() / 3);
    }
  }

  void lying_extension() {
    QTemporaryDir dir;
    const HostArray h = HostArray::from(test::random_values<std::uint8_t>(35), Shape{5, 7});
    io::write(in(dir, "real.png"), h);
    QVERIFY(QFile::rename(QString::fromStdString(in(dir, "real.png").string()),
                          QString::fromStdString(in(dir, "fake.tif").string())));
    expect_io_error([&] { io::read(in(dir, "fake.tif")); }, in(dir, "fake.tif"), "content is PNG");
  }

  void unsupported_pixels() {
    QTemporaryDir dir;
    // Complex pixels, written by ITK itself.
    using C = itk::Image<std::complex<float>, 2>;
    auto img = C::New();
    C::SizeType size{{4, 3}};
    img->SetRegions(C::RegionType(size));
    img->Allocate();
    img->FillBuffer(std::complex<float>(1, 2));
    const auto cpath = in(dir, "complex.nrrd");
    auto w = itk::ImageFileWriter<C>::New();
    w->SetImageIO(itk::NrrdImageIO::New());
    w->SetInput(img);
    w->SetFileName(cpath.string());
    w->Update();
    expect_io_error([&] { io::read(cpath); }, cpath, "complex");
    expect_io_error([&] { io::read(cpath, {.channels = io::Channels::channel}); }, cpath,
                    "complex");
    // 4D, a MetaImage header with its data.
    const auto p4 = in(dir, "four.mha");
    put(p4,
        "ObjectType = Image\nNDims = 4\nDimSize = 2 2 2 2\nElementType = "
        "MET_UCHAR\nElementDataFile = LOCAL\n" +
            std::string(16, '\1'));
    expect_io_error([&] { io::read(p4); }, p4, "4 dimensions");
    // Vector pixels with 2 components: only channel/split can read them.
    const auto pv = in(dir, "vec.mha");
    put(pv,
        "ObjectType = Image\nNDims = 2\nDimSize = 3 2\nElementNumberOfChannels = 2\nElementType = "
        "MET_SHORT\n"
        "ElementDataFile = LOCAL\n" +
            std::string(24, '\2'));
    expect_io_error([&] { io::read(pv); }, pv, "channels");
    expect_io_error([&] { io::read(pv, {.channels = io::Channels::luminance}); }, pv,
                    "luminance needs RGB");
    QCOMPARE(io::read(pv, {.channels = io::Channels::channel, .channel = 1}).pixels.shape(),
             (Shape{2, 3}));
    // A channel of an image of one sample a pixel that is no stack of channels: it read the
    // whole image as if no channel had been asked for (gpix run --channels 1 on a z stack
    // filtered the stack). Channel 0 is the image itself. TIFF (gpix's libtiff reader), NRRD
    // and PNG.
    const HostArray stack = HostArray::from(test::random_values<std::uint16_t>(60), Shape{3, 4, 5});
    for (const char* name : {"plain.tif", "plain.nrrd", "plain2d.png"}) {
      const auto p = in(dir, name);
      const bool flat = std::string(name).find("2d") != std::string::npos;
      io::write(
          p, flat ? HostArray::from(test::random_values<std::uint16_t>(20), Shape{4, 5}) : stack);
      expect_io_error([&] { io::read(p, {.channels = io::Channels::channel, .channel = 1}); }, p,
                      "not a stack of channels: there is no channel 1");
      const io::Image zero = io::read(p, {.channels = io::Channels::channel, .channel = 0});
      QCOMPARE(zero.pixels.shape(), (flat ? Shape{4, 5} : stack.shape()));
    }
  }

  void huge_header() {
    QTemporaryDir dir;
    const auto p = in(dir, "huge.mhd");
    put(in(dir, "huge.raw"), std::string(64, '\0'));
    put(p,
        "ObjectType = Image\nNDims = 3\nDimSize = 100000 100000 100000\nElementType = MET_UCHAR\n"
        "ElementDataFile = huge.raw\n");
    expect_io_error([&] { io::read(p); }, p, "claims");
    const auto q = in(dir, "overflow.mha");
    put(q,
        "ObjectType = Image\nNDims = 3\nDimSize = 4000000000 4000000000 4000000000\nElementType = "
        "MET_DOUBLE\n"
        "ElementDataFile = LOCAL\n");
    expect_io_error([&] { io::read(q); }, q, "");
  }

  // MetaIO's way with field names, which the header check must share to check what MetaIO
  // reads: ':' separates as '=' does, and names are compared as written.
  void metaimage_field_names() {
    QTemporaryDir dir;
    const std::vector<std::uint8_t> px = {0, 1, 2, 3, 4, 250};
    const std::string pixels(px.begin(), px.end());
    // Control bytes in the pixels: gpix found no ElementDataFile in "ElementDataFile: LOCAL",
    // checked 4 KiB as header text and refused this valid file.
    const auto colon = in(dir, "colon.mha");
    put(colon,
        "ObjectType: Image\nNDims: 2\nDimSize: 3 2\nElementType: MET_UCHAR\n"
        "ElementDataFile: LOCAL\n" +
            pixels);
    const io::Image img = io::read(colon);
    QCOMPARE(img.pixels.shape(), (Shape{2, 3}));
    QCOMPARE(std::memcmp(img.pixels.data(), px.data(), px.size()), 0);
    // "elementdatafile" is an unknown field to MetaIO, not the end of the header: the NDims
    // after it is checked, and a header without the real field is refused before MetaIO reads
    // the whole file looking for it.
    const auto lower = in(dir, "lower.mha");
    put(lower,
        "ObjectType = Image\nNDims = 2\nDimSize = 3 2\nElementType = MET_UCHAR\n"
        "elementdatafile = LOCAL\nNDims = 99999\nElementDataFile = LOCAL\n" +
            pixels);
    expect_io_error([&] { io::read(lower); }, lower, "NDims = 99999");
    const auto none = in(dir, "none.mha");
    put(none, "ObjectType = Image\nNDims = 2\nDimSize = 3 2\nElementType = MET_UCHAR\n" +
                  std::string(8000, ' ') + "\nNDims = 3\n");
    expect_io_error([&] { io::read(none); }, none, "no 'ElementDataFile = ...' line");
    // MetaIO's booleans: the first character T, t or 1 (ITK wrote "True"; "1" is as good).
    const auto msb = in(dir, "msb.mha");
    put(msb,
        "ObjectType = Image\nNDims = 1\nDimSize = 3\nElementType = MET_USHORT\n"
        "BinaryDataByteOrderMSB = 1\nElementDataFile = LOCAL\n" +
            std::string("\x01\x02\x00\x05\xff\x00", 6));
    const io::Image be = io::read(msb);
    const auto* v = reinterpret_cast<const std::uint16_t*>(be.pixels.data());
    QCOMPARE(v[0], std::uint16_t{0x0102});
    QCOMPARE(v[1], std::uint16_t{0x0005});
    QCOMPARE(v[2], std::uint16_t{0xff00});
  }

  // A file pattern ("slice%02d.raw 1 3 1") is read slice by slice, as MetaIO makes the names;
  // a pattern MetaIO would loop on, write past the image with, leave slices unread from or
  // hand to sprintf unsafely is refused before the pixels are allocated.
  void metaimage_file_patterns() {
    QTemporaryDir dir;
    const std::string head =
        "ObjectType = Image\nNDims = 3\nDimSize = 4 2 3\nElementType = MET_UCHAR\n";
    std::vector<std::uint8_t> want(24);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = static_cast<std::uint8_t>(i * 7 + 1);
    for (int z = 0; z < 3; ++z) {
      char name[32];
      std::snprintf(name, sizeof name, "slice%02d.raw", 2 * z + 1);
      put(in(dir, name), std::string(reinterpret_cast<const char*>(want.data()) + 8 * z, 8));
    }
    const auto good = in(dir, "good.mha");
    put(good, head + "ElementDataFile = slice%02d.raw 1 5 2\n");
    const io::Image img = io::read(good);
    QCOMPARE(img.pixels.shape(), (Shape{3, 2, 4}));
    QCOMPARE(std::memcmp(img.pixels.data(), want.data(), want.size()), 0);
    const auto refused = [&](const std::string& value, const std::string& words,
                             const std::string& dims = "4 2 3") {
      const auto p = in(dir, "bad.mha");
      put(p, "ObjectType = Image\nNDims = 3\nDimSize = " + dims +
                 "\nElementType = MET_UCHAR\nElementDataFile = " + value + "\n");
      expect_io_error([&] { io::read(p); }, p, words);
    };
    refused("slice%02d.raw 1 5 0", "steps by 0");
    refused("slice%02d.raw 5 1 -2", "steps by -2");
    refused("slice%02d.raw 1 3 1", "'slice02.raw' (from the pattern");
    refused("slice%02d.raw 1 7 2", "names 4 file(s), one per slice, but its DimSize has 3 slices");
    refused("slice%02d.raw 3 7 2", "'slice07.raw' (from the pattern");
    refused("slice%02d.raw 1 5 2", "is truncated: 8 bytes, 16 expected", "8 2 3");
    refused("slice%s.raw 1 5 2", "not a file pattern");
    refused("slice%0100d.raw 1 5 2", "not a file pattern");
    refused("slice%d%d.raw 1 5 2", "not a file pattern");
    refused("slice%02d.raw 1 5 99999999999", "not a file pattern");
    refused("", "its ElementDataFile is empty");
    refused("slice%02d.raw 1 5 2", "DimSize = ... 2147483648 ...", "4 2147483648 3");
    refused("slice%02d.raw 1 5 2", "DimSize = ... 0.5 ...", "4 0.5 3");
    refused("LIST 1D", "needs 20000000 slice files", "4 10000 2000");
    // A data file name with a space is one file to MetaIO, checked as one.
    refused("no such file.raw", "its data file 'no such file.raw' does not exist");
    refused("LIST " + std::string(90, 'x'), "a word of 90 characters");
    // Compressed slices are left to MetaIO's inflate, within what deflate can expand to.
    const auto big = in(dir, "big.mha");
    put(big,
        "ObjectType = Image\nNDims = 3\nDimSize = 100000 1000 3\nElementType = MET_UCHAR\n"
        "CompressedData = True\nElementDataFile = slice%02d.raw 1 5 2\n");
    expect_io_error([&] { io::read(big); }, big, "cannot inflate to the 300000000 bytes");
  }

  // Headers ITK cannot survive: an unknown MetaImage element type made ITK throw from outside
  // gpix's translation (gpix info aborted), a NaN in a NIfTI affine made vnl abort the process.
  void headers_itk_cannot_survive() {
    QTemporaryDir dir;
    const auto m = in(dir, "mistyped.mha");
    put(m,
        "ObjectType = Image\nNDims = 2\nDimSize = 4 3\nElementType = MET_USHO\n"
        "ElementDataFile = LOCAL\n" +
            std::string(24, '\0'));
    expect_io_error([&] { io::read(m); }, m, "pixel type is unknown");
    // MetaIO read past its buffers (ASan) on a NUL inside the header and on a '%' data file
    // that is not a pattern (fuzz_read_mha's first finding, fuzz/corpus/mha/regression-*).
    const std::string head =
        "ObjectType = Image\nNDims = 2\nDimSize = 4 3\nElementType = MET_UCHAR\n";
    const auto nul = in(dir, "nul.mha");
    put(nul, std::string("ObjectType = Image\nNDims = 2\0\0\nDimSize = 4 3\n", 45) +
                 "ElementType = MET_UCHAR\nElementDataFile = LOCAL\n" + std::string(12, '\1'));
    expect_io_error([&] { io::read(nul); }, nul, "control byte");
    const auto pat = in(dir, "pattern.mha");
    put(pat, head + "ElementDataFile = slice%d.raw junk 52\n");
    expect_io_error([&] { io::read(pat); }, pat, "not a file pattern");
    const auto good = in(dir, "good.nii");
    io::write(good, HostArray::from(std::vector<std::uint16_t>(6 * 20 * 24, 7), Shape{6, 20, 24}));
    const std::string bytes = slurp(good);
    QCOMPARE(io::read(good).pixels.shape(), (Shape{6, 20, 24}));
    struct Patch {
      const char* file;
      std::size_t offset;
      float value;
      const char* field;
    };
    for (const Patch& p : {Patch{"nan_srow.nii", 280, NAN, "srow_x[0]"},
                           Patch{"inf_spacing.nii", 80, INFINITY, "pixdim[1]"},
                           Patch{"huge_quatern.nii", 256, 3e38f, "quatern_b/c/d[0]"}}) {
      std::string b = bytes;
      const std::int16_t code = 1;  // make both forms count, as ITK reads them then
      std::memcpy(b.data() + 252, &code, 2);
      std::memcpy(b.data() + 254, &code, 2);
      std::memcpy(b.data() + p.offset, &p.value, 4);
      const auto path = in(dir, p.file);
      put(path, b);
      expect_io_error([&] { io::read(path); }, path, p.field);
    }
    // A fuzzed header on which ITK's SVD spun for ever: a subnormal beside a large shear.
    std::string spin = bytes;
    const std::int16_t sform = 1;
    const float shear = -1e8f, subnormal = 9.18e-41f;
    std::memcpy(spin.data() + 254, &sform, 2);
    std::memcpy(spin.data() + 284, &shear, 4);      // srow_x[1]
    std::memcpy(spin.data() + 304, &subnormal, 4);  // srow_y[2]
    const auto spin_path = in(dir, "spin.nii");
    put(spin_path, spin);
    expect_io_error([&] { io::read(spin_path); }, spin_path, "srow_y[2]");
    // The same checks when sizeof_hdr is corrupt: the nifti library reads such a header by its
    // magic string, and vnl aborted on an infinite affine entry (fuzz_read_nii).
    std::string bad_size = bytes;
    const std::int32_t size_field = 0xfc5c;
    const float minus_inf = -INFINITY;
    std::memcpy(bad_size.data(), &size_field, 4);
    std::memcpy(bad_size.data() + 254, &sform, 2);
    std::memcpy(bad_size.data() + 300, &minus_inf, 4);  // srow_y[1]
    const auto bad_size_path = in(dir, "bad_sizeof_hdr.nii");
    put(bad_size_path, bad_size);
    expect_io_error([&] { io::read(bad_size_path); }, bad_size_path, "srow_y[1]");
  }

  // A compressed MetaImage whose zlib stream is damaged or short: MetaIO printed "Uncompress
  // failed" and handed ITK its buffer as it stood, an image of stale bytes without an error.
  // And HeaderSize, which MetaIO keeps in an int and reads from the start of the file.
  void compressed_streams_damaged() {
    QTemporaryDir dir;
    // A realistic stack: a ramp with noise, 16 x 96 x 128 uint16 (384 KiB). The noise is a
    // fixed hash, not the test's random seed: which error zlib meets first in a damaged
    // stream depends on the bytes, and the checks below name it.
    const Shape s{16, 96, 128};
    std::vector<std::uint16_t> v(s.elements());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint32_t hash = static_cast<std::uint32_t>(i) * 2654435761u;
      v[i] = static_cast<std::uint16_t>(1000 + (i % 128) * 3 + ((i / 128) % 96) * 5 + (hash >> 28));
    }
    const HostArray h = HostArray::from(v, s);
    // A .nii.gz with 64 bytes flipped in the middle: the nifti library read as many bytes as
    // it needed and never reached the gzip checksum.
    const auto nii = in(dir, "flipped.nii.gz");
    io::write(nii, h);
    QVERIFY(std::memcmp(io::read(nii).pixels.data(), h.data(), h.bytes()) == 0);
    std::string gz = slurp(nii);
    for (std::size_t i = gz.size() / 2; i < gz.size() / 2 + 64; ++i) gz[i] ^= 0x5a;
    put(nii, gz);
    expect_io_error([&] { io::read(nii); }, nii,
                    "is not a readable NIfTI file: its compressed data");
    // The stream whole again but one bit of its CRC-32 (gzip's last 8 bytes: CRC, size)
    // flipped: only the checksum at the end of the stream can tell.
    gz = slurp(nii);
    for (std::size_t i = gz.size() / 2; i < gz.size() / 2 + 64; ++i) gz[i] ^= 0x5a;
    gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x01);
    put(nii, gz);
    expect_io_error([&] { io::read(nii); }, nii, "incorrect data check");

    // A Deflate TIFF (gpix's own reader, libtiff) with 32 bytes flipped at one of 16 places in
    // page 5's first strip: every one must be refused. libtiff notices some itself (an invalid
    // code); others decode to garbage that fills the strip before the stream ends, and libtiff
    // stopped there: wrong pixels without an error, which only the Adler-32 at the stream's
    // end (check_tiff_streams) tells.
    const auto tif = in(dir, "flipped.tif");
    io::write(tif, h, {}, {.compress = true});
    QVERIFY(std::memcmp(io::read(tif).pixels.data(), h.data(), h.bytes()) == 0);
    std::uint64_t strip_at = 0, n = 0;
    {
      TIFF* t = TIFFOpen(tif.c_str(), "r");
      QVERIFY(t != nullptr);
      QVERIFY(TIFFSetDirectory(t, 5) == 1);
      strip_at = TIFFGetStrileOffset(t, 0);
      n = TIFFGetStrileByteCount(t, 0);
      TIFFClose(t);
    }
    const std::string tiff_bytes = slurp(tif);
    QVERIFY(n > 200 && strip_at + n <= tiff_bytes.size());
    int by_checksum = 0;
    for (std::uint64_t k = 0; k < 16; ++k) {
      std::string b = tiff_bytes;
      const std::uint64_t from = strip_at + 2 + (n - 40) * k / 16;
      for (std::uint64_t i = from; i < from + 32; ++i) b[i] ^= 0x5a;
      put(tif, b);
      try {
        io::read(tif);
        QFAIL(qPrintable(QString("flipped bytes at %1 read without an error").arg(from)));
      } catch (const IoError& e) {
        by_checksum += std::string(e.what()).find("page 5's strip 0: its compressed data is") !=
                       std::string::npos;
      }
      // Plane by plane too (run_tiled on files, the viewer's file-backed layers).
      try {
        auto slabs = io::open_slabs(tif);
        QVERIFY(slabs != nullptr);
        std::vector<std::byte> planes(2 * h.bytes() / 16);
        slabs->read(4, 6, planes.data());
        QFAIL(qPrintable(QString("flipped bytes at %1 streamed without an error").arg(from)));
      } catch (const IoError& e) {
        QCOMPARE(e.path(), tif.string());
      }
    }
    QVERIFY(by_checksum > 0);

    const auto good = in(dir, "good.mha");
    io::write(good, h, {}, {.compress = true});
    const std::string bytes = slurp(good);
    const std::size_t data_at = bytes.find("ElementDataFile = LOCAL\n") + 24;
    QVERIFY(data_at > 24 && data_at < bytes.size());
    const std::string header = bytes.substr(0, data_at), data = bytes.substr(data_at);
    QVERIFY(std::memcmp(io::read(good).pixels.data(), h.data(), h.bytes()) == 0);

    // Bytes flipped in the middle of the stream.
    std::string flipped = data;
    for (std::size_t i = data.size() / 2; i < data.size() / 2 + 64; ++i) flipped[i] ^= 0x5a;
    const auto bad = in(dir, "flipped.mha");
    put(bad, header + flipped);
    expect_io_error([&] { io::read(bad); }, bad, "its compressed data is corrupt (zlib: ");
    // The stream cut short, with CompressedDataSize saying so.
    std::string cut_header = header;
    const std::size_t at = cut_header.find("CompressedDataSize = ");
    QVERIFY(at != std::string::npos);
    const std::size_t eol = cut_header.find('\n', at);
    cut_header.replace(at, eol - at, "CompressedDataSize = " + std::to_string(data.size() / 2));
    const auto cut = in(dir, "cut.mha");
    put(cut, cut_header + data.substr(0, data.size() / 2));
    expect_io_error([&] { io::read(cut); }, cut,
                    "bytes where the header announces " + std::to_string(h.bytes()));
    // Without CompressedDataSize MetaIO inflates the file from its first byte, the header.
    std::string no_size = header;
    no_size.erase(at, eol - at + 1);
    const auto unsized = in(dir, "unsized.mha");
    put(unsized, no_size + data);
    expect_io_error([&] { io::read(unsized); }, unsized, "not how many bytes (CompressedDataSize)");
    // HeaderSize beyond an int: MetaIO's cast wrapped it and read right after the header.
    const auto huge = in(dir, "huge-header-size.mha");
    put(huge,
        "ObjectType = Image\nNDims = 2\nDimSize = 4 4\nHeaderSize = 100000000000\n"
        "ElementType = MET_UCHAR\nElementDataFile = LOCAL\n" +
            std::string(16, '\x07'));
    expect_io_error([&] { io::read(huge); }, huge, "HeaderSize = 1e+11; it must be -1");

    // HeaderSize > 0 with LOCAL data is an offset from the start of the file (MetaIO seeks
    // there from the beginning), and -1 puts the data at the end: both read the right
    // pixels whole and plane by plane.
    const HostArray small =
        HostArray::from(test::random_bits<std::uint16_t>(3 * 5 * 7), Shape{3, 5, 7});
    const std::string raw(reinterpret_cast<const char*>(small.data()), small.bytes());
    const std::string head =
        "ObjectType = Image\nNDims = 3\nDimSize = 7 5 3\n"
        "BinaryDataByteOrderMSB = False\nElementType = MET_USHORT\n";
    const std::string tail = "ElementDataFile = LOCAL\n";
    for (const std::string& size : {std::string("-1"), std::string("300")}) {
      std::string text = head + "HeaderSize = " + size + "\n" + tail;
      const std::size_t offset = size == "-1" ? text.size() + 37 : 300;
      text += std::string(offset - text.size(), '\xee') + raw;
      const auto p = in(dir, "offset" + size + ".mha");
      put(p, text);
      const io::Image whole = io::read(p);
      QCOMPARE(whole.pixels.shape(), small.shape());
      QVERIFY2(std::memcmp(whole.pixels.data(), small.data(), small.bytes()) == 0, size.c_str());
      auto slabs = io::open_slabs(p);
      QVERIFY(slabs != nullptr);
      std::vector<std::byte> planes(small.bytes());
      slabs->read(0, 3, planes.data());
      QVERIFY2(std::memcmp(planes.data(), small.data(), small.bytes()) == 0, size.c_str());
    }
  }

  // Inputs the fuzz targets found (fuzz/corpus/*/regression-*), kept as files.
  void fuzz_findings() {
    const fs::path corpus = GPIX_FUZZ_CORPUS;
    // A damaged progressive JPEG: ITK's reader died with SIGSEGV in jpeg_read_scanlines.
    const auto jpeg = corpus / "jpeg" / "regression-progressive-segv.jpg";
    expect_io_error([&] { io::read(jpeg, {.channels = io::Channels::split}); }, jpeg,
                    "cannot read the JPEG pixels");
    // A PNG with a palette and no IDAT chunk: libpng's png_error became abort() in ITK's reader
    // (CI's bounded fuzz run found it).
    const auto no_idat = corpus / "png" / "regression-no-idat.png";
    expect_io_error([&] { io::read(no_idat); }, no_idat, "no IDAT chunk");
    // 55 bytes whose first chunk is an IDAT (no IHDR): every chunk whole, so the chunk walk
    // passed it, and libpng's "Missing IHDR before IDAT" became abort() in ITK's header read
    // (CI's bounded fuzz run); libpng now reads the header first, under a setjmp.
    const auto no_ihdr = corpus / "png" / "regression-idat-before-ihdr.png";
    expect_io_error([&] { io::read(no_ihdr); }, no_ihdr, "Missing IHDR before IDAT");
    // 227 bytes of progressive JPEG declaring 62727 x 18683 pixels: libjpeg allocated and
    // cleared 2.3 GB of coefficients (a fuzzer timeout); refused from the header.
    const auto frame = corpus / "jpeg" / "regression-huge-progressive-frame.jpg";
    expect_io_error([&] { io::read(frame); }, frame, "declares 62727 x 18683 pixels");
    // The same frame arithmetic-coded (SOF10; one bit flipped by CI's bounded fuzz run of stop
    // 42): arithmetic coding has no size floor to refuse it by, and libjpeg took 2.3 GB of
    // coefficients beside the 1.2 GB image before it met a bogus Huffman table, past the
    // fuzzer's 2 GB. The fuzz target reads with ReadOptions::max_bytes = 64 MB, which refuses
    // the claim from the header.
    const auto arith = corpus / "jpeg" / "regression-arithmetic-huge-progressive-frame.jpg";
    expect_io_error([&] { io::read(arith, {.max_bytes = std::uint64_t{64} << 20}); }, arith,
                    "claims 1.17 GB (1171928541 bytes) of pixels, more than the 67.1 MB "
                    "(67108864 bytes) this read allows");
    // 222 bytes whose header claims a 1073741831 x 5 page: refused before 5 GB are allocated.
    const auto tiff = corpus / "tiff" / "regression-claims-5gb.tif";
    expect_io_error([&] { io::read(tiff); }, tiff, "claims 5.37 GB");
    // The viewer opens large files plane by plane (open_slabs), which took such a file for an
    // empty 20 GB layer (the GUI walk-through); it makes the same checks now.
    expect_io_error([&] { (void)io::open_slabs(tiff); }, tiff, "claims 5.37 GB");
    // A colour TIFF whose DateTime holds 11 characters: ITK's ReadTIFFTags copied 20 bytes.
    const auto date = corpus / "tiff" / "regression-itk-short-datetime.tif";
    expect_io_error([&] { io::read(date, {.channels = io::Channels::split}); }, date,
                    "DateTime tag (306) holds 11 characters where TIFF fixes 19");
    // 868 bytes with a tag claiming 1.6 GB of ASCII beyond the end: ITK's bundled libtiff
    // allocated it (5-12 s under ASan, a timeout in the long fuzz run) before failing. Its page
    // is grayscale of 23552 samples a pixel, which gpix's own reader takes since it reads
    // grayscale samples as components: refused there (the system's libtiff does not allocate
    // the tag); the tag check in front of ITK stays for the colour files below.
    const auto tag = corpus / "tiff" / "regression-itk-tag-claims-1.6gb.tif";
    expect_io_error([&] { io::read(tag, {.channels = io::Channels::split}); }, tag,
                    "directory 1 cannot be read (corrupt file?)");
    // A colour TIFF with an unknown ASCII tag whose text has no NUL: ITK's ReadTIFFTags ran
    // strlen past libtiff's buffer (ASan, the long fuzz run of 2026-11-24).
    const auto nul = corpus / "tiff" / "regression-itk-ascii-without-nul.tif";
    expect_io_error([&] { io::read(nul, {.channels = io::Channels::split}); }, nul,
                    "bytes of ASCII text without the NUL byte that ends TIFF text");
    // 183 bytes whose directory runs into the end of the file (no room for the next-directory
    // offset): the entry scan skipped it, and ITK's reader ran strlen past the 1-byte text of
    // its tag 769 (ASan, CI's bounded fuzz run); its ImageDescription lies beyond the end.
    const auto cut = corpus / "tiff" / "regression-itk-truncated-directory.tif";
    expect_io_error([&] { io::read(cut, {.channels = io::Channels::split}); }, cut,
                    "page 0's tag 270 claims 18 values");
    // 266 bytes whose page claims 5.99 GB in 1-row strips (about 2^32 of them): the capacity
    // check called TIFFGetStrileOffset for each (over 10 s under ASan, a fuzz timeout); now
    // it stops where the file has no room for more offsets.
    const auto strips = corpus / "tiff" / "regression-billions-of-strips.tif";
    expect_io_error([&] { io::read(strips); }, strips, "claims 5.99 GB");
    // NDims = a 74-digit number: MetaIO read that many spacing and transform values (minutes,
    // a timeout of CI's bounded fuzz run).
    const auto dims = corpus / "mha" / "regression-metaio-huge-ndims.mha";
    expect_io_error([&] { io::read(dims); }, dims, "a MetaImage has 1 to 10 dimensions");
    // The same NDims followed by a second, valid NDims = 3 further down: the check read only
    // the last one, MetaIO acts on each (a timeout of CI's bounded fuzz run, seed 1).
    const auto second = corpus / "mha" / "regression-metaio-second-ndims.mha";
    expect_io_error([&] { io::read(second); }, second, "NDims = 21111111111111111111");
    // 971 bytes whose first directory's next-directory offset points at itself: ITK's bundled
    // libtiff counted pages round the loop for ever from CanReadFile (the long fuzz run of
    // the eighth session, a timeout); the system's libtiff stops at a loop.
    const auto loop = corpus / "tiff" / "regression-itk-directory-loop.tif";
    expect_io_error([&] { io::read(loop, {.channels = io::Channels::split}); }, loop,
                    "its chain of pages loops: page 0's next-directory offset 8 leads back to "
                    "page 0");
    // 258 bytes claiming a 268435463 x 5 page of uint32 in codec 15, which libtiff lacks: the
    // capacity check had no bound for an unknown codec, and the reader allocated 5.37 GB before
    // libtiff failed (an out-of-memory stop of the long fuzz run; in a release build only
    // address space, yet refused before now).
    const auto codec = corpus / "tiff" / "regression-unknown-codec-5gb.tif";
    expect_io_error(
        [&] { io::read(codec); }, codec,
        "page 0 is compressed with codec 15, which this build of libtiff cannot decode");
    // A MetaImage header whose first field name is 297 bytes: MetaIO's strcpy into its
    // 255-byte name (a fortified abort).
    const auto name = corpus / "mha" / "regression-metaio-long-field-name.mha";
    expect_io_error([&] { io::read(name); }, name, "field name of 297 characters at offset 0");
    // 398 bytes with a line that is not "Name = value" ("DimS e z.i2 2 34") before its
    // ElementDataFile: MetaIO read the next line into that name, went on past the
    // ElementDataFile gpix had stopped checking at, and met NDims = 2111...1 (gpix info spun for
    // minutes; the exploratory fuzz run of 2026-11-28, a timeout).
    const auto line = corpus / "mha" / "regression-metaio-line-without-equals.mha";
    expect_io_error([&] { io::read(line); }, line,
                    "its header line at offset 29 ('DimS e z.i2 2 34') is not 'Name = value'");
    // A line "elementdatafile = LOCAL" before NDims = 2111...1: gpix compared field names
    // without case and stopped checking at it, MetaIO compares them as written, skipped it and
    // read on into the huge NDims (a timeout of CI's bounded fuzz run, seed 1; this file is
    // the finding cut down by hand).
    const auto lc = corpus / "mha" / "regression-metaio-lowercase-elementdatafile.mha";
    expect_io_error([&] { io::read(lc); }, lc, "NDims = 21111111111111111111");
    // Two ElementDataFile lines, the first empty: MetaIO took the empty name (and opened the
    // folder), and gpix allocated the 10 GB the header claims first (an out-of-memory stop of
    // the exploratory fuzz run of 2026-11-29).
    const auto empty = corpus / "mha" / "regression-metaio-empty-data-file-10gb.mha";
    expect_io_error([&] { io::read(empty); }, empty, "its ElementDataFile is empty");
    // DimSize = 7777...7 (31 digits) with a list of slice files: MetaIO's int made it 2^31,
    // while the list check, working from the header's number, left an absurd count to MetaIO,
    // and gpix allocated the 2 GB ITK reported (the same fuzz run).
    const auto dimsize = corpus / "mha" / "regression-metaio-huge-dimsize-list-2gb.mha";
    expect_io_error([&] { io::read(dimsize); }, dimsize,
                    "each size must be a whole number from 1 to 2147483647");
    // A header claiming 2^31 x 5 pixels whose ElementDataFile ("LOC~~~ = ??") holds spaces: a
    // name with a space was left to MetaIO unchecked, so gpix allocated the 10 GB image first
    // (an out-of-memory stop of the same fuzz run); MetaIO opens it as one file name. Its
    // DimSize (7777...7) is refused first now; metaimage_file_patterns checks a spaced name.
    const auto spaced = corpus / "mha" / "regression-metaio-data-file-with-spaces-10gb.mha";
    expect_io_error([&] { io::read(spaced); }, spaced,
                    "each size must be a whole number from 1 to 2147483647");
    // A NIfTI-1 header with "n+2" as its magic, a corrupt sizeof_hdr and srow_y[1] = -inf:
    // the nifti library read it, and vnl aborted on the infinite affine.
    const auto n2 = corpus / "nii" / "regression-nifti1-with-n+2-magic.nii";
    expect_io_error([&] { io::read(n2); }, n2, "srow_y[1] is -inf");
  }

  // A sidecar claiming 100000 x 100000 x 1000 float64 (80 TB) for a 10-byte file: refused from
  // the file's size before anything is allocated (fuzz_raw asked for 16 GB this way).
  void raw_claims_more_than_the_file() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "big.raw";
    {
      std::ofstream(p, std::ios::binary) << "0123456789";
      std::ofstream(p.string() + ".json")
          << R"({"shape": [1000, 100000, 100000], "dtype": "float64"})";
    }
    expect_io_error([&] { (void)io::read_raw(p); }, p,
                    "has 10 bytes but a 1000 x 100000 x 100000 float64 image needs 80000000000000");
  }

  // A BigTIFF directory claiming 2^63 + 5 entries: their size wrapped to 116 bytes in gpix's own
  // entry check, which then read past its buffer (UBSan in fuzz_read_png, whose mutations
  // reached a TIFF header). Now the count is weighed against the file first.
  void tiff_entry_count_wraps() {
    QTemporaryDir dir;
    const fs::path p = fs::path(dir.path().toStdString()) / "wrap.tif";
    std::vector<unsigned char> b = {'I', 'I', 43, 0, 8, 0, 0, 0, 16, 0, 0, 0,
                                    0,   0,   0,  0, 5, 0, 0, 0, 0,  0, 0, 0x80};
    b.resize(200, 0);
    {
      std::ofstream out(p, std::ios::binary);
      out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
    expect_io_error([&] { io::read(p, {.channels = io::Channels::split}); }, p, "");
  }

  // ASCII tags of fixed length (DateTime) shorter than the specification's: refused before
  // ITK's colour reader sees them (it read past libtiff's value); whole ones and grayscale
  // files (gpix's own reader, which copies nothing of fixed length) still open.
  void tiff_short_fixed_tags() {
    QTemporaryDir dir;
    const std::uint32_t w = 7, h = 5;
    std::vector<std::uint8_t> rgb(w * h * 3);
    for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>(i * 7);
    auto write = [&](const fs::path& p, std::uint16_t spp, const char* date) {
      TIFF* t = TIFFOpen(p.c_str(), "w");
      QVERIFY(t);
      TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
      TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
      TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
      TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
      TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
      TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, h);
      TIFFSetField(t, TIFFTAG_DATETIME, date);
      QCOMPARE(TIFFWriteEncodedStrip(t, 0, rgb.data(), static_cast<tmsize_t>(w * h * spp)),
               static_cast<tmsize_t>(w * h * spp));
      TIFFClose(t);
    };
    const auto short_rgb = in(dir, "short.tif");
    write(short_rgb, 3, "2026:11:24");
    expect_io_error([&] { io::read(short_rgb, {.channels = io::Channels::split}); }, short_rgb,
                    "DateTime tag (306) holds 10 characters where TIFF fixes 19");
    const auto whole = in(dir, "whole.tif");
    write(whole, 3, "2026:11:24 10:00:00");
    const io::Image img = io::read(whole, {.channels = io::Channels::split});
    QCOMPARE(img.pixels.shape(), (Shape{3, h, w}));
    const auto* got = reinterpret_cast<const std::uint8_t*>(img.pixels.data());
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t i = 0; i < w * h; ++i) QCOMPARE(got[c * w * h + i], rgb[i * 3 + c]);
    const auto gray = in(dir, "gray.tif");
    write(gray, 1, "2026:11:24");
    const io::Image g = io::read(gray);
    QCOMPARE(g.pixels.shape(), (Shape{h, w}));
    QVERIFY(std::memcmp(g.pixels.data(), rgb.data(), w * h) == 0);
  }

  // JPEG through gpix's libjpeg reader: the same pixels as ITK's reader on sound files (both
  // decode with the same libjpeg), and an IoError, never a grey-filled image, where scan data
  // is missing or corrupt (ITK returned those with a printed warning).
  void jpeg_damage() {
    QTemporaryDir dir;
    const Shape s{61, 83};
    std::vector<std::uint8_t> v(s.elements());
    for (std::size_t i = 0; i < v.size(); ++i)  // smooth, so that the scans carry detail
      v[i] = static_cast<std::uint8_t>(128 + 100 * std::sin(0.1 * double(i % 83)) *
                                                 std::cos(0.13 * double(i / 83)));
    const auto good = in(dir, "good.jpg");
    io::write(good, HostArray::from(v, s));  // ITK writes progressive JPEG
    const io::Image img = io::read(good);
    using Gray = itk::Image<unsigned char, 2>;
    auto reader = itk::ImageFileReader<Gray>::New();
    reader->SetImageIO(itk::JPEGImageIO::New());
    reader->SetFileName(good.string());
    reader->Update();
    QCOMPARE(img.pixels.shape(), s);
    QVERIFY(std::memcmp(img.pixels.data(), reader->GetOutput()->GetBufferPointer(),
                        img.pixels.bytes()) == 0);
    // Scan data cut in the middle and the end-of-image marker put after it: libjpeg warns
    // "premature end of data segment" and invents the rest.
    const std::string bytes = slurp(good);
    const std::size_t last_scan = bytes.rfind("\xff\xda");
    QVERIFY(last_scan != std::string::npos);
    const auto cut = in(dir, "cut_scan.jpg");
    put(cut, bytes.substr(0, (last_scan + bytes.size()) / 2) + "\xff\xd9");
    expect_io_error([&] { io::read(cut); }, cut, "Corrupt JPEG data");
    // A JPEG under another extension is named as one.
    const auto named_png = in(dir, "photo.png");
    put(named_png, bytes);
    expect_io_error([&] { io::read(named_png); }, named_png, "content is JPEG");
    // The frame header's size raised to 60000 x 50000: more 8x8 blocks than the file's bits.
    const std::size_t sof = bytes.find("\xff\xc2");
    QVERIFY(sof != std::string::npos);
    std::string huge = bytes;
    const unsigned char dims[] = {0xc3, 0x50, 0xea, 0x60};  // height 50000, width 60000
    std::memcpy(huge.data() + sof + 5, dims, 4);
    const auto huge_path = in(dir, "huge_frame.jpg");
    put(huge_path, huge);
    expect_io_error([&] { io::read(huge_path); }, huge_path, "declares 60000 x 50000 pixels");
  }

  // The floor of that check is far from sound files: a constant 4096 x 4096 image, the most a
  // Huffman-coded JPEG compresses, reads back.
  void jpeg_flat_image_reads() {
    QTemporaryDir dir;
    const Shape s{4096, 4096};
    const std::vector<std::uint8_t> v(s.elements(), 77);
    const auto flat = in(dir, "flat.jpg");
    io::write(flat, HostArray::from(v, s));
    const io::Image img = io::read(flat);
    QCOMPARE(img.pixels.shape(), s);
    const auto px = img.pixels.as<std::uint8_t>();
    QVERIFY(std::all_of(px.begin(), px.end(), [](std::uint8_t p) { return p == 77; }));
  }

  // A TIFF's strips must be able to hold what its header claims: uncompressed data byte for
  // byte, Deflate at most 1032:1. Such files are refused before the pixels are allocated.
  void tiff_claims_more_than_it_holds() {
    QTemporaryDir dir;
    const auto lie = in(dir, "lie.tif");  // 200 MB claimed, 100 bytes held
    put(lie, tiny_tiff(20000, 10000, 1, std::string(100, '\x7f'), 100));
    expect_io_error([&] { io::read(lie); }, lie,
                    "claims 200 MB (200000000 bytes) of pixels, but its strips hold 214 bytes");
    const auto counts = in(dir, "counts.tif");  // the byte count runs past the end of the file
    put(counts, tiny_tiff(200, 100, 1, std::string(100, '\x7f'), 20000));
    expect_io_error([&] { io::read(counts); }, counts,
                    "hold 214 bytes of uncompressed data in this 222-byte file");
    const auto deflate = in(dir, "deflate.tif");  // 2 MB claimed from 1000 bytes: over 1032:1
    put(deflate, tiny_tiff(2000, 1000, 8, std::string(1000, '\x01'), 1000));
    expect_io_error([&] { io::read(deflate); }, deflate, "(1032:1)");
  }

  // Real files that compress well still open: zeros, Deflate (about 1009:1 per 1 MiB strip as
  // gpix writes them), a 4096 x 4096 plane and a 64 x 512 x 512 float32 stack.
  void compressible_tiffs_open() {
    QTemporaryDir dir;
    for (const Shape& s : {Shape{4096, 4096}, Shape{64, 512, 512}}) {
      const bool stack = s.ndim() == 3;
      const HostArray zeros = stack
                                  ? HostArray::from(std::vector<float>(s.elements(), 0.0f), s)
                                  : HostArray::from(std::vector<std::uint8_t>(s.elements(), 0), s);
      const auto p = in(dir, stack ? "zeros_stack.tif" : "zeros.tif");
      io::write(p, zeros, {}, {.compress = true});
      QVERIFY2(fs::file_size(p) * 500 < zeros.bytes(), "expected a compression ratio over 500");
      const io::Image back = io::read(p);
      QCOMPARE(back.pixels.shape(), s);
      QVERIFY(std::memcmp(back.pixels.data(), zeros.data(), zeros.bytes()) == 0);
    }
  }

  void unwritable() {
    QTemporaryDir dir;
    const HostArray h = HostArray::from(test::random_values<std::uint16_t>(35), Shape{5, 7});
    put(in(dir, "file"), "x");
    expect_io_error([&] { io::write(in(dir, "file") / "out.tif", h); }, in(dir, "file") / "out.tif",
                    "not a folder");
    expect_io_error([&] { io::write(in(dir, "no/such/out.tif"), h); }, in(dir, "no/such/out.tif"),
                    "does not exist");
    QVERIFY(QDir(dir.path()).mkdir("taken.nrrd"));
    expect_io_error([&] { io::write(in(dir, "taken.nrrd"), h); }, in(dir, "taken.nrrd"), "folder");
    expect_io_error(
        [&] {
          io::write(in(dir, "out.png"),
                    HostArray::from(test::random_values<float>(35), Shape{5, 7}));
        },
        in(dir, "out.png"), "uint8, uint16");
    expect_io_error(
        [&] {
          io::write(in(dir, "out.png"),
                    HostArray::from(test::random_values<std::uint8_t>(70), Shape{2, 5, 7}));
        },
        in(dir, "out.png"), "2D");
    HostArray nan = HostArray::from(
        std::vector<float>{1.0f, std::numeric_limits<float>::quiet_NaN()}, Shape{2});
    expect_io_error([&] { io::write(in(dir, "nan.nii"), nan); }, in(dir, "nan.nii"), "NaN");
    // A failed write replaces nothing and leaves nothing behind.
    io::write(in(dir, "keep.tif"), h);
    const std::string before = slurp(in(dir, "keep.tif"));
    expect_io_error(
        [&] {
          io::write(in(dir, "keep.tif"),
                    HostArray::from(test::random_values<double>(35), Shape{35}));
        },
        in(dir, "keep.tif"), "1D");
    QCOMPARE(slurp(in(dir, "keep.tif")), before);
    QCOMPARE(entries(dir), (QStringList{"file", "keep.tif", "taken.nrrd"}));
  }

  // A full disk while writing each format, as a file-size limit makes it (every write past
  // 64 kB fails with EFBIG, as with ENOSPC): an IoError, the file that was there untouched, no
  // temporary file left. ITK's MetaImage and NIfTI writers only printed the failure and left a
  // short file (`gpix run` exited 0 with a truncated .mha or .nii).
  void full_disk_leaves_nothing() {
    QTemporaryDir dir;
    const HostArray small = HostArray::from(test::random_values<std::uint16_t>(35), Shape{5, 7});
    const HostArray stack =
        HostArray::from(test::random_values<std::uint16_t>(8 * 96 * 96), Shape{8, 96, 96});
    const HostArray plane =
        HostArray::from(test::random_values<std::uint8_t>(384 * 384), Shape{384, 384});
    const char* names[] = {"s.tif", "s.nrrd", "n.nhdr",   "s.mha",
                           "m.mhd", "s.nii",  "s.nii.gz", "s.png"};
    std::map<std::string, std::string> before;
    for (const char* n : names) io::write(in(dir, n), small);
    io::write_raw(in(dir, "w.raw"), small);
    for (const QString& e : entries(dir)) before[e.toStdString()] = slurp(in(dir, e.toStdString()));
    {
      const test::FileSizeLimit limit(64 * 1024);
      for (const char* n : names) {
        const bool png = std::string(n).ends_with(".png");
        expect_io_error([&] { io::write(in(dir, n), png ? plane : stack); }, in(dir, n),
                        "cannot be written");
      }
      expect_io_error([&] { io::write_raw(in(dir, "w.raw"), stack); }, in(dir, "w.raw"),
                      "cannot be written");
    }
    // The same through the plane-by-plane writers of `gpix run --tiled` (create_slabs).
    {
      const test::FileSizeLimit limit(64 * 1024);
      for (const char* n : {"s.tif", "s.nrrd", "s.mha", "m.mhd", "s.raw"}) {
        expect_io_error(
            [&] {
              const auto sink = io::create_slabs(in(dir, n));
              sink->start(stack.shape(), stack.dtype());
              const std::size_t plane_bytes = stack.bytes() / stack.shape()[0];
              for (std::size_t z = 0; z < stack.shape()[0]; ++z) {
                sink->write(z, z + 1, stack.data() + z * plane_bytes);
              }
              sink->finish();
            },
            in(dir, n), "cannot be written");
      }
    }
    QStringList now = entries(dir);
    QCOMPARE(static_cast<std::size_t>(now.size()), before.size());
    for (const auto& [name, bytes] : before) {
      QVERIFY2(slurp(in(dir, name)) == bytes, name.c_str());
    }
  }

  // A .mhd or .nhdr header puts its pixels in a data file named after it (X.raw): that file
  // may replace only the data of an earlier header of the same name. `gpix run add_scalar
  // cells.raw cells.mhd` replaced its own input with the result. Whole (both codecs) and plane
  // by plane; the refusal leaves every file as it was and no temporary folder.
  void data_files_replace_only_their_own() {
    QTemporaryDir dir;
    const HostArray input =
        HostArray::from(test::random_values<std::uint16_t>(4 * 6 * 7), Shape{4, 6, 7});
    const HostArray other =
        HostArray::from(test::random_values<std::uint16_t>(4 * 6 * 7), Shape{4, 6, 7});
    io::write_raw(in(dir, "cells.raw"), input);   // a raw input with its sidecar
    io::write_raw(in(dir, "cells.zraw"), input);  // what a compressed .mhd would take
    io::write(in(dir, "nrrd.nhdr"), other);       // nrrd.raw: the data of nrrd.nhdr
    const auto streamed = [&](const std::string& name) {
      const auto sink = io::create_slabs(in(dir, name));
      QVERIFY(sink);
      sink->start(other.shape(), other.dtype());
      sink->write(0, 4, other.data());
      sink->finish();
    };
    std::map<std::string, std::string> before;
    for (const QString& e : entries(dir)) before[e.toStdString()] = slurp(in(dir, e.toStdString()));
    const char* why = "which exists and is not the data file of an earlier";
    expect_io_error([&] { io::write(in(dir, "cells.mhd"), other); }, in(dir, "cells.mhd"), why);
    expect_io_error([&] { io::write(in(dir, "cells.nhdr"), other); }, in(dir, "cells.nhdr"), why);
    expect_io_error([&] { io::write(in(dir, "cells.mhd"), other, {}, {.compress = true}); },
                    in(dir, "cells.mhd"), why);
    expect_io_error([&] { streamed("cells.mhd"); }, in(dir, "cells.mhd"), why);
    expect_io_error([&] { streamed("cells.nhdr"); }, in(dir, "cells.nhdr"), why);
    // nrrd.raw is nrrd.nhdr's data, not a .mhd's.
    expect_io_error([&] { io::write(in(dir, "nrrd.mhd"), other); }, in(dir, "nrrd.mhd"), why);
    QCOMPARE(static_cast<std::size_t>(entries(dir).size()), before.size());
    for (const auto& [name, bytes] : before) QVERIFY2(slurp(in(dir, name)) == bytes, name.c_str());
    // A header written again replaces its own data, whole and plane by plane.
    io::write(in(dir, "nrrd.nhdr"), input);
    QCOMPARE(slurp(in(dir, "nrrd.raw")).size(), input.bytes());
    QVERIFY(io::read(in(dir, "nrrd.nhdr")).pixels.as<std::uint16_t>()[5] ==
            input.as<std::uint16_t>()[5]);
    streamed("nrrd.nhdr");
    const HostArray back = io::read(in(dir, "nrrd.nhdr")).pixels;
    QVERIFY(std::memcmp(back.data(), other.data(), other.bytes()) == 0);
    io::write(in(dir, "fresh.mhd"), input);
    io::write(in(dir, "fresh.mhd"), other);
    streamed("fresh.mhd");
    QVERIFY(std::memcmp(io::read(in(dir, "fresh.mhd")).pixels.data(), other.data(),
                        other.bytes()) == 0);
    QCOMPARE(entries(dir).filter(QStringLiteral(".gpix-write")).size(), qsizetype(0));
  }

  // A place where no file can be made, even by root (procfs): the error names the target and
  // the system's reason; nothing is left.
  void unwritable_place() {
    const HostArray h = HostArray::from(test::random_values<std::uint16_t>(35), Shape{5, 7});
    expect_io_error([&] { io::write("/proc/gpix-test-out.tif", h); }, "/proc/gpix-test-out.tif",
                    "cannot be written");
    QVERIFY(!fs::exists("/proc/gpix-test-out.tif"));
  }

  // ITK itself fails mid-write (a header path the TIFF writer cannot take): no partial output.
  void failed_itk_write_leaves_nothing() {
    QTemporaryDir dir;
    const HostArray h = HostArray::from(test::random_values<std::uint8_t>(35), Shape{5, 7});
    io::Metadata bad;
    bad.direction = {0, 0, 0, 0};  // singular: ITK refuses it
    try {
      io::write(in(dir, "dir.nrrd"), h, bad);
    } catch (const IoError&) {
    }
    for (const QString& e : entries(dir)) QVERIFY2(!e.startsWith(".gpix-write"), qPrintable(e));
  }

  // Bad files on eight threads at once: each read fails on its own, with its own message.
  // teem (ITK's NRRD reader) keeps its error messages in a global (biff) and the nifti
  // library prints through globals; the failing reads of a viewer opening several files
  // must not corrupt each other.
  void concurrent_failures() {
    QTemporaryDir dir;
    const std::vector<std::pair<fs::path, std::string>> bad = {
        {in(dir, "short.nrrd"),
         "NRRD0004\ntype: uint16\ndimension: 3\nsizes: 64 64 64\nencoding: raw\n\n" +
             std::string(100, 'x')},
        {in(dir, "badgz.nrrd"),
         "NRRD0004\ntype: uint8\ndimension: 2\nsizes: 32 32\nencoding: gzip\n\n" +
             std::string(300, '\x1f')},
        {in(dir, "field.nrrd"), "NRRD0004\ntype: uint8\ndimension: 2\nsizes: 32\n\n"},
        {in(dir, "short.mha"),
         "ObjectType = Image\nNDims = 2\nDimSize = 64 64\nElementType = MET_UCHAR\n"
         "ElementDataFile = LOCAL\n" +
             std::string(10, 'x')},
        {in(dir, "short.nii"), std::string(348, '\0')},
        {in(dir, "short.tif"), tiny_tiff(64, 64, 1, std::string(10, 'x'), 4096)},
    };
    for (const auto& [path, bytes] : bad) put(path, bytes);
    std::vector<std::string> alone;
    for (const auto& [path, bytes] : bad) {
      try {
        io::read(path);
        alone.emplace_back();
      } catch (const IoError& e) {
        alone.emplace_back(e.what());
      }
      QVERIFY2(!alone.back().empty(), path.c_str());
    }
    const std::vector<std::string> failures = test::on_threads(8, 30, [&](int t, int k) {
      const std::size_t i = static_cast<std::size_t>(t + k) % bad.size();
      std::string got;
      try {
        io::read(bad[i].first);
      } catch (const IoError& e) {
        got = e.what();
      } catch (const std::exception& e) {
        got = std::string("not an IoError: ") + e.what();
      }
      if (got == alone[i]) return std::string();
      return bad[i].first.filename().string() + " on thread " + std::to_string(t) + ": '" + got +
             "' instead of '" + alone[i] + "'";
    });
    for (const std::string& f : failures) qWarning("%s", f.c_str());
    QVERIFY(failures.empty());
  }

  void non_ascii_paths() {
    QTemporaryDir dir;
    const fs::path folder = in(dir, "Übersicht 顕微鏡");
    fs::create_directory(folder);
    const HostArray h =
        HostArray::from(test::random_bits<std::uint16_t>(3 * 5 * 7), Shape{3, 5, 7});
    for (const char* name : {"Zellkerne_α.tif", "日本.nrrd", "ñandú.mha", "café.nii.gz", "ß.png"}) {
      const fs::path p = folder / fs::u8path(name);
      const HostArray img = std::string(name).ends_with(".png")
                                ? HostArray::from(test::random_bits<std::uint16_t>(35), Shape{5, 7})
                                : h;
      io::write(p, img);
      QVERIFY(fs::exists(p));
      const io::Image back = io::read(p);
      QVERIFY(std::memcmp(back.pixels.data(), img.data(), img.bytes()) == 0);
    }
    expect_io_error([&] { io::read(folder / fs::u8path("fehlt_ü.tif")); },
                    folder / fs::u8path("fehlt_ü.tif"), "no such");
  }
};

QTEST_GUILESS_MAIN(TestIoBad)
#include "test_io_bad.moc"
