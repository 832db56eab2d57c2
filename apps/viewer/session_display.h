#pragma once
// The display settings a session keeps beyond version 1's visible, opacity, colour map and
// contrast: the layer's gamma and, for a colour composite, every channel's name, colour,
// limits, gamma and visibility. They sit in the layer's entry:
//   "gamma": 1.4,
//   "composite": {"version": 1, "channels": [
//       {"name": "C1", "colour": "#00ff00", "contrast": [100, 3000], "gamma": 1, "visible": true},
//       ...]}
// The composite section has its own version so that it can grow without another session
// version; sessions of version 1 have neither key and open with the file's defaults.
#include <QJsonObject>
#include <QString>

#include "gpix/ui/layer.h"

namespace session {

// The layer's gamma and, for a composite, its "composite" section.
QJsonObject display_to_json(const gpix::ui::Layer& layer);

// Applies what `entry` (a session's layer entry) holds of the above to `layer`, which was just
// read from its file. A layer that the file no longer gives as a composite of as many channels,
// or a section this viewer cannot read, keeps the file's defaults; the returned text says why
// (empty when everything applied).
QString display_from_json(const QJsonObject& entry, gpix::ui::Layer& layer);

}  // namespace session
