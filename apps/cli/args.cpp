#include "args.h"

#include <QStringList>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gpix/error.h"

namespace gpix::cli {

std::uint64_t parse_bytes(const QString& text) {
  static const std::pair<const char*, double> units[] = {
      {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0}};
  QString t = text.trimmed().toUpper();
  double scale = 1.0;
  for (const auto& [u, f] : units) {
    if (t.endsWith(QLatin1String(u))) {
      t.chop(static_cast<qsizetype>(std::strlen(u)));
      scale = f;
      break;
    }
  }
  bool ok = false;
  const double v = t.trimmed().toDouble(&ok);
  // At least one byte (".5" once gave a budget of 0, fuzz_cli_args), at most what 64 bits hold.
  if (!ok || !(v * scale >= 1) || v * scale > 1.8e19) {
    throw InvalidArgument(
        "--tile-budget takes a size such as 256MB, 2GiB or 1000000 (bytes), not '" +
        text.toStdString() + "'");
  }
  return static_cast<std::uint64_t>(v * scale);
}

Shape parse_shape(const QString& text) {
  std::vector<std::size_t> dims;
  for (const QString& part : text.split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const qulonglong v = part.trimmed().toULongLong(&ok);
    if (!ok) {
      throw InvalidArgument("--shape must be numbers separated by commas, got '" +
                            text.toStdString() + "'");
    }
    dims.push_back(static_cast<std::size_t>(v));
  }
  return Shape{std::span<const std::size_t>(dims)};
}

}  // namespace gpix::cli
