// The unit of a file's spacing and origin, per format (gpix/io.h, Metadata::unit): what ITK
// gives, what it leaves out (NRRD's space units, NIfTI's xyzt_units on writing), and the
// conversions into the units a format can name.
#include <itkIOCommon.h>
#include <itkImageIOBase.h>
#include <itkMetaDataObject.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gpix/error.h"
#include "io_shared.h"
#include "tiff.h"

namespace gpix::io::detail {
namespace fs = std::filesystem;

namespace {

std::vector<double> reversed(const std::vector<double>& v) {
  return {v.rbegin(), v.rend()};
}

std::string dict_string(itk::ImageIOBase& io, const char* key) {
  std::string v;
  itk::ExposeMetaData<std::string>(io.GetMetaDataDictionary(), key, v);
  return v;
}

// The quoted strings of a NRRD header's "space units" (or, for files with "spacings", its
// per-axis "units") field; empty when it has neither.
std::vector<std::string> nrrd_units(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::string line, space_units, units;
  bool magic = true;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (magic) {
      magic = false;
      continue;
    }
    if (line.empty()) break;
    if (line.rfind("space units:", 0) == 0) space_units = line.substr(12);
    if (line.rfind("units:", 0) == 0) units = line.substr(6);
  }
  const std::string& v = space_units.empty() ? units : space_units;
  std::vector<std::string> out;
  for (std::size_t at = v.find('"'); at != std::string::npos;) {
    const std::size_t end = v.find('"', at + 1);
    if (end == std::string::npos) break;
    out.push_back(v.substr(at + 1, end - at - 1));
    at = v.find('"', end + 1);
  }
  return out;
}

// NIfTI's space unit codes (nifti1.h: NIFTI_UNITS_METER, _MM, _MICRON) and the factor ITK 5.2
// applied to the spacing it read (it gives millimetres, but leaves the origin in the file's unit).
struct NiftiUnit {
  int code;
  const char* unit;
  double itk_scale;
};
constexpr NiftiUnit kNiftiUnits[] = {{1, "m", 1e3}, {2, "mm", 1.0}, {3, "um", 1e-3}};

}  // namespace

