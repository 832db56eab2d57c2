#include "validate.h"

#include <png.h>
#include <zlib.h>

#include <csetjmp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "tiff.h"

namespace gpix::io::detail {
namespace fs = std::filesystem;

namespace {

std::vector<unsigned char> slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// The first n bytes (fewer for a shorter file).
std::vector<unsigned char> head(const fs::path& p, std::size_t n) {
  std::vector<unsigned char> b(n);
  std::ifstream f(p, std::ios::binary);
  f.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(n));
  b.resize(static_cast<std::size_t>(f.gcount()));
  return b;
}

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

std::string check_png_chunks(const std::vector<unsigned char>& b) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() < 8 || std::memcmp(b.data(), sig, 8) != 0)
    return "it does not start with the PNG signature";
  std::size_t pos = 8;
  bool seen_idat = false;
  while (true) {
    if (pos + 12 > b.size()) return "it is truncated (the file ends inside a chunk, before IEND)";
    const std::uint32_t len = be32(&b[pos]);
    if (len > b.size() - pos - 12) return "it is truncated (a chunk runs past the end of the file)";
    const unsigned char* type = &b[pos + 4];
    const uLong crc = crc32(0L, type, static_cast<uInt>(len + 4));
    if (crc != be32(&b[pos + 8 + len])) {
      return "it is corrupt (the CRC of the " +
             std::string(reinterpret_cast<const char*>(type), 4) + " chunk is wrong)";
    }
    if (std::memcmp(type, "IEND", 4) == 0) {
      // libpng reports a missing IDAT through png_error, which ITK's reader turns into abort().
      return seen_idat ? std::string() : "it is corrupt (it has no IDAT chunk: no image data)";
    }
    seen_idat = seen_idat || std::memcmp(type, "IDAT", 4) == 0;
    pos += 12 + len;
  }
}

// libpng reports every damage it finds through png_error, which longjmps to the caller's
// setjmp, or calls abort() when there is none; ITK 5.2's PNGImageIO sets none while it reads
// the header, so a file whose chunks are whole but whose content libpng refuses (an IDAT
// before the IHDR, a bad IHDR, a palette too long) took the process down. libpng itself reads
// the header first here, under a setjmp, with the same defaults ITK's reader uses. Nothing
// with a destructor lives in the frames a longjmp crosses: the state is a plain struct, the
// functions that call setjmp hold no C++ objects.
struct PngProbe {
  const unsigned char* data = nullptr;
  std::size_t size = 0;
  std::size_t pos = 0;
  char message[256] = {};
};

void png_probe_read(png_structp png, png_bytep out, png_size_t n) {
  auto* p = static_cast<PngProbe*>(png_get_io_ptr(png));
  if (n > p->size - p->pos) png_error(png, "the file ends inside a chunk");
  std::memcpy(out, p->data + p->pos, n);
  p->pos += n;
}

[[noreturn]] void png_probe_error(png_structp png, png_const_charp message) {
  auto* p = static_cast<PngProbe*>(png_get_error_ptr(png));
  std::snprintf(p->message, sizeof p->message, "%s", message);
  png_longjmp(png, 1);
}

void png_probe_warning(png_structp /*png*/, png_const_charp /*message*/) {}

// True when libpng reads the header (every chunk before the first IDAT) without an error.
bool png_probe_header(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;  // NOLINT(cert-err52-cpp): libpng's error path
  png_read_info(png, info);
  return true;
}

// Empty when libpng reads the header of the PNG in b, otherwise libpng's complaint.
std::string probe_png_header(const std::vector<unsigned char>& b) {
  PngProbe probe;
  probe.data = b.data();
  probe.size = b.size();
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &probe, png_probe_error, png_probe_warning);
  if (png == nullptr) return "libpng could not start (out of memory)";
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "libpng could not start (out of memory)";
  }
  png_set_read_fn(png, &probe, png_probe_read);
  const bool ok = png_probe_header(png, info);
  png_destroy_read_struct(&png, &info, nullptr);
  return ok ? std::string() : "it is corrupt (libpng: " + std::string(probe.message) + ")";
}

std::string check_png(const fs::path& path) {
  const auto b = slurp(path);
  std::string broken = check_png_chunks(b);
  if (broken.empty()) broken = probe_png_header(b);
  return broken;
}

