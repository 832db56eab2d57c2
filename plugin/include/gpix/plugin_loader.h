#pragma once
// Finds, checks and loads gpix plugins. Nothing of a plugin's code runs in the host before it
// passes, in order: where it lies (owner and permissions of the file and its folders), its
// manifest (IID, apiVersion, name, read with QPluginLoader::metaData() without loading code),
// and a trial load in a child process (gpix-plugin-probe). A plugin that does not pass is
// listed with the reason and never loaded.
#include <QJsonObject>
#include <QList>
#include <QMap>
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

// How careful the loader is before a plugin's code runs in the host.
struct LoaderOptions {
  // Load plugins from untrusted places too (see PluginLoader::untrusted). gpix-viewer sets it
  // for --allow-untrusted-plugins or GPIX_PLUGIN_ALLOW_UNTRUSTED=1; nothing else does.
  bool allow_untrusted = false;
  // The trial-load helper (gpix-plugin-probe): a plugin whose file's SHA-256 has no verdict
  // yet first goes through what the host does with it before trusting it, in a child process:
  // loaded, constructed, initialize() on a BasicHost with the host's device and a copy of its
  // settings, its docks painted once. One that crashes there (SIGSEGV, abort) or hangs is
  // refused with the signal and the stage instead of taking the host down; one that throws,
  // with its message. Empty: no trial (the plugin runs in the host at once; exceptions are
  // still caught). A helper that is named but missing refuses every plugin with that reason.
  QString probe;
  // The file (an INI file) where verdicts are kept, by SHA-256 of the plugin file; empty: kept
  // for this loader only. Both "loads" and "crashed" are kept: a plugin is tried once per
  // content.
  QString verdict_cache;
  int probe_timeout_ms = 30000;  // a trial that takes longer is a hang
};

class PluginLoader {
 public:
  PluginLoader();
  explicit PluginLoader(LoaderOptions options);
  ~PluginLoader();
  PluginLoader(const PluginLoader&) = delete;
  PluginLoader& operator=(const PluginLoader&) = delete;

  // The folders a host searches, in order: `app_dir`/../lib/gpix/plugins, `app_dir`/plugins,
  // each entry of GPIX_PLUGIN_PATH (':'-separated folders or files), and the user's folder
  // (QStandardPaths::AppDataLocation + "/plugins").
  static QStringList default_search_paths(const QString& app_dir);

  // Why a plugin file may not be trusted, or empty when it may: the file and every folder
  // above it (symbolic links resolved) must belong to this user or to root, and none may be
  // writable by every user (a folder with the sticky bit, such as /tmp, is fine: others cannot
  // replace what is in it). Reads the file system only.
  static QString untrusted(const QString& file);

  // The helper beside the application (QCoreApplication::applicationDirPath()), where builds
  // and installs put it.
  static QString default_probe();
  // QStandardPaths::CacheLocation + "/plugin-verdicts.ini".
  static QString default_verdict_cache();

  // Checks a library's manifest without loading its code. The record says loaded=false; an
  // empty reason means it would be accepted.
  static PluginRecord inspect(const QString& file);

  // The trust check (unless options allow untrusted plugins), inspect(), the trial load in a
  // child (when options name a probe and no verdict is cached), then instantiate and call
  // Plugin::initialize(host). A plugin whose name is already loaded is refused (the first one
  // found wins). Every refusal says why in the record.
  PluginRecord load(const QString& file, HostContext& host);

  // Loads every library in the given folders (files are loaded directly; a missing path is
  // recorded as such). Returns the records of this call; records() has all of them.
  QList<PluginRecord> load_all(const QStringList& paths, HostContext& host);

  const QList<PluginRecord>& records() const { return records_; }
  const LoaderOptions& options() const { return options_; }
  // For the plugins loaded after this call.
  void set_options(LoaderOptions options) { options_ = std::move(options); }

 private:
  // Empty when the trial load passed (or none is asked for), otherwise why the plugin is refused.
  QString trial(const QString& path, HostContext& host);

  LoaderOptions options_;
  QMap<QByteArray, QString> verdicts_;  // by SHA-256, when options keep no verdict file
  QList<PluginRecord> records_;
  std::vector<std::unique_ptr<QPluginLoader>> loaders_;  // kept: plugin code stays mapped
};

}  // namespace gpix::plugin
