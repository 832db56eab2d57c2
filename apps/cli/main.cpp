// gpix: the command line tool.
//   gpix devices [--json]
//   gpix info <source> [--shape Z,Y,X] [--dtype T] [--channels C] [--device NAME] [--json]
//   gpix filters [--json | --markdown]
//   gpix run FILTER INPUT... [OUTPUT] [--PARAM VALUE ...] [--device NAME] [--json]
//            [--tiled] [--tile-budget SIZE] [--tile-workers N] [--device NAME,NAME...]
// Each command is one function in kCommands below; adding a command is adding a row.
#include <unistd.h>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include <algorithm>
#include <cmath>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "args.h"
#include "gpix/gpix.h"
#include "gpix/samples.h"
#include "json.h"
#if GPIX_CLI_HAVE_IO
#include <QJsonArray>
#include <filesystem>

#include "gpix/io.h"
#include "gpix/kept_axes.h"
#include "gpix/raw.h"
#include "gpix/slab_files.h"
#endif

namespace {

using namespace gpix;

void print(const QString& s) {
  const QByteArray b = s.toUtf8();
  std::fwrite(b.constData(), 1, static_cast<std::size_t>(b.size()), stdout);
}

void print_json(const QJsonObject& o) {
  print(QString::fromUtf8(QJsonDocument(o).toJson()));
}

QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

int cmd_devices(const QCommandLineParser& p) {
  const auto& devs = devices();
  if (p.isSet("json")) {
    QJsonObject o;
    QJsonArray backends, list;
    for (const auto& s : backend_status()) backends.append(cli::to_json(s));
    for (const auto& d : devs) list.append(cli::to_json(d.info()));
    o["backends"] = backends;
    o["devices"] = list;
    if (!devs.empty()) {
      const DeviceChoice c = choose_device();
      o["default"] = c.device.info().index;
      o["default_reason"] = qs(c.reason);
    }
    print_json(o);
    return 0;
  }
  print("Backends:\n");
  for (const auto& s : backend_status()) {
    print(QString("  %1 %2: %3\n")
              .arg(qs(name(s.backend)), -7)
              .arg(s.available ? "available" : "unavailable")
              .arg(qs(s.detail)));
  }
  print("Devices:\n");
  if (devs.empty()) print("  none\n");
  for (const auto& d : devs) {
    const DeviceInfo& i = d.info();
    print(QString("  [%1] %2\n       %3, %4 compute units, %5 memory (largest allocation %6), "
                  "fp64 %7, images %8\n       %9; driver %10\n")
              .arg(i.index)
              .arg(qs(d.label()), qs(name(i.type)))
              .arg(i.compute_units)
              .arg(qs(human_bytes(i.global_memory)), qs(human_bytes(i.max_allocation)))
              .arg(i.fp64 ? "yes" : "no", i.images ? "yes" : "no")
              .arg(qs(i.api_version), qs(i.driver_version)));
  }
  if (!devs.empty()) {
    const DeviceChoice c = choose_device();
    print(QString("Default: [%1] %2 (%3)\n")
              .arg(c.device.info().index)
              .arg(qs(c.device.label()), qs(c.reason)));
  }
  return 0;
}

// --channels' channel, from 0: a number, or C<n> (C1, C2, ...: the channel as the viewer's
// layers, "name [C2]", and Fiji name it, from 1). Nothing for luminance, split, indices or z.
std::optional<int> channel_index(const QString& c) {
  bool is_index = false;
  const int index = c.toInt(&is_index);
  if (is_index) return index;
  if (c.size() > 1 && (c[0] == QLatin1Char('C') || c[0] == QLatin1Char('c'))) {
    const int named = c.mid(1).toInt(&is_index);
    if (!is_index) return std::nullopt;
    if (named < 1) {
      throw InvalidArgument("--channels " + c.toStdString() +
                            ": channels named C<n> count from C1 (or give the number, from 0)");
    }
    return named - 1;
  }
  return std::nullopt;
}

#if GPIX_CLI_HAVE_IO
constexpr bool kHaveIo = true;
// A file's calibration, which `gpix run` carries from its first input to its output.
using FileMetadata = io::Metadata;

QJsonArray numbers(const std::vector<double>& v) {
  QJsonArray a;
  for (double d : v) a.append(d);
  return a;
}

QString joined(const std::vector<double>& v) {
  QStringList parts;
  for (double d : v) parts << QString::number(d, 'g', 10);
  return parts.join(", ");
}

io::ReadOptions read_options(const QCommandLineParser& p) {
  io::ReadOptions o;
  if (!p.isSet("channels")) return o;
  const QString c = p.value("channels");
  if (c == "z") return o;  // the planes of a multi-channel file as z slices (read_file)
  if (const std::optional<int> index = channel_index(c)) {
    o.channels = io::Channels::channel;
    o.channel = *index;
  } else if (c == "luminance") {
    o.channels = io::Channels::luminance;
  } else if (c == "split") {
    o.channels = io::Channels::split;
  } else if (c == "indices") {
    o.palette_indices = true;
  } else {
    throw InvalidArgument(
        "--channels takes luminance, split, indices, z, a channel number (from 0) or C<n> "
        "(from C1), not '" +
        c.toStdString() + "'");
  }
  return o;
}

// Reads an image file through gpix_io; its metadata goes to JSON and text.
void read_file(const QString& source, const QCommandLineParser& p, HostArray& host,
               QJsonObject& meta, QString& text, FileMetadata* calibration,
               const io::ReadOptions* given = nullptr) {
  const io::ReadOptions options = given ? *given : read_options(p);
  io::Image img = io::read(std::filesystem::u8path(source.toStdString()), options);
  // A file whose planes are channels: --channels N reads channel N alone (io::read picks it,
  // also from a hyperstack), --channels z its planes as z slices (filters then work across them).
  if (img.meta.channels > 1 && p.isSet("channels") && p.value("channels") == "z")
    img.meta.channels = 1;
  host = img.pixels;
  if (calibration) {
    *calibration = img.meta;
    // Colour pixels split along the first axis (--channels split) are channels as well.
    if (img.file_components > 1 && host.shape().ndim() == 3 &&
        host.shape().depth() == std::size_t(img.file_components)) {
      calibration->channels = img.file_components;
    }
  }
  meta["format"] = qs(img.format);
  meta["file_components"] = img.file_components;
  meta["spacing"] = numbers(img.meta.spacing);
  meta["origin"] = numbers(img.meta.origin);
  meta["direction"] = numbers(img.meta.direction);
  meta["unit"] = qs(img.meta.unit);
  meta["labels"] = img.meta.labels;
  text =
      "format: " + qs(img.format) + "\nspacing: " + joined(img.meta.spacing) +
      (img.meta.spacing.size() == 3   ? " (z, y, x)"
       : img.meta.spacing.size() == 2 ? " (y, x)"
                                      : " (x)") +
      "\norigin: " + joined(img.meta.origin) + "\nunit: " +
      (img.meta.unit.empty() ? QStringLiteral("none (the file does not say)") : qs(img.meta.unit)) +
      "\n";
  if (img.meta.labels) text += "pixels: labels (marked by gpix)\n";
  meta["channels"] = img.meta.channels;
  if (img.meta.channels > 1) {
    text += "channels: " + QString::number(img.meta.channels) +
            " (the first axis; `gpix run` filters them one by one)\n";
    if (!img.meta.channel_colours.empty()) {
      QJsonArray colours;
      QStringList names;
      for (const std::uint32_t c : img.meta.channel_colours) {
        const QString hex = QStringLiteral("#%1").arg(c & 0xffffffu, 6, 16, QLatin1Char('0'));
        colours.append(hex);
        names << hex;
      }
      meta["channel_colours"] = colours;
      text += "channel colours: " + names.join(' ') + "\n";
    }
  }
  // The decoder's remarks on a file it could read (libtiff's), on stdout with the card.
  if (!img.warnings.empty()) {
    QJsonArray w;
    for (const auto& s : img.warnings) {
      w.append(qs(s));
      text += "warning: " + qs(s) + "\n";
    }
    meta["warnings"] = w;
  }
}
// The channels of an input file (io::Metadata::channels), 1 for anything else.
int channel_count(const FileMetadata& m) {
  return m.channels;
}
#else
constexpr bool kHaveIo = false;
struct FileMetadata {};
int channel_count(const FileMetadata&) {
  return 1;
}
void read_file(const QString&, const QCommandLineParser&, HostArray&, QJsonObject&, QString&,
               FileMetadata*, const void* = nullptr) {}
#endif

// Set by `gpix run` for a filter with a dtype parameter (convert): --dtype is then that
// parameter, not a raw input's dtype.
bool g_dtype_is_a_parameter = false;

#if GPIX_CLI_HAVE_IO
// A raw file's layout: from --shape and --dtype, or without them from the file's sidecar
// (PATH.json) or name (NAME_ZxYxX_DTYPE.raw), as gpix_io reads it.
io::RawLayout raw_layout(const std::filesystem::path& file, const QCommandLineParser& p) {
  if (g_dtype_is_a_parameter) {
    // --dtype belongs to the filter (convert): the file's sidecar or name says the layout.
    try {
      return io::raw_layout(file);
    } catch (const IoError&) {
      throw InvalidArgument("'" + file.filename().string() +
                            "' does not say its shape and dtype, and here --dtype is the "
                            "filter's (the output's dtype): give the file a sidecar '" +
                            file.filename().string() +
                            ".json' such as {\"shape\": [Z, Y, X], \"dtype\": \"uint16\"}, "
                            "or a name NAME_ZxYxX_DTYPE.raw (e.g. cells_32x256x256_u16.raw)");
    }
  }
  if (!p.isSet("shape") && !p.isSet("dtype")) {
    try {
      return io::raw_layout(file);
    } catch (const IoError& e) {
      // Nothing says the layout: a usage error, as a missing option always was.
      throw InvalidArgument(std::string(e.what()) + "; a raw file needs --shape Z,Y,X (or Y,X " +
                            "or X) and --dtype (" + dtype_names() + ") when it does not say them");
    }
  }
  if (!p.isSet("shape") || !p.isSet("dtype")) {
    throw InvalidArgument("a raw file needs both --shape Z,Y,X (or Y,X or X) and --dtype (" +
                          dtype_names() + ")");
  }
  const Shape shape = cli::parse_shape(p.value("shape"));
  const auto dtype = parse_dtype(p.value("dtype").toStdString());
  if (!dtype) {
    throw InvalidArgument("unknown dtype '" + p.value("dtype").toStdString() + "'; use one of " +
                          dtype_names());
  }
  return {shape, *dtype};
}
#endif

// Reads a raw file through gpix_io, the one implementation the gpix plugin uses too.
HostArray read_raw(const QString& path, const QCommandLineParser& p) {
#if GPIX_CLI_HAVE_IO
  const auto file = std::filesystem::u8path(path.toStdString());
  return io::read_raw(file, raw_layout(file, p));
#else
  (void)p;
  throw InvalidArgument("'" + path.toStdString() +
                        "': this build of gpix has no gpix_io, which reads raw files and every "
                        "other format; only samples ('sample', 'sample:NAME') are available");
#endif
}

// The channel --channels N asks for where N > 0, else -1 (none, channel 0, luminance, ...).
int asked_channel(const QCommandLineParser& p) {
  if (!p.isSet("channels")) return -1;
  const std::optional<int> n = channel_index(p.value("channels"));
  return n && *n > 0 ? *n : -1;
}

// --channels N (N > 0) over the inputs of one run: each input that has channels gives channel
// N; where a run has several inputs, one of one sample a pixel (a plain mask beside a
// hyperstack) is read whole. At least one input must have the channel (finish()).
struct ChannelPick {
  bool several = false;        // the run has more than one input
  bool taken = false;          // an input gave channel N
  std::exception_ptr refusal;  // the first input's refusal to give it
  void finish() const {
    if (!taken && refusal) std::rethrow_exception(refusal);
  }
};

// --shape and --dtype describe a raw file's pixels: given with a sample or a file that says its
// own (a TIFF), they did nothing (--dtype) or read the TIFF's bytes as raw (--shape).
void check_raw_options(const QString& source, const QCommandLineParser& p) {
  const bool dtype = p.isSet("dtype") && !g_dtype_is_a_parameter;
  if (!p.isSet("shape") && !dtype) return;
  const bool sample = source == "sample" || source.startsWith("sample:");
  bool known = false;
#if GPIX_CLI_HAVE_IO
  try {
    (void)io::format_for(std::filesystem::u8path(source.toStdString()));
    known = true;
  } catch (const IoError&) {
  }
#endif
  if (!sample && !known) return;
  throw InvalidArgument(std::string(p.isSet("shape") ? "--shape" : "--dtype") +
                        " describes a raw file's pixels; '" + source.toStdString() + "' is " +
                        (sample ? "a sample" : "a file") +
                        " that says its own shape and dtype (leave the option out; `gpix run "
                        "convert IN OUT --dtype T` changes a dtype)");
}

// Loads a source for info and run: a sample, a raw file, or a file through gpix_io.
HostArray load_source(const QString& source, const QCommandLineParser& p, QString& label,
                      QJsonObject& file_meta, QString& file_text,
                      FileMetadata* calibration = nullptr, ChannelPick* pick = nullptr) {
  check_raw_options(source, p);
  const int channel = asked_channel(p);
  const bool plain_kind = source == "sample" || source.startsWith("sample:") || p.isSet("shape") ||
                          source.endsWith(".raw", Qt::CaseInsensitive) || !kHaveIo;
  if (channel > 0 && plain_kind) {
    // Samples and raw files are one image of one sample a pixel: no channel to pick.
    const std::string none = "'" + source.toStdString() +
                             "' is one image with no channels: " + "--channels " +
                             p.value("channels").toStdString() + " picks nothing";
    if (!pick || !pick->several) throw InvalidArgument(none);
    if (!pick->refusal) pick->refusal = std::make_exception_ptr(InvalidArgument(none));
  }
#if GPIX_CLI_HAVE_IO
  if (channel > 0 && !plain_kind && pick && pick->several) {
    HostArray host;
    label = source;
    try {
      read_file(source, p, host, file_meta, file_text, calibration);
      pick->taken = true;
      return host;
    } catch (const IoError&) {
      const std::exception_ptr refusal = std::current_exception();
      // Read whole, a plain file gives its image; one with channels or colour (which the
      // default options refuse) keeps its own refusal of channel N.
      FileMetadata whole_meta;
      const io::ReadOptions whole;
      try {
        read_file(source, p, host, file_meta, file_text, &whole_meta, &whole);
      } catch (const IoError&) {
        std::rethrow_exception(refusal);
      }
      if (whole_meta.channels > 1) std::rethrow_exception(refusal);
      if (calibration) *calibration = whole_meta;
      if (!pick->refusal) pick->refusal = refusal;
      return host;
    }
  }
#endif
  HostArray host;
  label = source;
  if (source == "sample" || source.startsWith("sample:")) {
    const std::string sname =
        source == "sample" ? sample_names().front() : source.mid(7).toStdString();
    Sample s = sample(sname);
    host = s.image;
    label = "sample:" + qs(s.name);
  } else if (p.isSet("shape") || source.endsWith(".raw", Qt::CaseInsensitive) || !kHaveIo) {
    host = read_raw(source, p);
  } else {
    read_file(source, p, host, file_meta, file_text, calibration);
    if (pick && channel > 0) pick->taken = true;
  }
  return host;
}

// What the reader said of an input of `gpix run` (a calibration it could not take, libtiff's
// remarks), on stderr, as `gpix info` shows it with the card: the output carries the
// calibration as read, so the user learns why it differs from what the file meant.
void print_warnings(const QString& source, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) {
    std::fprintf(stderr, "gpix: %s: warning: %s\n", source.toLocal8Bit().constData(), w.c_str());
  }
}
void print_warnings(const QString& source, const QJsonObject& file_meta) {
  std::vector<std::string> w;
  for (const auto& v : file_meta["warnings"].toArray()) w.push_back(v.toString().toStdString());
  print_warnings(source, w);
}