std::string check_jpeg(const fs::path& path) {
  const auto b = slurp(path);
  if (b.size() < 4 || b[0] != 0xff || b[1] != 0xd8)
    return "it does not start with the JPEG start-of-image marker";
  std::size_t pos = 2;
  while (true) {
    while (pos < b.size() && b[pos] == 0xff && pos + 1 < b.size() && b[pos + 1] == 0xff)
      ++pos;  // fill bytes
    if (pos + 4 > b.size()) return "it is truncated (the file ends among the headers)";
    if (b[pos] != 0xff) return "it is corrupt (a marker was expected among the headers)";
    const unsigned char m = b[pos + 1];
    const std::size_t len = (std::size_t{b[pos + 2]} << 8) | b[pos + 3];
    if (len < 2 || pos + 2 + len > b.size())
      return "it is truncated (a header segment runs past the end)";
    // A start-of-frame with Huffman coding (SOF0-3, 5-7): its size against the file's. Every
    // 8x8 block of the full-resolution component costs at least one bit of entropy-coded
    // data (a Huffman code is at least one bit long; a progressive file's first DC scan
    // codes every block, a baseline one a DC code and an end-of-block for each). A file
    // declaring far more blocks than its bytes could hold is damaged, and libjpeg would
    // allocate and clear the whole declared image first (a 227-byte progressive file
    // declaring 62727 x 18683 pixels took 2.3 GB and minutes under the fuzzer). Arithmetic
    // coding (SOF9-11, 13-15) has no such floor and is left to the reader.
    if ((m >= 0xc0 && m <= 0xc3) || (m >= 0xc5 && m <= 0xc7)) {
      if (len < 8) return "it is corrupt (its frame header is too short)";
      const std::uint64_t height = (std::uint64_t{b[pos + 5]} << 8) | b[pos + 6];
      const std::uint64_t width = (std::uint64_t{b[pos + 7]} << 8) | b[pos + 8];
      const std::uint64_t blocks = ((width + 7) / 8) * ((height + 7) / 8);
      // Four times the floor, so that no sound file comes near it.
      if (blocks > 32 * static_cast<std::uint64_t>(b.size())) {
        return "it is corrupt: its header declares " + std::to_string(width) + " x " +
               std::to_string(height) + " pixels, more than its " + std::to_string(b.size()) +
               " bytes can encode (at least " + std::to_string(blocks / 8) + " bytes)";
      }
    }
    pos += 2 + len;
    if (m == 0xda) break;  // start of scan: entropy-coded data follows
  }
  // The compressed data ends with the end-of-image marker; trailing bytes after it are allowed.
  for (std::size_t i = b.size() - 1; i > pos; --i) {
    if (b[i - 1] == 0xff && b[i] == 0xd9) return {};
  }
  return "it is truncated (no end-of-image marker after the image data)";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// MetaImage header fields (key = value lines up to ElementDataFile, which comes last).
struct MetaHeader {
  std::string data_file;
  bool compressed = false;
  double compressed_size = 0;        // CompressedDataSize (0 or absent: the whole data file)
  std::uint64_t header_bytes = 0;    // up to and including the ElementDataFile line
  double header_size = 0;            // HeaderSize: where the data starts (see meta_offset)
  bool big_endian = false;           // BinaryDataByteOrderMSB (or ElementByteOrderMSB)
  std::optional<std::string> ndims;  // NDims, as written
  std::vector<double> dim_size;      // DimSize, x first
};

// A MetaImage boolean as MetaIO reads one: true when its first character is T, t or 1.
bool meta_true(const std::string& value) {
  return !value.empty() && (value[0] == 'T' || value[0] == 't' || value[0] == '1');
}

// The fields as MetaIO's MET_Read finds them: a name runs to the first '=' or ':', blanks
// around it dropped, and is compared case-sensitively; the value follows the separators and
// blanks after it. Reading names any other way let a fuzzed header through: gpix took a line
// "elementdatafile = ..." for the header's end and stopped checking there, MetaIO skipped it as
// an unknown field and read on to an NDims = 2111...1 (fuzz_read_mha, a timeout in CI).
MetaHeader parse_meta(const fs::path& path) {
  MetaHeader h;
  std::ifstream f(path, std::ios::binary);
  std::string line;
  std::uint64_t consumed = 0;
  while (std::getline(f, line)) {
    consumed += line.size() + 1;
    const auto sep = line.find_first_of("=:");
    if (sep == std::string::npos) continue;
    const std::string key = trim(line.substr(0, sep));
    const auto value_start = line.find_first_not_of("=: \t", sep);
    const std::string value =
        value_start == std::string::npos ? std::string() : trim(line.substr(value_start));
    if (key == "CompressedData") h.compressed = meta_true(value);
    // Numbers as MetaIO reads them (as doubles: "1e3" is 1000).
    if (key == "CompressedDataSize") h.compressed_size = std::strtod(value.c_str(), nullptr);
    if (key == "HeaderSize") h.header_size = std::strtod(value.c_str(), nullptr);
    if (key == "BinaryDataByteOrderMSB" || key == "ElementByteOrderMSB")
      h.big_endian = meta_true(value);
    if (key == "NDims") h.ndims = value;
    if (key == "DimSize") {
      h.dim_size.clear();  // MetaIO keeps the last
      std::istringstream words(value);
      for (double d = 0; words >> d;) h.dim_size.push_back(d);
    }
    if (key == "ElementDataFile") {
      h.data_file = value;
      h.header_bytes = consumed;
      break;
    }
  }
  return h;
}

// Where MetaIO's MetaImage::M_ReadElements starts reading a MetaImage's data in `file` (the
// header file itself for LOCAL data) of `size` bytes: HeaderSize > 0 is an offset from the
// start of that file (of the header file too, for LOCAL data), -1 puts the data_bytes of
// pixels at its end, anything else means right after the header (LOCAL) or at the start of
// the data file. Empty where the data cannot start in the file.
std::optional<std::uint64_t> meta_offset(const MetaHeader& h, bool local, std::uint64_t size,
                                         std::uint64_t data_bytes) {
  if (h.header_size > 0) return static_cast<std::uint64_t>(h.header_size);
  if (h.header_size == -1) {
    if (size < data_bytes) return std::nullopt;
    return size - data_bytes;
  }
  return local ? h.header_bytes : 0;
}

std::string check_inflate(const fs::path& file, std::uint64_t offset, std::uint64_t bytes,
                          std::uint64_t want) {
  StreamChecker c(file);
  // Past twice the pixels (and 64 MiB), a stream that has not ended is not followed further:
  // the pixels it holds were checked as far as they go, and a bomb costs no more time.
  return c.check(offset, bytes, want,
                 want + std::max<std::uint64_t>(want, std::uint64_t{64} << 20));
}

// The file holding a MetaImage's data: the header file itself for LOCAL data, else the one
// detached file it names (spaces and all, as MetaIO opens it); none for a list ("LIST",
// "LIST 2D", check_meta_list) or a pattern of files (left to MetaIO).
struct MetaDataFile {
  fs::path file;
  bool local = false;
};
// Whether the data lies in a list of files named after the header: "LIST" alone (one file per
// slice of NDims - 1 dimensions) is MetaIO's list as much as "LIST 2D" is; taking it for a
// data file named LIST refused valid stacks. MetaIO compares the first four letters
// case-sensitively: "list" is a file.
bool meta_file_list(const MetaHeader& h) {
  return h.data_file.rfind("LIST", 0) == 0;
}

std::optional<MetaDataFile> meta_data_file(const fs::path& path, const MetaHeader& h) {
  // MetaIO's three spellings; "LoCaL" is a file of that name to it.
  if (h.data_file == "LOCAL" || h.data_file == "Local" || h.data_file == "local") {
    return MetaDataFile{path, true};
  }
  // Any other name without a '%' (spaces included) is one file to MetaIO: left unchecked, a
  // fuzzed name "LOC~~~ = ??" let a header claiming 10 GB reach the allocation of its pixels.
  if (h.data_file.empty() || meta_file_list(h) || h.data_file.find('%') != std::string::npos) {
    return std::nullopt;
  }
  return MetaDataFile{path.parent_path() / fs::u8path(h.data_file), false};
}

// Where a compressed MetaImage's stream lies, as MetaIO reads it: CompressedDataSize bytes
// from the data's offset, or without it the whole data file from its first byte (for LOCAL
// data that is the header: never an image). Empty `file` where it is left to MetaIO (a list
// or pattern of files) or where check_meta refuses the file.
struct MetaStream {
  fs::path file;
  std::uint64_t offset = 0, bytes = 0;
};
MetaStream meta_stream(const fs::path& path, const MetaHeader& h, std::uint64_t data_bytes) {
  const auto data = meta_data_file(path, h);
  if (!data) return {};
  const auto& [file, local] = *data;
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec) return {};
  if (h.compressed_size <= 0) {
    if (local) return {};
    return {file, 0, size};
  }
  const auto offset = meta_offset(h, local, size, data_bytes);
  if (!offset || *offset > size) return {};
  return {file, *offset, std::min(static_cast<std::uint64_t>(h.compressed_size), size - *offset)};
}