Metadata metadata_of(itk::ImageIOBase& io, int ndim, const Format& format, const fs::path& path,
                     std::vector<std::string>* notes) {
  std::vector<double> sp, org, dir;
  for (int i = 0; i < ndim; ++i) {
    sp.push_back(io.GetSpacing(static_cast<unsigned>(i)));
    org.push_back(io.GetOrigin(static_cast<unsigned>(i)));
  }
  const auto n = static_cast<std::size_t>(ndim);
  dir.assign(n * n, 0.0);
  for (std::size_t c = 0; c < n; ++c) {
    const std::vector<double> col = io.GetDirection(static_cast<unsigned>(c));
    for (std::size_t r = 0; r < n && r < col.size(); ++r)
      dir[(n - 1 - r) * n + (n - 1 - c)] = col[r];
  }
  std::string unit;
  const auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  if (format.name == "TIFF" && std::string(io.GetNameOfClass()) == "TIFFImageIO") {
    // ITK's reader (colour, palette files) knows only resolutions in inches or centimetres.
    const TiffCalibration c =
        tiff_calibration(str(path), ndim > 2 ? io.GetDimensions(2) : std::size_t{1});
    for (std::size_t i = 0; i < n && i < 3; ++i) {
      sp[i] = c.spacing[i];
      org[i] = c.origin[i];
    }
    unit = c.unit;
    for (const auto& s : c.notes) note(s);
  } else if (format.name == "TIFF" || format.name == "MetaImage" || format.name == "JPEG") {
    unit = normalise_unit(dict_string(io, kUnitKey));
    const std::string notes_text = dict_string(io, kNotesKey);
    for (std::size_t at = 0; at < notes_text.size();) {
      const std::size_t end = std::min(notes_text.find('\n', at), notes_text.size());
      note(notes_text.substr(at, end - at));
      at = end + 1;
    }
  } else if (format.name == "NIfTI") {
    // A header that scales its values: ITK returns slope * v + inter as a float, whatever the
    // stored type; said, so that a user who wrote int16 knows why floats came back.
    const std::string slope = dict_string(io, "scl_slope"), inter = dict_string(io, "scl_inter");
    const double a = slope.empty() ? 1.0 : std::atof(slope.c_str());
    const double b = inter.empty() ? 0.0 : std::atof(inter.c_str());
    if (a != 0.0 && (a != 1.0 || b != 0.0)) {
      note("the NIfTI header scales the stored values: read as " + slope + " * v + " +
           (inter.empty() ? std::string("0") : inter) + " (scl_slope, scl_inter)");
    }
    const std::string text = dict_string(io, "xyzt_units");
    const int code = text.empty() ? 0 : std::atoi(text.c_str()) & 7;
    for (const NiftiUnit& u : kNiftiUnits) {
      if (u.code != code) continue;
      unit = u.unit;
      for (double& s : sp) s /= u.itk_scale;
    }
  } else if (format.name == "NRRD") {
    const std::vector<std::string> units = nrrd_units(path);
    for (std::size_t i = 0; i < units.size(); ++i) {
      if (normalise_unit(units[i]) != normalise_unit(units[0])) {
        std::string all;
        for (const auto& u : units) all += (all.empty() ? "\"" : " \"") + u + "\"";
        note("the NRRD space units differ per axis (" + all +
             "); gpix keeps one unit for every axis, so the spacing is read without a unit");
        unit.clear();
        break;
      }
      unit = normalise_unit(units[i]);
    }
  }
  Metadata m;
  m.spacing = reversed(sp);
  m.origin = reversed(org);
  m.direction = dir;
  m.unit = unit;
  m.labels = marked_labels(io.GetMetaDataDictionary());
  // The channel mark, where it is the plane count of a 3D image (a file from elsewhere may
  // carry the key after a crop); otherwise the planes are z, said in the notes.
  if (const std::string v = dict_string(io, kChannelsKey);
      !v.empty() && keeps_channels(format.name)) {
    char* end = nullptr;
    const long long c = std::strtoll(v.c_str(), &end, 10);
    const bool number = end != v.c_str() && *end == '\0';
    if (number && c > 1 && ndim == 3 && static_cast<long long>(io.GetDimensions(2)) == c) {
      m.channels = static_cast<int>(c);
      // Their colours where there is one a channel (others are left out, with a note).
      if (const std::string colours = dict_string(io, kColoursKey); !colours.empty()) {
        m.channel_colours = parse_colours(colours);
        if (m.channel_colours.size() != static_cast<std::size_t>(c)) {
          m.channel_colours.clear();
          note(std::string(kColoursKey) + "=" + colours + " is not one colour for each of the " +
               std::to_string(c) + " channels: the channels get the viewer's colours");
        }
      }
    } else if (!(number && c == 1)) {
      note(std::string(kChannelsKey) + "=" + v + " does not match the image's " +
           std::to_string(ndim) + "D shape (" +
           (ndim == 3 ? std::to_string(io.GetDimensions(2)) : std::string("no")) +
           " planes): its planes are read as z slices");
    }
  }
  return m;
}

StoredUnit stored_unit(const fs::path& path, const Format& format, const std::string& unit) {
  for (char c : unit) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '=') {
      fail(path, "cannot be written: the unit '" + unit +
                     "' holds a control character, a quote or '=', which no header can keep");
    }
  }
  // The units a format can name (smallest first); another length becomes the largest of them
  // that is not larger than it (nm -> um, cm -> mm, inch -> mm), so the numbers stay readable.
  std::vector<std::string> names;
  if (format.name == "MetaImage") names = {"um", "mm", "cm"};
  if (format.name == "NIfTI") names = {"um", "mm", "m"};
  if (names.empty() || unit.empty()) return {unit, 1.0};
  for (const auto& u : names) {
    if (u == unit) return {unit, 1.0};
  }
  const double m = metres_per(unit);
  if (m == 0) {
    std::string list;
    for (const auto& u : names) list += (list.empty() ? "" : ", ") + u;
    fail(path, "cannot be written: " + format.name + " names the unit of its spacing in " + list +
                   " only, and '" + unit +
                   "' is not a length gpix can convert; use TIFF or NRRD to keep it");
  }
  std::string to = names.front();
  for (const auto& u : names) {
    if (metres_per(u) <= m) to = u;
  }
  return {to, m / metres_per(to)};
}

void prepare_unit(itk::ImageIOBase& io, const Format& format, const std::string& unit) {
  if (unit.empty() || (format.name != "TIFF" && format.name != "MetaImage")) return;
  itk::EncapsulateMetaData<std::string>(io.GetMetaDataDictionary(), kUnitKey, unit);
}