// --device's device: one that names none (while there are devices) is the command line's
// mistake, an InvalidArgument (exit code 2) as an unknown filter is.
Device named_device(const std::string& query) {
  try {
    return select_device(query);
  } catch (const DeviceError& e) {
    if (devices().empty()) throw;
    throw InvalidArgument(e.what());
  }
}

Device chosen_device(const QCommandLineParser& p) {
  return p.isSet("device") ? named_device(p.value("device").toStdString()) : default_device();
}

int cmd_info(const QCommandLineParser& p, const QStringList& args) {
  if (args.size() < 2) {
    throw InvalidArgument(
        "usage: gpix info <source>, where source is 'sample', 'sample:NAME' "
        "or a raw file with --shape and --dtype");
  }
  QString label, file_text;
  QJsonObject file_meta;  // format, spacing, origin, direction of files read through gpix_io
  const HostArray host = load_source(args[1], p, label, file_meta, file_text);
  const Device dev = chosen_device(p);
  const Array a = Array::push(host, dev);
  const Card c = card(a);
  if (p.isSet("json")) {
    QJsonObject o = cli::to_json(c);
    o["source"] = label;
    for (auto it = file_meta.begin(); it != file_meta.end(); ++it) o[it.key()] = it.value();
    print_json(o);
  } else {
    print("source: " + label + "\n" + file_text + qs(to_text(c)));
  }
  return 0;
}