// A header's number as written ("3", "1e+12"), not to_string's "3.000000".
std::string number(double v) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.17g", v);
  return text.data();
}

// Whether compressed data of `compressed_bytes` can hold `data_bytes` of pixels: deflate expands
// at most about 1032-fold (a 258-byte match in a code of at least 2 bits), so a header claiming
// more cannot be what its files hold, and the pixels it claims are not allocated to find out.
std::string compressed_room(const MetaHeader& h, std::uint64_t compressed_bytes,
                            std::uint64_t data_bytes, const std::string& what) {
  if (!h.compressed || compressed_bytes >= data_bytes / 1032 + 1024) return {};
  return what + " hold " + std::to_string(compressed_bytes) +
         " bytes of compressed data, which cannot inflate to the " + std::to_string(data_bytes) +
         " bytes its header claims (deflate expands at most about 1032-fold)";
}

// An ElementDataFile value's words as MetaIO's MET_StringToWordArray splits it: at spaces only.
std::vector<std::string> meta_words(const std::string& value) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < value.size()) {
    while (i < value.size() && value[i] == ' ') ++i;
    const std::size_t j = std::min(value.find(' ', i), value.size());
    if (j > i) words.push_back(value.substr(i, j - i));
    i = j;
  }
  return words;
}

// Whether `words` are a file pattern MetaIO can use safely: "name%0Nd.ext first last step",
// the name with one conversion (%d or %i, a 0 flag and up to 2 digits of width: MetaIO hands
// the name to sprintf as its format, so %s read an int as a pointer and a wide field ran past
// its buffer) and three integers.
bool meta_pattern(const std::vector<std::string>& words) {
  if (words.size() != 4) return false;
  const std::string& name = words[0];
  const auto pct = name.find('%');
  if (pct == std::string::npos || name.find('%', pct + 1) != std::string::npos) return false;
  std::size_t k = pct + 1;
  if (k < name.size() && name[k] == '0') ++k;
  const std::size_t width = k;
  while (k < name.size() && std::isdigit(static_cast<unsigned char>(name[k]))) ++k;
  if (k - width > 2 || k >= name.size() || (name[k] != 'd' && name[k] != 'i')) return false;
  return std::all_of(words.begin() + 1, words.end(), [](const std::string& w) {
    char* stop = nullptr;
    errno = 0;
    const long long v = std::strtoll(w.c_str(), &stop, 10);
    return *stop == '\0' && stop != w.c_str() && errno == 0 &&
           v >= std::numeric_limits<std::int32_t>::min() &&
           v <= std::numeric_limits<std::int32_t>::max();
  });
}

// One slice file of a list or pattern (`which` names it): it must exist and, uncompressed, hold
// HeaderSize's skip and the slice. Its size is added to *total (for compressed_room()).
std::string check_slice_file(const fs::path& file, const std::string& which, const MetaHeader& h,
                             std::uint64_t skip, std::uint64_t slice_bytes, std::uint64_t* total) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return which + " does not exist";
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec) return {};
  *total += size;
  if (!h.compressed && size < skip + slice_bytes) {
    return which + " is truncated: " + std::to_string(size) + " bytes, " +
           std::to_string(skip + slice_bytes) + " expected" +
           (skip > 0 ? " (HeaderSize " + std::to_string(skip) + " and the slice)" : "");
  }
  return {};
}

// A file pattern's files against the pixels they must hold. MetaIO reads one slice (the last
// dimension's) from each name it makes, from first to last by step, into slice 0, 1, ...: a
// step of 0 or less loops for ever, more names than slices write past the image, fewer leave
// slices unread, and a name it cannot open is skipped with a message on the console. None of
// that is an image.
std::string check_meta_pattern(const fs::path& path, const MetaHeader& h,
                               std::uint64_t data_bytes) {
  const std::vector<std::string> words = meta_words(h.data_file);
  if (!meta_pattern(words) || h.dim_size.empty()) return {};  // the header check says why
  const long long first = std::stoll(words[1]), last = std::stoll(words[2]),
                  step = std::stoll(words[3]);
  const double slices = h.dim_size.back();
  if (step <= 0) {
    return "its file pattern '" + h.data_file + "' steps by " + std::to_string(step) +
           "; the step must be 1 or more";
  }
  const long long count = last < first ? 0 : (last - first) / step + 1;
  if (static_cast<double>(count) != slices) {
    return "its file pattern '" + h.data_file + "' names " + std::to_string(count) +
           " file(s), one per slice, but its DimSize has " + number(slices) +
           " slices in its last dimension";
  }
  const std::uint64_t slice_bytes = data_bytes / static_cast<std::uint64_t>(count);
  const std::uint64_t skip = h.header_size > 0 ? static_cast<std::uint64_t>(h.header_size) : 0;
  std::uint64_t total = 0;
  for (long long i = first; i <= last; i += step) {
    std::array<char, 256> name{};
    std::snprintf(name.data(), name.size(), words[0].c_str(), static_cast<int>(i));
    const fs::path file = path.parent_path() / fs::u8path(name.data());
    const std::string broken = check_slice_file(file,
                                                "its slice file '" + std::string(name.data()) +
                                                    "' (from the pattern '" + h.data_file + "')",
                                                h, skip, slice_bytes, &total);
    if (!broken.empty()) return broken;
  }
  return compressed_room(h, total, data_bytes, "its pattern's files");
}

