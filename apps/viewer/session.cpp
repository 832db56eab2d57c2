#include "session.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include "gpix/array.h"
#include "gpix/error.h"
#include "gpix/ui/layer_commands.h"
#include "gpix/ui/workflow.h"
#include "session_display.h"

namespace session {

namespace {

bool is_sample(const QString& source) {
  return source == QLatin1String("sample") || source.startsWith(QLatin1String("sample:"));
}

}  // namespace

QString file_stem(const QString& layer_name) {
  QString s = layer_name;
  s.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.=-]+")), QStringLiteral("_"));
  s.remove(QRegularExpression(QStringLiteral("^[_.]+|_+$")));
  return s.isEmpty() ? QStringLiteral("layer") : s.left(100);
}

QJsonObject to_json(gpix::plugin::BasicHost& host, const QString& session_path,
                    const std::function<QJsonObject(int id)>& extra) {
  const QDir dir = QFileInfo(session_path).absoluteDir();
  QJsonArray layers;
  int current = -1;
  for (int id : host.layer_ids()) {
    const gpix::ui::Layer l = host.layer(id);
    if (l.metadata.value(QStringLiteral("preview")).toBool()) continue;
    if (l.source.isEmpty()) {
      throw gpix::InvalidArgument("layer '" + l.name.toStdString() +
                                  "' has no file: save it before saving the session");
    }
    QString file = l.source;
    if (!is_sample(file)) {
      const QString abs = QFileInfo(file).absoluteFilePath();
      const QString rel = dir.relativeFilePath(abs);
      file = rel.startsWith(QLatin1String("../")) ? abs : rel;
    }
    // Layers read from one file are told apart by their position among its layers.
    const int index = l.metadata.value(QStringLiteral("index_in_file"), 0).toInt();
    if (id == host.current_layer()) current = int(layers.size());
    QJsonObject layer{
        {QStringLiteral("name"), l.name},
        {QStringLiteral("file"), file},
        {QStringLiteral("index_in_file"), index},
        {QStringLiteral("visible"), l.visible},
        {QStringLiteral("opacity"), l.opacity},
        {QStringLiteral("additive"), l.additive},
        {QStringLiteral("colormap"), l.colormap},
        {QStringLiteral("contrast"), QJsonArray{l.contrast_min, l.contrast_max}},
    };
    const QJsonObject display = display_to_json(l);  // gamma, a composite's channels
    for (auto it = display.begin(); it != display.end(); ++it) layer.insert(it.key(), it.value());
    if (extra) {
      const QJsonObject more = extra(id);
      for (auto it = more.begin(); it != more.end(); ++it) layer.insert(it.key(), it.value());
    }
    layers.append(layer);
  }
  return QJsonObject{
      {QStringLiteral("format"), QStringLiteral("gpix-session")},
      {QStringLiteral("version"), kVersion},
      {QStringLiteral("device"),
       QString::fromStdString(host.device().valid() ? host.device().label() : std::string())},
      {QStringLiteral("layers"), layers},
      {QStringLiteral("current"), current},
      {QStringLiteral("workflow"), host.workflow().to_json()},
  };
}

QJsonObject read(const QString& session_path) {
  QFile f(session_path);
  if (!f.open(QIODevice::ReadOnly)) {
    throw gpix::IoError("cannot read the session '" + session_path.toStdString() +
                            "': " + f.errorString().toStdString(),
                        session_path.toStdString());
  }
  QJsonParseError perr;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &perr);
  const QJsonObject root = doc.object();
  if (perr.error != QJsonParseError::NoError) {
    throw gpix::IoError("'" + session_path.toStdString() + "' is not JSON (" +
                            perr.errorString().toStdString() + " at byte " +
                            std::to_string(perr.offset) + "); a gpix session is a JSON file",
                        session_path.toStdString());
  }
  if (root.value(QStringLiteral("format")).toString() != QLatin1String("gpix-session")) {
    throw gpix::IoError("'" + session_path.toStdString() +
                            "' is JSON but not a gpix session (no \"format\": \"gpix-session\")",
                        session_path.toStdString());
  }
  const int version = root.value(QStringLiteral("version")).toInt();
  if (version < 1 || version > kVersion) {
    throw gpix::IoError("'" + session_path.toStdString() + "' is a gpix session of version " +
                            std::to_string(version) + "; this viewer reads versions 1 to " +
                            std::to_string(kVersion),
                        session_path.toStdString());
  }
  return root;
}

namespace {

// The file of a session's layer entry, absolute.
QString file_of(const QJsonObject& layer, const QDir& dir) {
  QString file = layer.value(QStringLiteral("file")).toString();
  if (!is_sample(file) && QFileInfo(file).isRelative()) file = dir.absoluteFilePath(file);
  return file;
}

// What open() and none_would_open() say of a layer whose file is gone, or holds fewer layers.
QString missing_file(const QString& name, const QString& file) {
  return QObject::tr("layer '%1': %2 does not exist").arg(name, file);
}
QString no_such_layer(const QString& name, const QString& file, int layers, int index) {
  return QObject::tr("layer '%1': %2 holds %3 layer(s), not a layer %4")
      .arg(name, file)
      .arg(layers)
      .arg(index + 1);
}

}  // namespace