int cmd_devices_args(const QCommandLineParser& p, const QStringList&) {
  return cmd_devices(p);
}

QString param_range(const ParamSpec& s) {
  switch (s.type) {
    case ParamType::choice: {
      QStringList c;
      for (const auto& x : s.choices) c << qs(x);
      return c.join(" | ");
    }
    case ParamType::boolean:
      return "true | false";
    default:
      break;
  }
  return qs(Scalar(s.min).str()) + " to " + qs(Scalar(s.max).str()) +
         (s.unit.empty() ? "" : " " + qs(s.unit));
}

QString param_default(const ParamSpec& s) {
  if (s.type == ParamType::choice) return qs(s.default_choice);
  if (s.type == ParamType::boolean) return s.default_value != 0 ? "true" : "false";
  return qs(Scalar(s.default_value).str());
}

QString dtype_list(const std::vector<DType>& v) {
  if (v.size() == kAllDTypes.size()) return "all";
  QStringList l;
  for (DType t : v) l << qs(short_name(t));
  return l.join(" ");
}

// gpix filters [--json | --markdown]: the catalog (docs/FILTERS.md is the --markdown output).
// gpix filters NAME: one filter, whole: how to run it, its parameters, what it takes and gives.
int describe_filter(const FilterInfo& f) {
  QStringList in;
  for (const auto& i : f.inputs) in << qs(i.name).toUpper();
  QString text = qs(f.name) + " (" + qs(name(f.category)) + "): " + qs(f.doc) + "\n\n" +
                 "  gpix run " + qs(f.name) + " " + in.join(" ") +
                 (f.output == OutputKind::table ? " [OUTPUT.csv]" : " OUTPUT") +
                 (f.params.empty() ? QString() : QString(" [--PARAM VALUE ...]")) + "\n\n";
  QStringList inputs;
  for (const auto& i : f.inputs) inputs << qs(i.name) + " (" + qs(name(i.kind)) + ")";
  QStringList dims;
  for (int d : f.dims) dims << QString::number(d) + "D";
  text += "Inputs: " + inputs.join(", ") + "; " + dims.join(" and ") + ", " + dtype_list(f.dtypes) +
          "\n";
  text += "Output: " + qs(name(f.output)) + ", " + qs(f.output_dtype) + "\n";
  text += "Tiled (--tiled): " +
          (f.tiles ? QString(f.folds ? "yes, folding the slabs' partial results" : "yes")
                   : "no: " + qs(f.untiled)) +
          "\n";
  if (!f.params.empty()) text += "\nParameters:\n";
  for (const auto& sp : f.params) {
    text += "  --" + qs(sp.name) + " " + param_range(sp) + ", default " + param_default(sp) +
            "\n      " + qs(sp.doc) + "\n";
  }
  print(text);
  return 0;
}