// A MetaImage whose slices lie in files listed after its header ("ElementDataFile = LIST",
// optionally "LIST 2D": slices of that many dimensions, else NDims - 1), as MetaIO's
// MetaImage::M_ReadElementData reads it: one name per line, relative to the header's folder,
// HeaderSize applied to every slice file. MetaIO skips a slice file it cannot open (a message
// on stderr), a last name with no line break after it, and shifts every slice after a blank
// line, returning the image with slices unread; so each of those is refused here, naming the
// file. Compressed slices are inflated by MetaIO; only their total is weighed here.
std::string check_meta_list(const fs::path& path, const MetaHeader& h, std::uint64_t data_bytes) {
  int ndims = h.ndims ? std::atoi(h.ndims->c_str()) : 0;
  if (ndims <= 0 || ndims > static_cast<int>(h.dim_size.size())) {
    ndims = static_cast<int>(h.dim_size.size());
  }
  if (ndims == 0) return {};  // the header's own checks name a missing NDims or DimSize
  // MetaIO's words: "LIST 2D" gives 2 (atof of the second word); none, 0 or more than NDims
  // mean NDims - 1.
  int slice_dims = ndims - 1;
  {
    std::istringstream words(h.data_file);
    std::string list, second;
    if (words >> list >> second) {
      const int k = static_cast<int>(std::atof(second.c_str()));
      // k = NDims (one file for the whole image) sizes the read from a sub-quantity past
      // the image's dimensions: MetaIO returns the image unread (seen with ITK 5.2).
      if (k == ndims) {
        return "its ElementDataFile = " + h.data_file + " makes each listed file the whole " +
               std::to_string(ndims) +
               "D image, which MetaIO does not read; name the file "
               "itself (ElementDataFile = FILE) or list slices of fewer dimensions";
      }
      if (k > 0 && k < ndims) slice_dims = k;
    }
  }
  double files = 1;
  for (int i = slice_dims; i < ndims; ++i) files *= h.dim_size[static_cast<std::size_t>(i)];
  // More files than any list holds (the header check refuses a DimSize that is not a size):
  // leaving it to MetaIO allocated the image first (2 GB for a fuzzed header).
  if (!(files >= 1 && files <= 1e7)) {
    return "its ElementDataFile = " + h.data_file + " needs " + number(files) +
           " slice files for its DimSize; a list of that many is not read";
  }
  const auto count = static_cast<std::uint64_t>(files);
  const std::string needs = "; its DimSize needs " + std::to_string(count) + " slice files";
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(h.header_bytes));
  std::vector<std::string> names;
  for (std::string line; names.size() < count;) {
    if (!std::getline(f, line)) break;
    const auto k = [&] { return std::to_string(names.size() + 1); };  // for messages only
    if (f.eof()) {
      return "the name of its slice file " + k() + " ('" + line +
             "') has no line break after it, so MetaIO would not read that file (end the "
             "list with a line break)";
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    if (line.empty()) {
      return "its list of slice files has an empty line where file " + k() + " should be named" +
             needs;
    }
    // MetaIO reads each name into a buffer of 1024 bytes: a longer line stops its reading.
    if (line.size() > 1023) {
      return "the name of its slice file " + k() + " is " + std::to_string(line.size()) +
             " characters long; MetaIO reads names of up to 1023";
    }
    names.push_back(line);
  }
  if (names.size() < count) {
    return "its ElementDataFile = " + h.data_file + " lists " + std::to_string(names.size()) +
           " slice file(s) after the header" + needs;
  }
  const std::uint64_t slice_bytes = data_bytes / count;
  // HeaderSize > 0 skips that many bytes of every slice file (-1 reads each file's tail).
  const std::uint64_t skip = h.header_size > 0 ? static_cast<std::uint64_t>(h.header_size) : 0;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string broken =
        check_slice_file(path.parent_path() / fs::u8path(names[i]),
                         "its slice file '" + names[i] + "' (" + std::to_string(i + 1) + " of " +
                             std::to_string(count) + " in its list)",
                         h, skip, slice_bytes, &total);
    if (!broken.empty()) return broken;
  }
  return compressed_room(h, total, data_bytes, "its listed files");
}

std::string check_meta(const fs::path& path, std::uint64_t data_bytes) {
  const MetaHeader h = parse_meta(path);
  // MetaIO keeps HeaderSize in an int (a larger value wrapped, and the data was read from
  // right after the header without a word) and CompressedDataSize in a 64-bit offset.
  if (h.header_size != std::floor(h.header_size) || h.header_size < -1 ||
      h.header_size > std::numeric_limits<std::int32_t>::max()) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", h.header_size);
    return std::string("its header says HeaderSize = ") + text +
           "; it must be -1 (the data ends the file) or a byte offset from 0 to 2147483647 "
           "(the header is corrupt)";
  }
  if (h.compressed_size != std::floor(h.compressed_size) || h.compressed_size < 0 ||
      h.compressed_size > 0x1p62) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", h.compressed_size);
    return std::string("its header says CompressedDataSize = ") + text +
           "; it must be a byte count (the header is corrupt)";
  }
  if (meta_file_list(h)) return check_meta_list(path, h, data_bytes);
  if (h.data_file.find('%') != std::string::npos) return check_meta_pattern(path, h, data_bytes);
  const auto data = meta_data_file(path, h);
  if (!data) return {};
  const auto& [file, local] = *data;
  std::error_code ec;
  if (!local && !fs::exists(file, ec)) return "its data file '" + h.data_file + "' does not exist";
  const std::uint64_t size = fs::file_size(file, ec);
  const auto offset = meta_offset(h, local, size, data_bytes);
  // What the file holds from where the data starts.
  const std::uint64_t have = offset && *offset < size ? size - *offset : 0;
  if (!h.compressed) {
    if (have >= data_bytes) return {};
    return local ? "it is truncated: the header announces " + std::to_string(data_bytes) +
                       " bytes of data but the file holds " + std::to_string(have)
                 : "its data file '" + h.data_file + "' is truncated: " + std::to_string(have) +
                       " bytes, " + std::to_string(data_bytes) + " expected";
  }
  // Compressed (meta_stream says where; check_stream inflates it): the bytes must be there.
  auto csize = static_cast<std::uint64_t>(h.compressed_size);
  std::uint64_t avail = have;
  if (csize == 0) {
    if (local) {
      return "it says CompressedData = True but not how many bytes (CompressedDataSize); "
             "without it the data cannot be told from the header (the header is corrupt)";
    }
    csize = size;
    avail = size;
  }
  if (avail < csize) {
    return local ? "it is truncated: the header announces " + std::to_string(csize) +
                       " bytes of compressed data but the file holds " + std::to_string(avail)
                 : "its data file '" + h.data_file + "' is truncated: " + std::to_string(avail) +
                       " bytes, " + std::to_string(csize) + " of compressed data expected";
  }
  return {};
}

// Before ITK reads a MetaImage header: MetaIO copies header values with C string functions, so
// a NUL or another control byte inside the header, or an ElementDataFile with a '%' that is not
// a well-formed file pattern ("name%03d.raw first last step"), made it read past its buffers
// (an ASan heap overflow in MetaImage::ReadStream, found by fuzz_read_mha).
// MetaIO sizes the fields that follow NDims (spacing, offset, the transform's NDims^2 values)
// by it and reads that many numbers: NDims = 2111...1 (74 digits) kept it reading for minutes
// (fuzz_read_mha, a timeout in CI's bounded run). Empty when `value` is 1 to 10.
std::string check_meta_ndims(const std::string& value) {
  char* stop = nullptr;
  const double n = std::strtod(value.c_str(), &stop);
  const bool whole = stop != value.c_str() && *stop == '\0' && n == std::floor(n);
  if (whole && n >= 1 && n <= 10) return {};
  return "its header says NDims = " + value.substr(0, 40) + (value.size() > 40 ? "..." : "") +
         "; a MetaImage has 1 to 10 dimensions (the header is corrupt)";
}

