#include "json.h"

#include <QJsonArray>
#include <cmath>

namespace gpix::cli {
namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

// Exact integers stay numbers while JSON doubles can hold them; larger ones, NaN and inf
// become strings so nothing is rounded or made invalid.
QJsonValue scalar(const Scalar& s) {
  const double d = s.as_double();
  if (!std::isfinite(d)) return qs(s.str());
  if (!s.is_float() && std::abs(d) > 9007199254740992.0) return qs(s.str());
  return d;
}

}  // namespace

QJsonObject to_json(const DeviceInfo& i) {
  QJsonObject o;
  o["index"] = i.index;
  o["backend"] = qs(name(i.backend));
  o["name"] = qs(i.name);
  o["vendor"] = qs(i.vendor);
  o["platform"] = qs(i.platform);
  o["type"] = qs(name(i.type));
  o["compute_units"] = static_cast<qint64>(i.compute_units);
  o["global_memory"] = static_cast<qint64>(i.global_memory);
  o["max_allocation"] = static_cast<qint64>(i.max_allocation);
  o["local_memory"] = static_cast<qint64>(i.local_memory);
  o["max_work_group"] = static_cast<qint64>(i.max_work_group);
  o["fp64"] = i.fp64;
  o["images"] = i.images;
  o["api_version"] = qs(i.api_version);
  o["driver_version"] = qs(i.driver_version);
  if (!i.compute_capability.empty()) o["compute_capability"] = qs(i.compute_capability);
  return o;
}

QJsonObject to_json(const BackendStatus& s) {
  QJsonObject o;
  o["backend"] = qs(name(s.backend));
  o["available"] = s.available;
  o["devices"] = static_cast<qint64>(s.devices);
  o["detail"] = qs(s.detail);
  return o;
}

QJsonObject to_json(const Card& c) {
  QJsonObject o;
  QJsonArray shape;
  for (auto d : c.shape.dims()) shape.append(static_cast<qint64>(d));
  o["shape"] = shape;
  o["dtype"] = qs(name(c.dtype));
  o["bytes"] = static_cast<qint64>(c.bytes);
  o["size"] = qs(c.size);
  o["min"] = scalar(c.stats.min);
  o["max"] = scalar(c.stats.max);
  o["sum"] = scalar(c.stats.sum);
  o["mean"] = std::isfinite(c.stats.mean) ? QJsonValue(c.stats.mean) : QJsonValue(qs(Scalar(c.stats.mean).str()));
  o["count"] = static_cast<qint64>(c.stats.count);
  o["nan_count"] = static_cast<qint64>(c.stats.nan_count);
  o["device"] = qs(c.device);
  o["memory"] = qs(name(c.kind));
  return o;
}

}  // namespace gpix::cli