int cmd_filters(const QCommandLineParser& p, const QStringList& args) {
  if (args.size() > 2) throw InvalidArgument("usage: gpix filters [NAME] [--json | --markdown]");
  // One filter (an unknown name is refused, naming the closest).
  const FilterInfo* one = args.size() == 2 ? &filter(args[1].toStdString()) : nullptr;
  if (one && p.isSet("markdown"))
    throw InvalidArgument("--markdown writes the whole catalog: give no filter name with it");
  if (one && !p.isSet("json")) return describe_filter(*one);
  if (p.isSet("json")) {
    QJsonArray list;
    for (const auto& f : filters()) {
      if (one && f.name != one->name) continue;
      QJsonObject o;
      o["name"] = qs(f.name);
      o["category"] = qs(name(f.category));
      o["doc"] = qs(f.doc);
      QJsonArray inputs, params, dims, dtypes;
      for (const auto& i : f.inputs)
        inputs.append(QJsonObject{{"name", qs(i.name)}, {"kind", qs(name(i.kind))}});
      for (const auto& s : f.params) {
        QJsonObject po{{"name", qs(s.name)}, {"type", qs(name(s.type))}, {"doc", qs(s.doc)}};
        if (s.type == ParamType::choice) {
          QJsonArray c;
          for (const auto& x : s.choices) c.append(qs(x));
          po["choices"] = c;
          po["default"] = qs(s.default_choice);
        } else {
          po["default"] = s.default_value;
          po["min"] = s.min;
          po["max"] = s.max;
          po["unit"] = qs(s.unit);
        }
        params.append(po);
      }
      for (int d : f.dims) dims.append(d);
      for (DType t : f.dtypes) dtypes.append(qs(name(t)));
      o["inputs"] = inputs;
      o["params"] = params;
      o["dims"] = dims;
      o["dtypes"] = dtypes;
      o["output"] = qs(name(f.output));
      o["output_dtype"] = qs(f.output_dtype);
      o["layout"] = qs(name(f.layout));
      o["tiles"] = f.tiles;
      if (f.tiles) o["folds"] = f.folds;
      if (!f.tiles) o["untiled"] = qs(f.untiled);
      list.append(o);
    }
    print(QString::fromUtf8(QJsonDocument(list).toJson()));
    return 0;
  }
  if (p.isSet("markdown")) {
    QString md =
        "# gpix filters\n\nGenerated by `gpix filters --markdown` from the catalog (do not edit;\n"
        "`test_cli` checks that this file matches). " +
        QString::number(filters().size()) +
        " filters. Borders replicate the nearest pixel; a box radius r means a 2r+1 window;\n"
        "integer outputs round half to even and saturate. Every filter takes every array layout\n"
        "(padded arrays, region views, image objects) and gives the same result as on a\n"
        "contiguous copy; filters marked *(any layout)* read them without that copy. Filters\n"
        "marked *(tiles)* also run slab by slab on data larger than the device (`gpix run\n"
        "--tiled`, gpix::run_tiled) with results equal to the whole-array run; those marked\n"
        "*(folds)* depend on the whole image and combine what each slab gives (float sums and\n"
        "means of all pixels, and their standard deviation, then agree with the whole-array run\n"
        "to float64 rounding, their float64 sums being grouped otherwise).\n";
    std::optional<Category> category;
    for (const auto& f : filters()) {
      if (f.category != category) {
        category = f.category;
        md += "\n## " + qs(name(f.category)) +
              "\n\n| filter | inputs | parameters | dims | dtypes | output | semantics "
              "|\n|---|---|---|---|---|---|---|\n";
      }
      QStringList in, ps, dims;
      for (const auto& i : f.inputs) in << qs(i.name) + " (" + qs(name(i.kind)) + ")";
      for (const auto& s : f.params)
        ps << "`" + qs(s.name) + "` " + param_range(s) + ", default " + param_default(s);
      for (int d : f.dims) dims << QString::number(d) + "D";
      md += "| `" + qs(f.name) + "`" +
            (f.layout == InputLayout::any ? QString(" *(any layout)*") : QString()) +
            (f.folds   ? QString(" *(tiles, folds)*")
             : f.tiles ? QString(" *(tiles)*")
                       : QString()) +
            " | " + in.join(", ") + " | " + (ps.isEmpty() ? "-" : ps.join("; ")) + " | " +
            dims.join(" ") + " | " + dtype_list(f.dtypes) + " | " + qs(name(f.output)) + ", " +
            qs(f.output_dtype) + " | " + qs(f.doc).replace("|", "\\|") + " |\n";
    }
    print(md);
    return 0;
  }
  std::optional<Category> category;
  for (const auto& f : filters()) {
    if (f.category != category) {
      category = f.category;
      print("\n" + qs(name(f.category)) + "\n");
    }
    QStringList ps;
    for (const auto& s : f.params) ps << "--" + qs(s.name) + " " + param_default(s);
    print(QString("  %1 %2\n      %3\n").arg(qs(f.name), -26).arg(ps.join(" "), qs(f.doc)));
  }
  return 0;
}

