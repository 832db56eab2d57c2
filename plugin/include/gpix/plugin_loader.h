#pragma once
// Finds, checks and loads gpix plugins. The manifest (IID, apiVersion, name) is read from the
// library with QPluginLoader::metaData() before anything is instantiated; a plugin that does not
// fit is listed with the reason and never loaded.
#include <QJsonObject>
#include <QList>
#include <QPluginLoader>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "gpix/plugin_api.h"

namespace gpix::plugin {

struct PluginRecord {
  QString path;
  QString name;     // from the manifest (the file name when there is none)
  QString version;  // from the manifest
  int api_version = -1;
  bool loaded = false;
  QString reason;        // why it was not loaded; empty when loaded
  QJsonObject manifest;  // the MetaData object
};

class PluginLoader {
 public:
  PluginLoader();
  ~PluginLoader();
  PluginLoader(const PluginLoader&) = delete;
  PluginLoader& operator=(const PluginLoader&) = delete;

  // The folders a host searches, in order: `app_dir`/../lib/gpix/plugins, `app_dir`/plugins,
  // each entry of GPIX_PLUGIN_PATH (':'-separated folders or files), and the user's folder
  // (QStandardPaths::AppDataLocation + "/plugins").
  static QStringList default_search_paths(const QString& app_dir);

  // Checks a library's manifest without loading its code. The record says loaded=false; an
  // empty reason means it would be accepted.
  static PluginRecord inspect(const QString& file);

  // inspect(), then instantiate and call Plugin::initialize(host). A plugin whose name is
  // already loaded is refused (the first one found wins).
  PluginRecord load(const QString& file, HostContext& host);

  // Loads every library in the given folders (files are loaded directly; a missing path is
  // recorded as such). Returns the records of this call; records() has all of them.
  QList<PluginRecord> load_all(const QStringList& paths, HostContext& host);

  const QList<PluginRecord>& records() const { return records_; }

 private:
  QList<PluginRecord> records_;
  std::vector<std::unique_ptr<QPluginLoader>> loaders_;  // kept: plugin code stays mapped
};

}  // namespace gpix::plugin