void finish_unit(const fs::path& file, const fs::path& target, const Format& format,
                 const std::string& unit, int ndim) {
  if (format.name == "NRRD" && !unit.empty()) {
    // ITK's NrrdImageIO has no field for space units: the header gets its line before the
    // empty line that ends it, and the rest (attached data) is copied after it; a detached
    // header (.nhdr) ends with the file and gets it at its end.
    const fs::path tmp = fs::path(file).concat(".units");
    {
      std::ifstream in(file, std::ios::binary);
      std::ofstream out(tmp, std::ios::binary);
      std::string line;
      const auto units_line = [&] {
        out << "space units:";
        for (int i = 0; i < ndim; ++i) out << " \"" << unit << '"';
        out << '\n';
      };
      bool done = false;
      bool added = false;
      while (!done && std::getline(in, line)) {
        // Before "data file", which may list file names after it, or the end of the header.
        done = line.empty() || line == "\r";
        if (!added && (done || line.rfind("data file:", 0) == 0)) {
          units_line();
          added = true;
        }
        out << line << '\n';
      }
      if (!added) units_line();
      if (done && in.peek() != std::char_traits<char>::eof()) out << in.rdbuf();
      out.close();
      if (!out) fail(target, "cannot be written: adding the space units failed (disk full?)");
    }
    fs::rename(tmp, file);
    return;
  }
  if (format.name != "NIfTI") return;
  int code = 0;
  for (const NiftiUnit& u : kNiftiUnits) {
    if (unit == u.unit) code = u.code;
  }
  // ITK 5.2 always writes millimetres and seconds (NIFTI_UNITS_MM | NIFTI_UNITS_SEC), also
  // for spacing without a unit (then NIFTI_UNITS_UNKNOWN, 0): the header's xyzt_units (NIfTI-1:
  // byte 123; NIfTI-2: the int at byte 500) is set here, in place for .nii, by rewriting the stream
  // for .nii.gz.
  const auto patch = [&](unsigned char* h, std::size_t n) {
    std::int32_t size = 0;
    std::memcpy(&size, h, 4);
    const bool swapped = size != 348 && size != 540;
    if (swapped)
      size = static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(size)));
    if (size == 348 && n >= 348) {
      h[123] = static_cast<unsigned char>((h[123] & ~7) | code);
    } else if (size == 540 && n >= 540) {
      std::uint32_t v = 0;
      std::memcpy(&v, h + 500, 4);
      if (swapped) v = __builtin_bswap32(v);
      v = (v & ~7u) | static_cast<std::uint32_t>(code);
      if (swapped) v = __builtin_bswap32(v);
      std::memcpy(h + 500, &v, 4);
    } else {
      fail(target, "cannot be written: ITK wrote a NIfTI header of " + std::to_string(size) +
                       " bytes, neither NIfTI-1 (348) nor NIfTI-2 (540)");
    }
  };
  if (file.extension() != ".gz") {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char h[540] = {};
    f.read(reinterpret_cast<char*>(h), sizeof h);
    const auto n = static_cast<std::size_t>(f.gcount());
    patch(h, n);
    f.clear();
    f.seekp(0);
    f.write(reinterpret_cast<const char*>(h), static_cast<std::streamsize>(n));
    f.close();
    if (!f) fail(target, "cannot be written: setting the NIfTI unit failed");
    return;
  }
  gzFile g = gzopen(file.c_str(), "rb");
  if (!g) fail(target, "cannot be written: the NIfTI file ITK wrote cannot be opened again");
  std::vector<unsigned char> bytes;
  std::vector<unsigned char> buf(1 << 20);
  int got = 0;
  while ((got = gzread(g, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    bytes.insert(bytes.end(), buf.begin(), buf.begin() + got);
  gzclose(g);
  if (got < 0) fail(target, "cannot be written: the NIfTI file ITK wrote cannot be read again");
  patch(bytes.data(), bytes.size());
  const fs::path tmp = fs::path(file).concat(".units");
  gzFile o = gzopen(tmp.c_str(), "wb6");
  bool ok = o != nullptr;
  for (std::size_t at = 0; ok && at < bytes.size(); at += buf.size()) {
    const auto chunk = static_cast<unsigned>(std::min(buf.size(), bytes.size() - at));
    ok = gzwrite(o, bytes.data() + at, chunk) == static_cast<int>(chunk);
  }
  if (o && gzclose(o) != Z_OK) ok = false;
  if (!ok) fail(target, "cannot be written: setting the NIfTI unit failed (disk full?)");
  fs::rename(tmp, file);
}

}  // namespace gpix::io::detail