// A table result: CSV into OUTPUT when one was given, else printed (JSON with --json).
int put_table(const QCommandLineParser& p, const FilterInfo& f, const Table& table,
              const QString* output) {
  QStringList cols;
  for (const auto& c : table.columns()) cols << qs(c);
  if (output) {
    QString csv = cols.join(",") + "\n";
    for (std::size_t r = 0; r < table.size(); ++r) {
      QStringList v;
      for (double x : table.row(r)) v << qs(Scalar(x).str());
      csv += v.join(",") + "\n";
    }
    // QSaveFile: written beside, moved into place only whole (a full disk leaves the file that
    // was there); unbuffered, as save_text in ui/src/workflow_panel.cpp says why.
    QSaveFile out(*output);
    const QByteArray bytes = csv.toUtf8();
    if (!out.open(QIODevice::WriteOnly | QIODevice::Unbuffered) ||
        out.write(bytes) != bytes.size() || !out.commit()) {
      throw IoError(
          "cannot write '" + output->toStdString() + "': " + out.errorString().toStdString(),
          output->toStdString());
    }
    return 0;
  }
  if (p.isSet("json")) {
    QJsonArray rows;
    for (std::size_t r = 0; r < table.size(); ++r) {
      const Table::Row row = table.row(r);
      QJsonObject o;
      for (std::size_t i = 0; i < row.size(); ++i) {
        o[qs(table.columns()[i])] =
            std::isfinite(row[i]) ? QJsonValue(row[i]) : QJsonValue(qs(Scalar(row[i]).str()));
      }
      rows.append(o);
    }
    print_json(QJsonObject{
        {"filter", qs(f.name)}, {"columns", QJsonArray::fromStringList(cols)}, {"rows", rows}});
    return 0;
  }
  print(cols.join("\t") + "\n");
  for (std::size_t r = 0; r < table.size(); ++r) {
    QStringList v;
    for (double x : table.row(r)) v << qs(Scalar(x).str());
    print(v.join("\t") + "\n");
  }
  return 0;
}

// An input of a tiled run: a file that streams (TIFF, MetaImage and NRRD stored raw, raw
// files) is read plane by plane; anything else is loaded whole into host memory.
// `calibration` gets a file's metadata.
std::unique_ptr<SlabSource> tiled_source(const QString& source, const QCommandLineParser& p,
                                         FileMetadata& calibration, ChannelPick& pick) {
  check_raw_options(source, p);
#if GPIX_CLI_HAVE_IO
  const bool sample = source == "sample" || source.startsWith("sample:");
  const bool as_z = p.isSet("channels") && p.value("channels") == "z";
  if (!sample && (!p.isSet("channels") || as_z)) {
    const auto file = std::filesystem::u8path(source.toStdString());
    if (p.isSet("shape") || source.endsWith(".raw", Qt::CaseInsensitive))
      return io::open_raw_slabs(file, raw_layout(file, p));
    if (auto s = io::open_slabs(file)) {
      calibration = s->metadata();
      if (as_z) calibration.channels = 1;  // the channels as z slices
      print_warnings(source, s->warnings());
      return s;
    }
  }
#endif
  QString label, text;
  QJsonObject meta;
  auto host = load_source(source, p, label, meta, text, &calibration, &pick);
  print_warnings(source, meta);
  return std::make_unique<HostArraySource>(std::move(host));
}

#if GPIX_CLI_HAVE_IO
// The output file of a tiled run, made at start() when the output's shape is known, so that it
// gets the first input's calibration where it keeps its axes (io::carried), and the label mark
// where the filter makes labels (as the whole-array run's file): written plane by plane where
// gpix_io streams the format, else collected whole and written at finish().
class OutputFile final : public SlabSink {
 public:
  OutputFile(std::filesystem::path path, io::Metadata input_meta, const Shape& input_shape,
             bool labels)
      : path_(std::move(path)),
        input_meta_(std::move(input_meta)),
        input_shape_(input_shape),
        labels_(labels) {}
  void start(const Shape& shape, DType dtype) override {
    meta_ = io::carried(input_meta_, input_shape_, shape);
    meta_.labels = labels_;
    sink_ = io::create_slabs(path_, meta_);
    target().start(shape, dtype);
  }
  void write(std::size_t from, std::size_t to, const std::byte* src) override {
    target().write(from, to, src);
  }
  std::byte* planes(std::size_t from) override { return target().planes(from); }
  void finish() override {
    target().finish();
    if (!sink_) io::write(path_, whole_.array(), meta_);
  }
  bool streamed() const { return sink_ != nullptr; }

 private:
  SlabSink& target() { return sink_ ? *sink_ : whole_; }
  std::filesystem::path path_;
  io::Metadata input_meta_, meta_;
  Shape input_shape_;
  bool labels_;
  std::unique_ptr<SlabSink> sink_;
  HostArraySink whole_;  // for outputs whose format is written whole
};
#endif

