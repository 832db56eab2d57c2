#include "gpix/plugin_loader.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QLibrary>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <csignal>
#include <cstring>
#include <exception>

#include "gpix/device.h"
#include "gpix/version.h"

namespace gpix::plugin {

namespace {

QString user_name(uid_t uid) {
  const passwd* pw = getpwuid(uid);  // the host's GUI thread only: no reentrancy needed
  return pw && pw->pw_name ? QString::fromLocal8Bit(pw->pw_name) : QString::number(uid);
}

// The SHA-256 of a file's bytes, hex; empty when it cannot be read.
QByteArray file_hash(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  QCryptographicHash h(QCryptographicHash::Sha256);
  if (!h.addData(&f)) return {};
  return h.result().toHex();
}

// Verdicts also depend on the host: a new gpix or Qt may load a plugin differently.
QString verdict_key(const QByteArray& hash) {
  return QStringLiteral("%1 gpix-%2 qt-%3")
      .arg(QString::fromLatin1(hash), QStringLiteral(GPIX_VERSION_STRING),
           QString::fromLatin1(qVersion()));
}

const QString kLoads = QStringLiteral("loads");

}  // namespace

PluginLoader::PluginLoader() = default;
PluginLoader::PluginLoader(LoaderOptions options) : options_(std::move(options)) {}
PluginLoader::~PluginLoader() = default;  // loaders are not unloaded: widgets may remain

QString PluginLoader::untrusted(const QString& file) {
  const QString real = QFileInfo(file).canonicalFilePath();
  if (real.isEmpty()) return {};  // missing: inspect() says so
  const uid_t me = geteuid();
  QString p = real;
  while (true) {
    struct stat st {};
    if (lstat(QFile::encodeName(p).constData(), &st) != 0) {
      return QStringLiteral("%1 cannot be examined: %2")
          .arg(p, QString::fromLocal8Bit(std::strerror(errno)));
    }
    const bool dir = S_ISDIR(st.st_mode);
    const QString what = p == real ? QStringLiteral("the file") : QStringLiteral("its folder ") + p;
    if (st.st_uid != me && st.st_uid != 0) {
      return QStringLiteral(
                 "%1 belongs to %2, not to you (%3) or root, who alone may be trusted "
                 "to change code that runs in gpix")
          .arg(what, user_name(st.st_uid), user_name(me));
    }
    if ((st.st_mode & S_IWOTH) && !(dir && (st.st_mode & S_ISVTX))) {
      return QStringLiteral(
                 "%1 is writable by every user (mode %2), so anyone could put code "
                 "there; make it private (chmod o-w %3)")
          .arg(what, QString::number(st.st_mode & 07777, 8).rightJustified(4, QLatin1Char('0')), p);
    }
    if (p == QStringLiteral("/")) break;
    p = QFileInfo(p).path();
  }
  return {};
}

QString PluginLoader::default_probe() {
  return QDir(QCoreApplication::applicationDirPath())
      .absoluteFilePath(QStringLiteral("gpix-plugin-probe"));
}

QString PluginLoader::default_verdict_cache() {
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
  return dir.isEmpty() ? QString() : dir + QStringLiteral("/plugin-verdicts.ini");
}

QString PluginLoader::trial(const QString& path, HostContext& host) {
  if (options_.probe.isEmpty()) return {};
  const QByteArray hash = file_hash(path);
  if (hash.isEmpty()) return QStringLiteral("the file cannot be read");
  const QString key = verdict_key(hash);
  std::unique_ptr<QSettings> kept;
  if (!options_.verdict_cache.isEmpty()) {
    kept = std::make_unique<QSettings>(options_.verdict_cache, QSettings::IniFormat);
  }
  const QString known = kept ? kept->value(QStringLiteral("verdicts/") + key).toString()
                             : verdicts_.value(key.toLatin1());
  if (known == kLoads) return {};
  if (!known.isEmpty()) return known;
  if (!QFileInfo(options_.probe).isExecutable()) {
    return QStringLiteral("the trial-load helper %1 is missing (reinstall gpix)")
        .arg(options_.probe);
  }
  QProcess probe;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  probe.setProcessEnvironment(env);
  probe.setProcessChannelMode(QProcess::SeparateChannels);
  // What the plugin would meet in this host: its device and (a copy of) its settings.
  QStringList args;
  const gpix::Device device = host.device();
  if (device.valid()) args << QStringLiteral("--device") << QString::fromStdString(device.label());
  if (const QString s = host.settings().fileName(); !s.isEmpty()) {
    args << QStringLiteral("--settings") << s;
  }
  args << path;
  probe.start(options_.probe, args);
  if (!probe.waitForStarted()) {
    return QStringLiteral("the trial-load helper %1 did not start: %2")
        .arg(options_.probe, probe.errorString());
  }
  const bool finished = probe.waitForFinished(options_.probe_timeout_ms);
  if (!finished) {
    probe.kill();
    probe.waitForFinished();
  }
  // The helper reports "stage NAME" before each stage and "refused REASON" at the end.
  QString stage = QStringLiteral("constructor");
  QString refused;
  for (const QString& line :
       QString::fromUtf8(probe.readAllStandardOutput()).split(QLatin1Char('\n'))) {
    if (line.startsWith(QLatin1String("stage "))) stage = line.mid(6).trimmed();
    if (line.startsWith(QLatin1String("refused "))) refused = line.mid(8).trimmed();
  }
  const QString where = stage == QLatin1String("initialize") ? QStringLiteral("in its initialize()")
                        : stage == QLatin1String("paint")
                            ? QStringLiteral("while its docks were painted")
                            : QStringLiteral("in its constructor or static initialisers");
  if (!finished) {
    // Not kept: a slow machine is not the plugin's fault.
    return QStringLiteral(
               "a trial process that loaded it did not finish within %1 s (it may hang %2); "
               "gpix did not load it")
        .arg(options_.probe_timeout_ms / 1000.0)
        .arg(where);
  }
  QString verdict;
  if (probe.exitStatus() == QProcess::CrashExit) {
    // Qt reports the signal as the exit code of a crashed process.
    const int sig = probe.exitCode();
    const char* name = sig > 0 ? sigabbrev_np(sig) : nullptr;
    verdict = QStringLiteral(
                  "it crashed (%1) %2 while a trial process loaded it; gpix did not load it "
                  "(the verdict is kept until the file changes)")
                  .arg(name ? QStringLiteral("SIG") + QLatin1String(name)
                            : QStringLiteral("signal %1").arg(sig),
                       where);
  } else if (probe.exitCode() == 0) {
    verdict = kLoads;
  } else {
    // Refused for a reason the helper names (an exception, a missing library): not kept, so
    // that a plugin whose environment is mended loads next time.
    return refused.isEmpty()
               ? QStringLiteral("the trial load failed (exit status %1): %2")
                     .arg(probe.exitCode())
                     .arg(QString::fromLocal8Bit(probe.readAllStandardError()).trimmed())
               : refused;
  }
  if (kept) {
    kept->setValue(QStringLiteral("verdicts/") + key, verdict);
    kept->sync();
  } else {
    verdicts_.insert(key.toLatin1(), verdict);
  }
  return verdict == kLoads ? QString() : verdict;
}

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
  if (!options_.allow_untrusted) {
    // Before anything of the file is read: its place decides whether it may be used at all.
    if (const QString why = untrusted(file); !why.isEmpty()) {
      PluginRecord r;
      r.path = QFileInfo(file).absoluteFilePath();
      r.name = QFileInfo(file).fileName();
      r.reason = QStringLiteral("not trusted: ") + why +
                 QStringLiteral(" (gpix-viewer --allow-untrusted-plugins loads it anyway)");
      records_.append(r);
      return r;
    }
  }
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
  if (r.reason.isEmpty()) r.reason = trial(r.path, host);
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
      } catch (...) {
        r.reason = QStringLiteral("initialize() failed with an unknown exception");
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