std::string check_meta_header(const fs::path& path) {
  const MetaHeader h = parse_meta(path);
  std::ifstream f(path, std::ios::binary);
  // Text headers are a few hundred bytes; past 16 MiB this is not one, and its lines are not
  // read into memory to check them.
  if (h.header_bytes > (std::uint64_t{16} << 20)) {
    return "its header runs for " + std::to_string(h.header_bytes) +
           " bytes before its ElementDataFile line; a MetaImage header is at most 16 MiB of text "
           "(the file is corrupt)";
  }
  // Without an ElementDataFile line, its first 4 KiB: a more precise refusal than the one below
  // if they hold one.
  std::string text(h.header_bytes ? h.header_bytes : 4096, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(f.gcount()));
  const std::size_t end = text.size();
  for (std::size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      return "its header holds a control byte (0x" + std::string(1, "0123456789abcdef"[c >> 4]) +
             "0123456789abcdef"[c & 15] + ") at offset " + std::to_string(i) +
             "; a MetaImage header is text (it is corrupt)";
    }
  }
  // MetaIO copies each field name (the text before '=' or ':', line breaks and spaces around it
  // left out) into a 255-byte buffer with strcpy: a 297-byte name aborted the process
  // (fuzz_read_mha, glibc's fortified strcpy; an overflow without it).
  for (std::size_t i = 0; i < end;) {
    while (i < end && (text[i] == '\r' || text[i] == '\n' || text[i] == ' ')) ++i;
    std::size_t k = i;
    while (k < end && text[k] != '=' && text[k] != ':' && text[k] != '\r' && text[k] != '\n') ++k;
    std::size_t e = k;
    while (e > i && (text[e - 1] == ' ' || text[e - 1] == '\t')) --e;
    if (e - i > 254) {
      return "its header has a field name of " + std::to_string(e - i) + " characters at offset " +
             std::to_string(i) + "; MetaImage field names hold at most 254 (the header is corrupt)";
    }
    // A line that is not "Name = value": MetaIO reads a name on across the line break, so the
    // next line's field is lost inside it (a fuzzed header hid its ElementDataFile that way,
    // and MetaIO went on to a later NDims = 2111...1 and read DimSize for ever; gpix saw the
    // ElementDataFile line and stopped checking there).
    if (k < end && (text[k] == '\r' || text[k] == '\n') && e > i) {
      return "its header line at offset " + std::to_string(i) + " ('" +
             text.substr(i, std::min<std::size_t>(e - i, 40)) +
             "') is not 'Name = value' (the header is corrupt)";
    }
    const std::string name = lower(text.substr(i, e - i));
    const std::size_t value_start = k < end ? k + 1 : k;
    while (k < end && text[k] != '\r' && text[k] != '\n') ++k;  // the value
    // Every NDims line, not only the one parse_meta keeps: MetaIO acts on each as it reads it
    // (a header with NDims = 2111...1 and a later NDims = 3 timed out the same way).
    if (name == "ndims") {
      const std::string broken = check_meta_ndims(trim(text.substr(value_start, k - value_start)));
      if (!broken.empty()) return broken;
    }
    i = k;
  }
  if (h.ndims) {
    const std::string broken = check_meta_ndims(*h.ndims);
    if (!broken.empty()) return broken;
  }
  // MetaIO requires the field and reads every line before it: without one it reads to the end
  // of the file, past anything checked here, only to refuse the header there.
  if (h.header_bytes == 0) {
    return "its header has no 'ElementDataFile = ...' line, the field a MetaImage header ends "
           "with (the file is truncated, corrupt or not a MetaImage)";
  }
  // MetaIO opens the directory as its data file and reads nothing into the pixels gpix has
  // already allocated to the size the header claims (10 GB for a fuzzed header, an
  // out-of-memory stop of an exploratory fuzz run).
  if (h.data_file.empty()) {
    return "its ElementDataFile is empty; it must be LOCAL, a data file's name, LIST or a file "
           "pattern (the header is corrupt)";
  }
  // MetaIO keeps each size in an int: a larger one is undefined there, and what ITK then
  // reports is not what the header says (a fuzzed 7777...7 became 2^31, and a list check
  // working from the header's numbers let a 2 GB image be allocated).
  const std::size_t sizes = std::min(
      h.dim_size.size(), static_cast<std::size_t>(h.ndims ? std::atoi(h.ndims->c_str()) : 10));
  for (std::size_t i = 0; i < sizes; ++i) {
    const double d = h.dim_size[i];
    if (d != std::floor(d) || d < 1 || d > std::numeric_limits<std::int32_t>::max()) {
      return "its header says DimSize = ... " + number(d) +
             " ...; each size must be a whole number from 1 to 2147483647 (the header is corrupt)";
    }
  }
  const bool list = meta_file_list(h);
  const bool has_pattern = h.data_file.find('%') != std::string::npos;
  if (!list && !has_pattern) return {};
  // MetaIO splits a list's or a pattern's value at spaces into words of 80 bytes each, copied
  // without a bound.
  const std::vector<std::string> words = meta_words(h.data_file);
  for (const std::string& w : words) {
    if (w.size() >= 80) {
      return "its ElementDataFile '" + h.data_file.substr(0, 60) + "...' has a word of " +
             std::to_string(w.size()) + " characters; MetaIO reads words of up to 79 there";
    }
  }
  if (list) return {};
  if (meta_pattern(words)) return {};
  return "its ElementDataFile '" + h.data_file +
         "' holds a % but is not a file pattern 'name%03d.raw first last step' (one %d, with a "
         "width of at most 2 digits; the header is corrupt)";
}

// One detached data file, not a list or a pattern of several.
bool single_file(const std::string& name) {
  return !name.empty() && name.find(' ') == std::string::npos &&
         name.find('%') == std::string::npos && lower(name) != "list";
}

// Where `data_bytes` of raw pixels lie in `file`: `skip` bytes in, or at the end for -1.
std::optional<RawData> at(const fs::path& file, std::uint64_t base, long long skip,
                          std::uint64_t data_bytes, bool big_endian) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec) return std::nullopt;
  const std::uint64_t offset = skip < 0 ? (size >= data_bytes ? size - data_bytes : 0)
                                        : base + static_cast<std::uint64_t>(skip);
  if (offset + data_bytes > size) return std::nullopt;  // truncated: the whole read says so
  return RawData{file, offset, big_endian};
}