// gpix run ... --tiled: slabs of the inputs go to the device(s) (--device takes a
// comma-separated list here, each device one worker). Files that stream are read and written
// plane by plane, so neither they nor the device need to hold the whole image; others are
// read whole, or collected whole and then written.
// Before the work: an output that the run could never write is a usage error now (exit 2),
// not a failure after minutes of filtering (an unknown extension, a 3D result named .png, a
// float result named .jpg, a folder that does not exist).
void check_output(const QString& output, const FilterInfo& f, const Params& params, DType in,
                  std::size_t ndim) {
#if GPIX_CLI_HAVE_IO
  const std::optional<ResultType> r = result_type(f.name, params, in, static_cast<int>(ndim));
  if (!r) return;
  try {
    io::check_can_write(std::filesystem::u8path(output.toStdString()), r->dtype, r->ndim);
  } catch (const IoError& e) {
    throw InvalidArgument(std::string(e.what()) + " (" + f.name + " gives " +
                          std::to_string(r->ndim) + "D " + std::string(name(r->dtype)) +
                          " here); nothing was run");
  }
#else
  (void)output, (void)f, (void)params, (void)in, (void)ndim;
#endif
}

int run_tiled_cli(const QCommandLineParser& p, const QStringList& args, const FilterInfo& f,
                  const Params& params) {
  TiledOptions o;
  if (p.isSet("device")) {
    for (const QString& d : p.value("device").split(',', Qt::SkipEmptyParts))
      o.devices.push_back(named_device(d.trimmed().toStdString()));
  }
  if (p.isSet("tile-budget")) o.budget_bytes = cli::parse_bytes(p.value("tile-budget"));
  if (p.isSet("tile-workers")) {
    bool ok = false;
    const uint n = p.value("tile-workers").toUInt(&ok);
    if (!ok || n < 1 || n > 16) {
      throw InvalidArgument("--tile-workers takes 1 to 16 workers per device, not '" +
                            p.value("tile-workers").toStdString() + "'");
    }
    o.workers_per_device = n;
  }
  const qsizetype n_in = static_cast<qsizetype>(f.inputs.size());
  std::vector<std::unique_ptr<SlabSource>> sources;
  std::vector<SlabSource*> inputs;
  FileMetadata calibration;  // the first input's, carried to the output
  ChannelPick pick;
  pick.several = n_in > 1;
  for (qsizetype i = 0; i < n_in; ++i) {
    FileMetadata m;
    sources.push_back(tiled_source(args[2 + i], p, m, pick));
    if (const int c = channel_count(m); c > 1) {
      // Slabs along z would be slabs of channels, and a window across them would mix them.
      throw InvalidArgument(args[2 + i].toStdString() + " holds " + std::to_string(c) +
                            " channels, not z slices; --tiled filters a stack in slabs along z, "
                            "across them. Run it without --tiled (each channel is then filtered "
                            "on its own), read one channel (--channels N), or treat the "
                            "channels as z slices (--channels z)");
    }
    if (i == 0) calibration = m;
    inputs.push_back(sources.back().get());
  }
  pick.finish();
  const bool table = f.output == OutputKind::table;
  const bool has_output = args.size() - 2 > n_in;
  // A tiled run also streams into .raw (with its .json sidecar), which io::write does not
  // take: the sink checks that one itself.
  if (!table && !args.last().endsWith(".raw", Qt::CaseInsensitive)) {
    check_output(args.last(), f, params, inputs.front()->dtype(), inputs.front()->shape().ndim());
  }
#if GPIX_CLI_HAVE_IO
  std::unique_ptr<OutputFile> sink;
  SlabSink* output = nullptr;
  if (!table) {
    sink = std::make_unique<OutputFile>(std::filesystem::u8path(args.last().toStdString()),
                                        calibration, inputs.front()->shape(),
                                        f.output == OutputKind::labels);
    output = sink.get();
  }
#else
  SlabSink* output = nullptr;
  if (!table) throw InvalidArgument("this build of gpix has no gpix_io to write files");
#endif
  const bool bar = isatty(fileno(stderr)) != 0 && !p.isSet("json");
  if (bar) {
    o.progress = [](double fraction) {
      std::fprintf(stderr, "\r%s: %3.0f%%", "tiled", fraction * 100.0);
      std::fflush(stderr);
    };
  }
  TiledReport report;
  o.report = &report;
  const Table result = run_tiled(f.name, inputs, output, params, o);
  if (bar) std::fputc('\n', stderr);
  if (table) return put_table(p, f, result, has_output ? &args.last() : nullptr);
#if GPIX_CLI_HAVE_IO
  const bool streamed = sink && sink->streamed();
#else
  const bool streamed = false;
#endif
  if (p.isSet("json")) {
    QJsonArray per_device;
    for (std::size_t k : report.slabs_per_device) per_device.append(static_cast<qint64>(k));
    print_json(QJsonObject{{"output", args.last()},
                           {"streamed_output", streamed},
                           {"slabs", static_cast<qint64>(report.slabs)},
                           {"passes", static_cast<qint64>(report.passes)},
                           {"planes_per_slab", static_cast<qint64>(report.planes_per_slab)},
                           {"halo", static_cast<qint64>(report.halo)},
                           {"slabs_per_device", per_device},
                           {"bytes_in", static_cast<qint64>(report.bytes_in)},
                           {"bytes_out", static_cast<qint64>(report.bytes_out)},
                           {"seconds", report.seconds},
                           {"read_seconds", report.read_seconds},
                           {"push_seconds", report.push_seconds},
                           {"run_seconds", report.run_seconds},
                           {"pull_seconds", report.pull_seconds},
                           {"write_seconds", report.write_seconds}});
  }
  return 0;
}

