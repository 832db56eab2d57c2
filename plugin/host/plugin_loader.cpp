#include "gpix/plugin_loader.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QLibrary>
#include <QStandardPaths>
#include <exception>

namespace gpix::plugin {

PluginLoader::PluginLoader() = default;
PluginLoader::~PluginLoader() = default;  // loaders are not unloaded: widgets may remain

QStringList PluginLoader::default_search_paths(const QString& app_dir) {
  QStringList paths;
  paths << QDir(app_dir).absoluteFilePath(QStringLiteral("../lib/gpix/plugins"));
  paths << QDir(app_dir).absoluteFilePath(QStringLiteral("plugins"));
  const QString env = qEnvironmentVariable("GPIX_PLUGIN_PATH");
  for (const QString& p : env.split(QLatin1Char(':'), Qt::SkipEmptyParts)) paths << p;
  const QString user = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (!user.isEmpty()) paths << user + QStringLiteral("/plugins");
  for (QString& p : paths) p = QDir::cleanPath(p);
  paths.removeDuplicates();
  return paths;
}

PluginRecord PluginLoader::inspect(const QString& file) {
  PluginRecord r;
  r.path = QFileInfo(file).absoluteFilePath();
  r.name = QFileInfo(file).fileName();
  if (!QFileInfo::exists(file)) {
    r.reason = QStringLiteral("the file does not exist");
    return r;
  }
  QPluginLoader probe(r.path);
  const QJsonObject meta = probe.metaData();  // reads the library's metadata section only
  if (meta.isEmpty()) {
    r.reason = QStringLiteral("not a Qt plugin (no plugin metadata): ") + probe.errorString();
    return r;
  }
  const QString iid = meta.value(QStringLiteral("IID")).toString();
  r.manifest = meta.value(QStringLiteral("MetaData")).toObject();
  if (r.manifest.contains(QStringLiteral("name"))) {
    r.name = r.manifest.value(QStringLiteral("name")).toString();
  }
  r.version = r.manifest.value(QStringLiteral("version")).toString();
  r.api_version = r.manifest.value(QStringLiteral("apiVersion")).toInt(-1);
  if (iid != QLatin1String(kPluginIid)) {
    r.reason = QStringLiteral("interface '%1' is not the one this host speaks ('%2')")
                   .arg(iid, QLatin1String(kPluginIid));
    return r;
  }
  if (r.api_version != kApiVersion) {
    r.reason =
        r.api_version < 0
            ? QStringLiteral("its manifest has no apiVersion (this host needs %1)").arg(kApiVersion)
            : QStringLiteral("it was built for gpix plugin API %1; this host has API %2")
                  .arg(r.api_version)
                  .arg(kApiVersion);
    return r;
  }
  if (!r.manifest.contains(QStringLiteral("name"))) {
    r.reason = QStringLiteral("its manifest has no name");
  }
  return r;
}

PluginRecord PluginLoader::load(const QString& file, HostContext& host) {
  PluginRecord r = inspect(file);
  if (r.reason.isEmpty()) {
    for (const PluginRecord& other : records_) {
      if (other.loaded && other.name == r.name) {
        r.reason =
            QStringLiteral("a plugin named '%1' is already loaded from %2").arg(r.name, other.path);
        break;
      }
    }
  }
  if (r.reason.isEmpty()) {
    auto loader = std::make_unique<QPluginLoader>(r.path);
    QObject* object = nullptr;
    try {
      // dlopen (fails when a dependency is missing), then the plugin's constructor, which is
      // the plugin's code and may throw: that must refuse the plugin, not end the host.
      object = loader->instance();
    } catch (const std::exception& e) {
      r.reason = QStringLiteral("its constructor failed: ") + QString::fromUtf8(e.what());
    } catch (...) {
      r.reason = QStringLiteral("its constructor failed with an unknown exception");
    }
    auto* plugin = object ? qobject_cast<Plugin*>(object) : nullptr;
    if (!r.reason.isEmpty()) {
      // Refused above; the loader is dropped (not unloaded: a half-made instance may remain).
      (void)loader.release();
    } else if (!object) {
      r.reason = QStringLiteral("could not be loaded: ") + loader->errorString();
    } else if (!plugin) {
      r.reason = QStringLiteral("its class does not implement gpix::plugin::Plugin");
    } else {
      try {
        plugin->initialize(host);
        r.loaded = true;
        loaders_.push_back(std::move(loader));
      } catch (const std::exception& e) {
        r.reason = QStringLiteral("initialize() failed: ") + QString::fromUtf8(e.what());
      }
    }
  }
  records_.append(r);
  return r;
}

QList<PluginRecord> PluginLoader::load_all(const QStringList& paths, HostContext& host) {
  QList<PluginRecord> out;
  for (const QString& p : paths) {
    const QFileInfo info(p);
    if (info.isFile()) {
      out << load(p, host);
      continue;
    }
    if (!info.exists()) {
      // The usual folders need not exist, but a named library that is missing is reported.
      if (QLibrary::isLibrary(info.fileName())) out << load(p, host);
      continue;
    }
    const QDir dir(p);
    for (const QFileInfo& f : dir.entryInfoList(QDir::Files, QDir::Name)) {
      if (!QLibrary::isLibrary(f.fileName())) continue;
      out << load(f.absoluteFilePath(), host);
    }
  }
  return out;
}

}  // namespace gpix::plugin