std::optional<RawData> meta_data(const fs::path& path, std::uint64_t data_bytes) {
  const MetaHeader h = parse_meta(path);
  if (h.compressed) return std::nullopt;
  const auto data = meta_data_file(path, h);
  if (!data || (!data->local && !single_file(h.data_file))) return std::nullopt;
  const auto& [file, local] = *data;
  std::error_code ec;
  const std::uint64_t size = fs::file_size(file, ec);
  if (ec) return std::nullopt;
  const auto offset = meta_offset(h, local, size, data_bytes);
  if (!offset || *offset > size || size - *offset < data_bytes) return std::nullopt;
  return RawData{file, *offset, h.big_endian};
}

// NRRD: "field: value" lines after the magic line, up to an empty line; attached data follows
// it. Raw encoding only; line skip and byte skip (-1: the data ends the file) honoured.
std::optional<RawData> nrrd_data(const fs::path& path, std::uint64_t data_bytes) {
  std::ifstream f(path, std::ios::binary);
  std::string line, encoding, data_file, endian;
  long long line_skip = 0, byte_skip = 0;
  std::uint64_t consumed = 0;
  bool magic = true;
  while (std::getline(f, line)) {
    consumed += line.size() + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (magic) {
      if (line.rfind("NRRD", 0) != 0) return std::nullopt;
      magic = false;
      continue;
    }
    if (line.empty()) break;
    if (line[0] == '#' || line.find(":=") != std::string::npos) continue;
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string key = lower(line.substr(0, colon));
    key.erase(std::remove(key.begin(), key.end(), ' '), key.end());
    const std::string value = line.substr(colon + 2);
    if (key == "encoding") encoding = lower(value);
    if (key == "endian") endian = lower(value);
    if (key == "datafile") data_file = value;
    if (key == "lineskip") line_skip = std::strtoll(value.c_str(), nullptr, 10);
    if (key == "byteskip") byte_skip = std::strtoll(value.c_str(), nullptr, 10);
  }
  if (encoding != "raw" || line_skip < 0) return std::nullopt;
  fs::path file = path;
  std::uint64_t base = consumed;
  if (!data_file.empty()) {
    if (!single_file(data_file)) return std::nullopt;
    file = path.parent_path() / fs::u8path(data_file);
    base = 0;
  }
  if (line_skip > 0) {
    std::ifstream d(file, std::ios::binary);
    d.seekg(static_cast<std::streamoff>(base));
    for (long long i = 0; i < line_skip && std::getline(d, line); ++i) base += line.size() + 1;
  }
  if (byte_skip < -1) return std::nullopt;
  return at(file, base, byte_skip, data_bytes, endian == "big");
}

// The data offset of a NIfTI-1 or NIfTI-2 header (host byte order or swapped).
std::optional<std::uint64_t> nifti_offset(const unsigned char* h, std::size_t n) {
  if (n < 348) return std::nullopt;
  std::int32_t sizeof_hdr;
  std::memcpy(&sizeof_hdr, h, 4);
  const bool swapped = sizeof_hdr != 348 && sizeof_hdr != 540;
  if (swapped)
    sizeof_hdr =
        static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(sizeof_hdr)));
  if (sizeof_hdr == 348) {
    std::uint32_t bits;
    std::memcpy(&bits, h + 108, 4);
    if (swapped) bits = __builtin_bswap32(bits);
    float off;
    std::memcpy(&off, &bits, 4);
    return off < 352.0f ? 352u : static_cast<std::uint64_t>(off);
  }
  if (sizeof_hdr == 540 && n >= 540) {
    std::uint64_t off;
    std::memcpy(&off, h + 168, 8);
    if (swapped) off = __builtin_bswap64(off);
    return off;
  }
  return std::nullopt;
}

// The bytes of pixels a NIfTI header declares (its dim[] and bitpix), as stored in the file:
// ITK reports the type it returns, which is float32 where the header scales the values
// (scl_slope not 1 or scl_inter not 0), so a size taken from ITK's type refused every such
// file as truncated (an int16 volume with scl_slope 2 "needed" twice its bytes). Empty for a
// header this cannot read.
std::optional<std::uint64_t> nifti_data_bytes(const unsigned char* h, std::size_t n) {
  if (n < 348) return std::nullopt;
  std::int32_t sizeof_hdr;
  std::memcpy(&sizeof_hdr, h, 4);
  const bool swapped = sizeof_hdr != 348 && sizeof_hdr != 540;
  if (swapped) {
    sizeof_hdr =
        static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(sizeof_hdr)));
  }
  const bool two = sizeof_hdr == 540;
  if (!two && sizeof_hdr != 348) return std::nullopt;
  if (two && n < 540) return std::nullopt;
  auto i16 = [&](std::size_t at) {
    std::uint16_t v;
    std::memcpy(&v, h + at, 2);
    return static_cast<std::int16_t>(swapped ? __builtin_bswap16(v) : v);
  };
  auto i64 = [&](std::size_t at) {
    std::uint64_t v;
    std::memcpy(&v, h + at, 8);
    return static_cast<std::int64_t>(swapped ? __builtin_bswap64(v) : v);
  };
  // NIfTI-1: dim int16[8] at 40, bitpix at 72; NIfTI-2: bitpix at 14, dim int64[8] at 16.
  const std::int64_t ndim = two ? i64(16) : i16(40);
  const std::int64_t bitpix = two ? i16(14) : i16(72);
  if (ndim < 1 || ndim > 7 || bitpix < 1 || bitpix > 256) return std::nullopt;
  std::uint64_t bits = static_cast<std::uint64_t>(bitpix);
  for (std::int64_t d = 1; d <= ndim; ++d) {
    const std::int64_t e =
        two ? i64(16 + 8 * static_cast<std::size_t>(d)) : i16(40 + 2 * static_cast<std::size_t>(d));
    if (e <= 0) continue;  // the nifti library takes a missing extent as 1
    if (static_cast<std::uint64_t>(e) > (std::uint64_t{1} << 62) / bits) return std::nullopt;
    bits *= static_cast<std::uint64_t>(e);
  }
  return (bits + 7) / 8;
}