Preread read_files(const QJsonObject& root, const QString& session_path,
                   const QList<gpix::plugin::Reader>& readers, const gpix::Device& device) {
  const QDir dir = QFileInfo(session_path).absoluteDir();
  Preread pre;
  for (const QJsonValue v : root.value(QStringLiteral("layers")).toArray()) {
    const QString file = file_of(v.toObject(), dir);
    if (pre.layers.contains(file) || pre.errors.contains(file)) continue;
    if (!is_sample(file) && !QFileInfo::exists(file)) continue;  // open() names it
    try {
      QList<gpix::ui::Layer> layers = gpix::plugin::BasicHost::read_call(readers, file)();
      // The push too, so that adding them waits on nothing. A layer that does not fit stays on
      // the host: add_layer tries again and says why.
      for (gpix::ui::Layer& l : layers) {
        if (!device.valid() || !l.host.valid() || l.array.valid()) continue;
        try {
          l.array = gpix::Array::push(l.host, device);
        } catch (const std::exception&) {
        }
      }
      pre.layers.insert(file, layers);
    } catch (const std::exception& e) {
      pre.errors.insert(file, QString::fromUtf8(e.what()));
    }
  }
  return pre;
}

QStringList none_would_open(const QJsonObject& root, const QString& session_path,
                            const Preread& pre) {
  const QDir dir = QFileInfo(session_path).absoluteDir();
  QStringList why;
  for (const QJsonValue v : root.value(QStringLiteral("layers")).toArray()) {
    const QJsonObject o = v.toObject();
    const QString name = o.value(QStringLiteral("name")).toString();
    const QString file = file_of(o, dir);
    const int index = o.value(QStringLiteral("index_in_file")).toInt();
    if (pre.layers.contains(file)) {
      const int n = int(pre.layers.value(file).size());
      if (index >= 0 && index < n) return {};  // this one opens
      why << no_such_layer(name, file, n, index);
    } else if (pre.errors.contains(file)) {
      why << QObject::tr("layer '%1': %2").arg(name, pre.errors.value(file));
    } else {
      why << missing_file(name, file);
    }
  }
  return why;
}

Opened open(gpix::plugin::BasicHost& host, const QJsonObject& root, const QString& session_path,
            const Preread* pre,
            const std::function<void(int id, const QJsonObject& layer)>& restore) {
  const QDir dir = QFileInfo(session_path).absoluteDir();
  Opened out;
  const QList<int> before = host.layer_ids();
  QHash<QString, QList<int>> opened;  // file -> the layers it gave
  QList<int> used;
  for (const QJsonValue v : root.value(QStringLiteral("layers")).toArray()) {
    const QJsonObject o = v.toObject();
    const QString name = o.value(QStringLiteral("name")).toString();
    const QString file = file_of(o, dir);
    if (pre ? !pre->layers.contains(file) && !pre->errors.contains(file)
            : !is_sample(file) && !QFileInfo::exists(file)) {
      out.missing << missing_file(name, file);
      continue;
    }
    const int index = o.value(QStringLiteral("index_in_file")).toInt();
    // A file is read once, and again where the session holds one of its layers twice.
    if (!opened.contains(file) || (index >= 0 && index < opened.value(file).size() &&
                                   used.contains(opened.value(file)[index]))) {
      try {
        if (!pre) {
          opened.insert(file, host.open_file(file));
        } else if (pre->errors.contains(file)) {
          throw gpix::IoError(pre->errors.value(file).toStdString(), file.toStdString());
        } else {
          opened.insert(file, host.add_read_layers(file, pre->layers.value(file)));
        }
      } catch (const std::exception& e) {
        opened.insert(file, {});
        out.errors << QObject::tr("layer '%1': %2").arg(name, QString::fromUtf8(e.what()));
        continue;
      }
    }
    const QList<int> ids = opened.value(file);
    if (index < 0 || index >= ids.size()) {
      if (!ids.isEmpty()) {
        out.errors << no_such_layer(name, file, int(ids.size()), index);
      }
      continue;
    }
    const int id = ids[index];
    gpix::ui::Layer l = host.layer(id);
    l.name = name.isEmpty() ? l.name : name;
    l.visible = o.value(QStringLiteral("visible")).toBool(true);
    l.opacity = o.value(QStringLiteral("opacity")).toDouble(1.0);
    // Sessions saved before blending was kept: as the file opens (a hyperstack's additive).
    l.additive = o.value(QStringLiteral("additive")).toBool(l.additive);
    l.colormap = o.value(QStringLiteral("colormap")).toString(l.colormap);
    const QJsonArray c = o.value(QStringLiteral("contrast")).toArray();
    if (c.size() == 2) {
      l.contrast_min = c[0].toDouble();
      l.contrast_max = c[1].toDouble();
    }
    if (const QString why = display_from_json(o, l); !why.isEmpty())
      out.errors << QObject::tr("layer '%1': %2").arg(l.name, why);
    l.metadata.insert(QStringLiteral("index_in_file"), index);
    host.replace_layer(id, l);
    if (restore) restore(id, o);
    out.layers << id;
    used << id;
  }
  // Layers of a multi-layer file that the session did not keep.
  for (int id : host.layer_ids()) {
    if (!used.contains(id) && !before.contains(id)) host.remove_layer(id);
  }
  const int current = root.value(QStringLiteral("current")).toInt(-1);
  if (current >= 0 && current < out.layers.size()) host.set_current_layer(out.layers[current]);
  try {
    host.workflow().from_json(root.value(QStringLiteral("workflow")).toArray());
  } catch (const gpix::Error& e) {
    out.errors << QObject::tr("the workflow was not restored: %1").arg(QString::fromUtf8(e.what()));
  }
  return out;
}

}  // namespace session
