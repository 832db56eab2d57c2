#pragma once
// JSON forms of gpix's data for `--json` output (Qt's JSON, so scripts get standard JSON).
#include <QJsonObject>

#include "gpix/device.h"
#include "gpix/stats.h"

namespace gpix::cli {

QJsonObject to_json(const DeviceInfo& info);
QJsonObject to_json(const BackendStatus& status);
QJsonObject to_json(const Card& card);

}  // namespace gpix::cli
