// libFuzzer target: a plugin file as gpix-viewer's host checks it before loading any of its
// code (gpix::plugin::PluginLoader::inspect: Qt reads the library's metadata note, then gpix
// checks the IID, apiVersion and name). Each input is the bytes of a library file, written to
// a file of its own in a private folder. The seed is a test plugin reduced to its ELF headers,
// its metadata note and a .text section of 16 zero bytes (objcopy --only-section
// .note.qt.metadata --only-section .text, then --update-section .text=16 zeros; 7 kB): Qt
// refuses a file without a code section ("file has no code") before it reads the note.
// The contract: a record that refuses the file with a reason, or accepts it with this host's
// IID and API version and a name; never a crash, and no code of the file runs (inspect()
// does not load the library: the fuzzed files could not run anyway, and a constructor that
// ran would show as a crash).
#include <QCoreApplication>
#include <QFile>
#include <QTemporaryDir>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpix/plugin_api.h"
#include "gpix/plugin_loader.h"

namespace {
QTemporaryDir* folder = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  static QCoreApplication app(*argc, *argv);  // QPluginLoader's library store
  folder = new QTemporaryDir();  // one for the run: each input writes a file of its own
  return folder->isValid() ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static unsigned long n = 0;
  // A new name each time: Qt keeps what it read of a library by its path.
  const QString path = folder->filePath(QStringLiteral("libfuzzed%1.so").arg(++n));
  {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) std::abort();
    f.write(reinterpret_cast<const char*>(data), static_cast<qint64>(size));
  }
  const gpix::plugin::PluginRecord r = gpix::plugin::PluginLoader::inspect(path);
  QFile::remove(path);
  if (r.loaded) {
    std::fprintf(stderr, "fuzz_plugin_manifest: inspect() loaded the library\n");
    std::abort();
  }
  if (r.reason.isEmpty() && (r.api_version != gpix::plugin::kApiVersion || r.name.isEmpty())) {
    std::fprintf(stderr, "fuzz_plugin_manifest: accepted a manifest without API %d and a name\n",
                 gpix::plugin::kApiVersion);
    std::abort();
  }
  return 0;
}