// gpix run NAME INPUT... [OUTPUT] [--PARAM VALUE ...] [--device NAME] [--json]
// Image results are written to OUTPUT (format by extension); table results are printed
// (JSON with --json) or written as CSV when OUTPUT ends in .csv.
int cmd_run(const QCommandLineParser& p, const QStringList& args) {
  if (args.size() < 2)
    throw InvalidArgument(
        "usage: gpix run FILTER INPUT... [OUTPUT] [--PARAM VALUE ...]; `gpix filters` lists them");
  const FilterInfo& f = filter(args[1].toStdString());
  const qsizetype n_in = static_cast<qsizetype>(f.inputs.size());
  const bool table = f.output == OutputKind::table;
  const qsizetype given = args.size() - 2;
  if (given < n_in || given > n_in + 1 || (!table && given != n_in + 1)) {
    QStringList in;
    for (const auto& i : f.inputs) in << qs(i.name);
    throw InvalidArgument("usage: gpix run " + f.name + " " + in.join(" ").toStdString() +
                          (table ? " [OUTPUT.csv]" : " OUTPUT") + " [--PARAM VALUE ...]");
  }
  Params params;
  for (const auto& s : f.params) {
    if (p.isSet(qs(s.name))) params[s.name] = parse_param(s, p.value(qs(s.name)).toStdString());
  }
  // Every catalog parameter is an option of the command line, so another filter's parameter
  // parses and then did nothing: `gpix run mean_box in out --radius 5` ran radius 1 (mean_box
  // has radius_x/y/z) with exit 0. A parameter this filter lacks is refused, naming its own.
  {
    static const QStringList kGlobal = {"json",     "device",      "shape",       "dtype",
                                        "channels", "markdown",    "help",        "version",
                                        "tiled",    "tile-budget", "tile-workers"};
    QStringList own;
    for (const auto& s : f.params) own << qs(s.name);
    for (const QString& name : p.optionNames()) {
      // Given twice, the last value won without a word (`--sigma_x 1 --sigma_x 2` ran 2).
      if (const QStringList v = p.values(name); v.size() > 1) {
        throw InvalidArgument("--" + name.toStdString() + " is given " + std::to_string(v.size()) +
                              " times (" + v.join(", ").toStdString() + "): give it once");
      }
      if (kGlobal.contains(name) || own.contains(name)) continue;
      throw InvalidArgument(f.name + " has no parameter '" + name.toStdString() + "'; " +
                            (own.isEmpty()
                                 ? std::string("it takes none")
                                 : "its parameters are --" + own.join(", --").toStdString()) +
                            " (gpix filters --markdown describes them)");
    }
  }
  // convert's --dtype is the output's dtype, not the raw input's (a uint32 raw file converted
  // to float32 read its bytes as float32): its raw inputs say their own layout.
  g_dtype_is_a_parameter = std::any_of(f.params.begin(), f.params.end(),
                                       [](const auto& s) { return s.name == "dtype"; });
  // A table goes to a .csv file (or stdout): not into a file named as an image.
  if (table && given == n_in + 1 && !args.last().endsWith(".csv", Qt::CaseInsensitive)) {
    throw InvalidArgument(f.name + " gives a table, written as CSV: name the output " +
                          "'something.csv', or leave it out to print the table");
  }
  if (p.isSet("tiled") || p.isSet("tile-budget") || p.isSet("tile-workers")) {
    return run_tiled_cli(p, args, f, params);
  }
  const Device dev = chosen_device(p);
  std::vector<Array> inputs;
  std::vector<FileMetadata> metas(static_cast<std::size_t>(n_in));
  ChannelPick pick;
  pick.several = n_in > 1;
  for (qsizetype i = 0; i < n_in; ++i) {
    QString label, text;
    QJsonObject meta;
    const auto k = static_cast<std::size_t>(i);
    inputs.push_back(
        Array::push(load_source(args[2 + i], p, label, meta, text, &metas[k], &pick), dev));
    print_warnings(args[2 + i], meta);
  }
  pick.finish();
  if (!table) check_output(args.last(), f, params, inputs.front().dtype(), inputs.front().ndim());
  // The first input's, carried to the output (unused without gpix_io: nothing is written).
  [[maybe_unused]] const FileMetadata& calibration = metas.front();
  // Files whose planes are channels (io::Metadata::channels) are filtered channel by channel,
  // as the viewer filters its composites: a 3D filter would mix the channels.
  std::vector<bool> per_channel(inputs.size(), false);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const int c = channel_count(metas[i]);
    per_channel[i] = c > 1 && inputs[i].ndim() == 3 && inputs[i].shape().depth() == std::size_t(c);
  }
  const bool channels =
      std::find(per_channel.begin(), per_channel.end(), true) != per_channel.end();
  if (channels && std::find(f.dims.begin(), f.dims.end(), 2) == f.dims.end()) {
    throw InvalidArgument(f.name +
                          " works on 3D images, and its input's planes are channels, which "
                          "gpix run filters one by one as 2D images; give --channels z to treat "
                          "the channels as z slices, or --channels N to read channel N alone");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!per_channel[i]) continue;
    std::fprintf(stderr, "gpix: %s: %d channels, filtered one by one\n",
                 args[2 + static_cast<qsizetype>(i)].toLocal8Bit().constData(),
                 channel_count(metas[i]));
  }
  const Result r =
      channels ? run_per_channel(f.name, inputs, per_channel, params) : run(f.name, inputs, params);
  if (!table) {
#if GPIX_CLI_HAVE_IO
    // Label outputs are marked as such, so that viewers (gpix-viewer) open them as labels.
    // The calibration of the first input is carried over where the shapes allow.
    io::Metadata out_meta =
        io::carried(calibration, inputs.front().shape(),
                    axis_maps(f.name, params, inputs.front().shape(), r.array.shape()));
    out_meta.labels = f.output == OutputKind::labels;
    // A result made channel by channel holds channels again, also where a crop or a resample
    // changed the planes (carried() keeps only what the shapes show); labels stay one label
    // image per channel, as the viewer keeps them.
    const auto stacked = static_cast<std::size_t>(channel_count(calibration));
    out_meta.channels = channels && per_channel.front() && !out_meta.labels &&
                                r.array.ndim() == 3 && r.array.shape().depth() == stacked
                            ? static_cast<int>(stacked)
                            : 1;
    // The channels' colours go with them (a crop's channels too), and with nothing else.
    out_meta.channel_colours =
        out_meta.channels > 1 &&
                calibration.channel_colours.size() == static_cast<std::size_t>(out_meta.channels)
            ? calibration.channel_colours
            : std::vector<std::uint32_t>{};
    io::write(std::filesystem::u8path(args.last().toStdString()), r.array, out_meta);
#else
    throw InvalidArgument("this build of gpix has no gpix_io to write files");
#endif
    if (p.isSet("json")) {
      QJsonObject o = cli::to_json(card(r.array));
      o["output"] = args.last();
      print_json(o);
    }
    return 0;
  }
  return put_table(p, f, r.table, given == n_in + 1 ? &args.last() : nullptr);
}