std::string check_nifti(const fs::path& path, std::uint64_t data_bytes) {
  const std::string name = lower(path.filename().string());
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  if (name.ends_with(".gz")) {
    // The decompressed header, and the size gzip records in its last 4 bytes (mod 2^32).
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) return "it cannot be opened as gzip";
    unsigned char hdr[540] = {};
    const int got = gzread(gz, hdr, sizeof hdr);
    gzclose(gz);
    const auto off = nifti_offset(hdr, got > 0 ? static_cast<std::size_t>(got) : 0);
    if (!off) return "it is corrupt (no NIfTI header inside the gzip stream)";
    data_bytes =
        nifti_data_bytes(hdr, static_cast<std::size_t>(std::max(got, 0))).value_or(data_bytes);
    if (size < 18) return "it is truncated (shorter than a gzip stream)";
    unsigned char t[4];
    std::ifstream f(path, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 4));
    f.read(reinterpret_cast<char*>(t), 4);
    const std::uint32_t isize =
        static_cast<std::uint32_t>(t[0]) | (static_cast<std::uint32_t>(t[1]) << 8) |
        (static_cast<std::uint32_t>(t[2]) << 16) | (static_cast<std::uint32_t>(t[3]) << 24);
    if (!f || isize != static_cast<std::uint32_t>((*off + data_bytes) & 0xffffffffu)) {
      return "it is truncated or corrupt: the gzip stream does not hold the " +
             std::to_string(data_bytes) + " bytes of pixels the header announces";
    }
    return {};
  }
  if (name.ends_with(".hdr")) return {};
  const auto b = head(path, 540);
  const auto off = nifti_offset(b.data(), b.size());
  if (!off) return "it is corrupt (no NIfTI header)";
  data_bytes = nifti_data_bytes(b.data(), b.size()).value_or(data_bytes);
  if (size < *off + data_bytes) {
    return "it is truncated: the header announces " + std::to_string(data_bytes) +
           " bytes of pixels from byte " + std::to_string(*off) + " but the file has " +
           std::to_string(size) + " bytes";
  }
  return {};
}

// The header of a .nii or .nii.gz file (up to 540 bytes; fewer when the file is shorter).
std::vector<unsigned char> nifti_header(const fs::path& path) {
  if (!lower(path.filename().string()).ends_with(".gz")) return head(path, 540);
  std::vector<unsigned char> h(540);
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) return {};
  const int got = gzread(gz, h.data(), static_cast<unsigned>(h.size()));
  gzclose(gz);
  h.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return h;
}

// The geometry fields ITK turns into a direction matrix: spacing (pixdim), the quaternion and
// its offsets, and the affine rows. A NaN there makes vnl abort the process ("matrix has
// non-finite elements"), and absurd magnitudes keep its SVD from converging: a fuzzed header
// with a subnormal float beside an entry of 1e8 in the affine made ITK spin for ever. Values
// are therefore refused unless 0 or between 1e-20 and 1e15 in magnitude, which holds every
// spacing and position in mm that a scanner or microscope writes.
std::string check_nifti_geometry(const fs::path& path) {
  const auto h = nifti_header(path);
  if (h.size() < 348) return {};  // too short for a header: the reader says so
  std::int32_t sizeof_hdr;
  std::memcpy(&sizeof_hdr, h.data(), 4);
  bool swapped = sizeof_hdr != 348 && sizeof_hdr != 540;
  if (swapped) {
    sizeof_hdr =
        static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(sizeof_hdr)));
  }
  bool two = sizeof_hdr == 540;
  if (!two && sizeof_hdr != 348) {
    // A corrupt sizeof_hdr does not stop the nifti library, which goes by the magic string
    // ("n+1"/"ni1" at 344, "n+2"/"ni2" at 4) and by dim[0] for the byte order; nor may it stop
    // these checks (fuzz_read_nii: an infinite affine entry behind a mutated sizeof_hdr).
    // Any version digit: the NIfTI-1 reader takes "n+2" at 344 for a NIfTI header too
    // (nifti1_io's NIFTI_VERSION accepts '1'-'9'; fuzz_read_nii: "n+2" there, a corrupt
    // sizeof_hdr and an infinite srow_y made vnl abort).
    auto magic = [&](std::size_t at, char lowest) {
      return h.size() >= at + 4 && (h[at] == 'n') && (h[at + 1] == '+' || h[at + 1] == 'i') &&
             h[at + 2] >= lowest && h[at + 2] <= '9' && h[at + 3] == 0;
    };
    if (magic(4, '2') && h.size() >= 540) {
      two = true;
      std::int64_t dim0;
      std::memcpy(&dim0, h.data() + 16, 8);
      swapped = dim0 < 1 || dim0 > 7;
    } else if (magic(344, '1')) {
      two = false;
      std::int16_t dim0;
      std::memcpy(&dim0, h.data() + 40, 2);
      swapped = dim0 < 1 || dim0 > 7;
    } else {
      return {};  // not a NIfTI header at all: the reader says so
    }
  }
  if (two && h.size() < 540) return {};
  auto value = [&](std::size_t off) -> double {
    if (two) {
      std::uint64_t bits;
      std::memcpy(&bits, h.data() + off, 8);
      if (swapped) bits = __builtin_bswap64(bits);
      double d;
      std::memcpy(&d, &bits, 8);
      return d;
    }
    std::uint32_t bits;
    std::memcpy(&bits, h.data() + off, 4);
    if (swapped) bits = __builtin_bswap32(bits);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  auto integer = [&](std::size_t off1, std::size_t off2) -> std::int64_t {
    if (two) {
      std::uint32_t bits;
      std::memcpy(&bits, h.data() + off2, 4);
      if (swapped) bits = __builtin_bswap32(bits);
      return static_cast<std::int32_t>(bits);
    }
    std::uint16_t bits;
    std::memcpy(&bits, h.data() + off1, 2);
    if (swapped) bits = static_cast<std::uint16_t>(__builtin_bswap16(bits));
    return static_cast<std::int16_t>(bits);
  };
  std::int64_t ndim = integer(40, 0);
  if (two) {
    std::uint64_t d;
    std::memcpy(&d, h.data() + 16, 8);
    ndim = static_cast<std::int64_t>(swapped ? __builtin_bswap64(d) : d);
  }
  ndim = std::clamp<std::int64_t>(ndim, 0, 7);
  struct Field {
    const char* name;
    std::size_t off1, off2, first, count;  // NIfTI-1 and NIfTI-2 offsets, values checked
    bool used;                             // what ITK reads: the forms whose code is set
  };
  const Field fields[] = {{"pixdim", 76, 104, 1, static_cast<std::size_t>(ndim), true},
                          {"quatern_b/c/d", 256, 352, 0, 3, integer(252, 344) > 0},
                          {"qoffset_x/y/z", 268, 376, 0, 3, integer(252, 344) > 0},
                          {"srow_x", 280, 400, 0, 4, integer(254, 348) > 0},
                          {"srow_y", 296, 432, 0, 4, integer(254, 348) > 0},
                          {"srow_z", 312, 464, 0, 4, integer(254, 348) > 0}};
  constexpr double kLimit = 1e15;
  constexpr double kTiny = 1e-20;
  const std::size_t step = two ? 8 : 4;
  for (const Field& f : fields) {
    if (!f.used) continue;
    for (std::size_t i = f.first; i < f.first + f.count; ++i) {
      const double v = value((two ? f.off2 : f.off1) + i * step);
      if (!std::isfinite(v) || std::fabs(v) > kLimit || (v != 0 && std::fabs(v) < kTiny)) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", v);
        return "its header's " + std::string(f.name) + "[" + std::to_string(i) + "] is " + text +
               "; spacing and orientation values must be 0 or between 1e-20 and 1e15 in "
               "magnitude (the header is corrupt)";
      }
    }
  }
  return {};
}

}  // namespace

StreamChecker::StreamChecker(const fs::path& file) : f_(file, std::ios::binary) {}

// The stream is inflated in 256 KiB pieces (zlib or gzip, as MetaIO and the nifti library
// accept; gzip members in a row too), the output counted and dropped.
std::string StreamChecker::check(std::uint64_t offset, std::uint64_t bytes, std::uint64_t want,
                                 std::uint64_t limit) {
  constexpr std::size_t kChunk = std::size_t{1} << 18;
  in_.resize(kChunk);
  out_.resize(kChunk);
  f_.clear();
  f_.seekg(static_cast<std::streamoff>(offset));
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return "zlib could not start (out of memory)";
  std::uint64_t left = bytes, produced = 0;
  std::string broken;
  bool ended = false;
  while (broken.empty()) {
    if (z.avail_in == 0) {
      if (left == 0) break;
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, kChunk));
      f_.read(reinterpret_cast<char*>(in_.data()), static_cast<std::streamsize>(n));
      if (f_.gcount() != static_cast<std::streamsize>(n)) {
        broken = "its compressed data is truncated (the file ends inside it)";
        break;
      }
      left -= n;
      z.next_in = in_.data();
      z.avail_in = static_cast<uInt>(n);
    }
    z.next_out = out_.data();
    z.avail_out = static_cast<uInt>(kChunk);
    const int ret = inflate(&z, Z_NO_FLUSH);
    produced += static_cast<std::uint64_t>(z.next_out - out_.data());
    if (ret == Z_STREAM_END) {
      ended = true;
      if (produced >= want || (z.avail_in == 0 && left == 0)) break;
      inflateReset(&z);  // another gzip member follows
      ended = false;
    } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
      broken = "its compressed data is corrupt (zlib: " +
               std::string(z.msg != nullptr ? z.msg : "error " + std::to_string(ret)) + ", " +
               std::to_string(produced) + " bytes out" +
               (want > 0 ? "; the header announces " + std::to_string(want) : std::string()) + ")";
    } else if (produced >= limit) {
      ended = true;
      break;
    }
  }
  inflateEnd(&z);
  if (!broken.empty()) return broken;
  if (produced < want) {
    return "its compressed data holds " + std::to_string(produced) +
           " bytes where the header announces " + std::to_string(want) +
           " (the file is truncated or corrupt)";
  }
  if (!ended) {
    return "its compressed data is truncated or corrupt (its stream does not end before the "
           "file does; " +
           std::to_string(produced) + " bytes came out)";
  }
  return {};
}

std::string check_structure(const std::string& format, const fs::path& path) {
  if (format == "PNG") return check_png(path);
  if (format == "JPEG") return check_jpeg(path);
  if (format == "NIfTI") return check_nifti_geometry(path);
  if (format == "MetaImage") return check_meta_header(path);
  if (format == "TIFF") return check_tiff_tags(path.string());
  return {};
}

std::string check_data_size(const std::string& format, const fs::path& path,
                            std::uint64_t data_bytes) {
  if (format == "MetaImage") return check_meta(path, data_bytes);
  if (format == "NIfTI") return check_nifti(path, data_bytes);
  if (format == "TIFF") return check_tiff_capacity(path.string());
  return {};
}

bool has_stream(const std::string& format, const fs::path& path) {
  if (format == "NIfTI") return lower(path.filename().string()).ends_with(".gz");
  if (format == "MetaImage") return parse_meta(path).compressed;
  return format == "TIFF";  // whether a page is Deflate-compressed: check_tiff_streams looks
}

std::string check_stream(const std::string& format, const fs::path& path,
                         std::uint64_t data_bytes) {
  if (format == "TIFF") return check_tiff_streams(path.string());
  if (format == "MetaImage") {
    const MetaHeader h = parse_meta(path);
    if (!h.compressed) return {};
    const MetaStream m = meta_stream(path, h, data_bytes);
    if (m.file.empty()) return {};
    return check_inflate(m.file, m.offset, m.bytes, data_bytes);
  }
  if (format == "NIfTI" && lower(path.filename().string()).ends_with(".gz")) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) return "it cannot be opened as gzip";
    unsigned char hdr[540] = {};
    const int got = gzread(gz, hdr, sizeof hdr);
    gzclose(gz);
    const auto off = nifti_offset(hdr, got > 0 ? static_cast<std::size_t>(got) : 0);
    if (!off) return "it is corrupt (no NIfTI header inside the gzip stream)";
    const std::uint64_t stored =
        nifti_data_bytes(hdr, static_cast<std::size_t>(std::max(got, 0))).value_or(data_bytes);
    std::error_code ec;
    const std::uint64_t size = fs::file_size(path, ec);
    return check_inflate(path, 0, size, *off + stored);
  }
  return {};
}

std::optional<RawData> raw_data(const std::string& format, const fs::path& path,
                                std::uint64_t data_bytes) {
  if (format == "MetaImage") return meta_data(path, data_bytes);
  if (format == "NRRD") return nrrd_data(path, data_bytes);
  return std::nullopt;
}

std::optional<fs::path> detached_data_file(const fs::path& header) {
  std::error_code ec;
  if (!fs::is_regular_file(header, ec)) return std::nullopt;
  std::string ext = lower(header.extension().string());
  if (ext == ".mhd" || ext == ".mha") {
    const MetaHeader h = parse_meta(header);
    const auto data = meta_data_file(header, h);
    if (!data || data->local || !single_file(h.data_file)) return std::nullopt;
    return data->file;
  }
  if (ext != ".nhdr" && ext != ".nrrd") return std::nullopt;
  std::ifstream f(header, std::ios::binary);
  std::string line;
  if (!std::getline(f, line) || line.rfind("NRRD", 0) != 0) return std::nullopt;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    const auto colon = line.find(": ");
    if (line[0] == '#' || colon == std::string::npos) continue;
    std::string key = lower(line.substr(0, colon));
    key.erase(std::remove(key.begin(), key.end(), ' '), key.end());
    if (key == "datafile") {
      const std::string name = line.substr(colon + 2);
      if (!single_file(name)) return std::nullopt;
      return header.parent_path() / fs::u8path(name);
    }
  }
  return std::nullopt;
}

}  // namespace gpix::io::detail