struct Command {
  const char* name;
  int (*run)(const QCommandLineParser&, const QStringList&);
};
const Command kCommands[] = {{"devices", &cmd_devices_args},
                             {"info", &cmd_info},
                             {"filters", &cmd_filters},
                             {"run", &cmd_run}};

}  // namespace

namespace {

// Ctrl+C or a kill during a write: the write's hidden temporary folder beside its target goes
// (a --tiled run's output can be gigabytes by then), then the signal does what it would have.
void on_fatal_signal(int sig) {
#if GPIX_CLI_HAVE_IO
  io::remove_unfinished_writes();
#endif
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  // Signals ignored when gpix starts stay ignored (nohup's SIGHUP, SIGINT of a background job
  // started by a non-interactive shell).
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    std::signal(sig, &on_fatal_signal);
  }
  QCoreApplication app(argc, argv);
  QCoreApplication::setApplicationName("gpix");
  QCoreApplication::setApplicationVersion(GPIX_VERSION_STRING);
  QCommandLineParser p;
  p.setApplicationDescription(
      "gpix: GPU image processing.\n\n"
      "Commands:\n"
      "  devices                 list every device of every backend\n"
      "  filters [NAME]          the catalog of filters, or one filter with its parameters\n"
      "  run FILTER INPUT... [OUTPUT] [--PARAM VALUE ...]\n"
      "                          run a filter on files (a table result is printed, or written\n"
      "                          to OUTPUT.csv); --tiled for images larger than the device\n"
      "  info <source>           the metadata card of an image: a file (TIFF, PNG, JPEG, NRRD,\n"
      "                          MetaImage, NIfTI), 'sample', 'sample:NAME'\n"
      "                          (" +
      qs([] {
        std::string s;
        for (const auto& n : gpix::sample_names()) s += (s.empty() ? "" : ", ") + n;
        return s;
      }()) +
      ") or a raw file with --shape and --dtype\n\n"
      "Exit codes: 0 done; 2 what was asked cannot be done (an unknown command, option, filter\n"
      "or device, a parameter out of range, an input the filter refuses: its dtype, its\n"
      "dimensions or its values, such as negative labels), nothing was done; 1 the work failed\n"
      "(a file that is missing, unreadable or lacks what was asked, the device).");
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument("command", "devices | info | filters | run");
  p.addOption({"json", "Print JSON for scripts."});
  p.addOption(
      {"device", "Device: index, name part, or cuda:/opencl: prefix and name part.", "NAME"});
  p.addOption({"shape", "Shape of a raw file, z,y,x order.", "Z,Y,X"});
  p.addOption({"dtype", "Pixel type of a raw file (u8 ... f64).", "T"});
  p.addOption({"markdown", "filters: print the catalog as a Markdown table."});
  p.addOption({"tiled",
               "run: filter in slabs along the slowest axis, so the image need not fit on the "
               "device (--device may list several devices, comma-separated)."});
  p.addOption({"tile-budget",
               "run --tiled: device memory per slab, e.g. 256MB (default: a "
               "quarter of the device's memory).",
               "SIZE"});
  p.addOption({"tile-workers",
               "run --tiled: workers per device, each with its slab and a share of the budget; "
               "with 2 or more, one slab's push travels beside another's pull (default 1).",
               "N"});
  // Before the filters' parameters, which fill the rest of --help (it was listed after them,
  // some 80 lines down, where a reader of `gpix info --help` did not find it).
  p.addOption(
      {"channels",
       "RGB/RGBA/vector files: luminance, split, a channel number (0 the first; or C1, C2, ... "
       "as the viewer names channels), or indices "
       "(palette files). Multi-channel files (filtered channel by channel): a channel number "
       "reads that channel, z reads the channels as z slices. TIFF hyperstacks (channels and "
       "z slices, or channels and time points): a channel number reads that channel's stack.",
       "C"});
  // Every catalog parameter is an option (`gpix run gaussian_blur in.tif out.tif --sigma_x 3`);
  // a parameter named like a global option (dtype) serves both.
  QStringList seen = {"json", "device",  "shape", "dtype",       "channels",    "markdown",
                      "help", "version", "tiled", "tile-budget", "tile-workers"};
  for (const auto& f : gpix::filters()) {
    for (const auto& s : f.params) {
      const QString n = qs(s.name);
      if (seen.contains(n)) continue;
      seen << n;
      p.addOption({n, "Filter parameter (see `gpix filters`).", "VALUE"});
    }
  }
  // Exit codes: 2 for what cannot be done as asked (an unknown option, command, filter,
  // parameter value or device, an input of a dtype the filter or the device does not take:
  // UnsupportedDType, an input whose values the filter refuses: the core's InvalidArgument,
  // before any work), 1 for what failed while doing it (a file, the device).
  // QCommandLineParser::process() exits with 1 on an unknown option.
  if (!p.parse(QCoreApplication::arguments())) {
    std::fprintf(stderr, "gpix: %s\n", qPrintable(p.errorText()));
    return 2;
  }
  // (addHelpOption's --help-all adds Qt's own options, which parse() leaves to the caller.)
  if (p.isSet("help") || p.optionNames().contains(QStringLiteral("help-all"))) p.showHelp(0);
  if (p.isSet("version")) p.showVersion();
  const QStringList args = p.positionalArguments();
  if (args.isEmpty()) {
    std::fputs(qPrintable(p.helpText()), stderr);
    return 2;
  }
  try {
    std::string names;
    for (const Command& c : kCommands) {
      if (args[0] == c.name) return c.run(p, args);
      names += (names.empty() ? "" : ", ") + std::string(c.name);
    }
    std::fprintf(stderr, "gpix: unknown command '%s'; the commands are: %s\n", qPrintable(args[0]),
                 names.c_str());
    return 2;
  } catch (const gpix::InvalidArgument& e) {
    std::fprintf(stderr, "gpix: %s\n", e.what());
    return 2;
  } catch (const gpix::UnsupportedDType& e) {
    std::fprintf(stderr, "gpix: %s\n", e.what());
    return 2;
  } catch (const gpix::Error& e) {
    std::fprintf(stderr, "gpix: %s%s%s\n", e.what(), e.code().empty() ? "" : " [",
                 e.code().empty() ? "" : (e.code() + "]").c_str());
    return 1;
  }
}
