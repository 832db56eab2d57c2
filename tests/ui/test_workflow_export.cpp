// The workflow's generated artefacts are safe for any layer name and parameter text: the shell
// script is run by /bin/sh with a recording stand-in for gpix, and the C++ code is compiled and
// run against a stub of the API, so a name that escapes its quoting shows up as a command that
// ran or a literal that came out different, not as a string that merely looks quoted.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include "gpix/error.h"
#include "gpix/ui/workflow.h"
#include "support/process.h"

using gpix::ui::Workflow;
using gpix::ui::WorkflowStep;

namespace {

bool write_file(const QString& path, const QByteArray& text, bool executable = false) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size())
    return false;
  f.close();
  if (executable) f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
  return true;
}

// Names a user's files and layers can really have, each trying one way out of its quoting.
// `MARK` becomes the path of a file that must never be created.
QStringList hostile_names(const QString& mark) {
  QStringList n = {
      QStringLiteral("cells\ntouch MARK\n#"),
      QStringLiteral("$(touch MARK)"),
      QStringLiteral("`touch MARK`"),
      QStringLiteral("a'b\"c; touch MARK; '"),
      QStringLiteral("tab\there\r\ntouch MARK"),
      QStringLiteral("line\u2028sep\u2029touch MARK"),
      QStringLiteral("${IFS}touch${IFS}MARK\\n\\"),
      QStringLiteral("*?[a-z] ~ > MARK"),
      QStringLiteral("\u00e9t\u00e9 \U0001F52C ?\?/ \x7f\x1b[31m"),
      QString::fromUtf8("\xff\xfe not utf-8 \xc3"),
      QStringLiteral("-"),
      QStringLiteral(""),
  };
  for (QString& s : n) s.replace(QStringLiteral("MARK"), mark);
  return n;
}

// Two steps: the hostile name is in the source layer, both results and a string parameter.
void fill(Workflow& w, const QString& name) {
  w.append(WorkflowStep{QStringLiteral("gaussian_blur"),
                        {name},
                        {{"sigma_x", 1.5}, {"note", name.toStdString()}},
                        name + QStringLiteral(" blurred")});
  w.append(WorkflowStep{QStringLiteral("multiply_scalar"),
                        {name + QStringLiteral(" blurred")},
                        {{"scalar", 2.0}},
                        name + QStringLiteral(" times 2")});
}

// Splits the recorder's log: one record per call, arguments separated by NUL.
QList<QList<QByteArray>> calls(const QByteArray& log) {
  QList<QList<QByteArray>> out;
  for (const QByteArray& rec : log.split('\x1e')) {
    if (rec.isEmpty()) continue;
    QList<QByteArray> args = rec.split('\0');
    args.removeLast();  // after the last NUL
    out << args;
  }
  return out;
}

}  // namespace

class TestWorkflowExport : public QObject {
  Q_OBJECT

 private slots:
  void cli_script_runs_only_gpix() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString mark = dir.filePath(QStringLiteral("PWNED"));
    const QString recorder = dir.filePath(QStringLiteral("record-gpix"));
    QVERIFY(write_file(recorder,
                       "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done >>\"$REC\"\n"
                       "printf '\\036' >>\"$REC\"\n",
                       true));
    int index = 0;
    for (const QString& name : hostile_names(mark)) {
      Workflow w;
      fill(w, name);
      const QString script = w.to_cli_script(recorder);
      const QString path = dir.filePath(QStringLiteral("w%1.sh").arg(index));
      const QString log = dir.filePath(QStringLiteral("w%1.log").arg(index++));
      QVERIFY(write_file(path, script.toUtf8()));
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.remove(QStringLiteral("GPIX"));  // the script's own default: the recorder
      env.insert(QStringLiteral("REC"), log);
      const gpix::test::ProcessResult sh =
          gpix::test::run_process(QStringLiteral("/bin/sh"), {path, QStringLiteral("input.tif")},
                                  {.timeout_ms = 30000, .working_dir = dir.path(), .env = env});
      QVERIFY2(sh.code == 0, qPrintable(script + QStringLiteral("\n") + QString::fromUtf8(sh.err)));
      QVERIFY2(!QFileInfo::exists(mark), qPrintable(script));
      QFile f(log);
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QList<QList<QByteArray>> got = calls(f.readAll());
      QCOMPARE(got.size(), 2);
      // gpix run NAME INPUT OUTPUT --param value ...: the file arguments are the script's
      // argument and the outputs it names; the parameter text arrives byte for byte.
      QCOMPARE(got[0].size(), 8);
      QCOMPARE(got[0][0], QByteArray("run"));
      QCOMPARE(got[0][1], QByteArray("gaussian_blur"));
      QCOMPARE(got[0][2], QByteArray("input.tif"));
      QVERIFY2(got[0][3].endsWith(".nrrd"), got[0][3].constData());
      QCOMPARE(got[0][4], QByteArray("--note"));
      QCOMPARE(got[0][5], name.toUtf8());
      QCOMPARE(got[0][6], QByteArray("--sigma_x"));
      QCOMPARE(got[0][7], QByteArray("1.5"));
      QCOMPARE(got[1].size(), 6);
      QCOMPARE(got[1][1], QByteArray("multiply_scalar"));
      QCOMPARE(got[1][2], got[0][3]);  // the second step reads what the first wrote
      QVERIFY(got[1][3].endsWith(".nrrd"));
      QVERIFY(got[1][3] != got[1][2]);
    }
  }

  void cpp_code_keeps_every_string() {
#ifndef GPIX_TEST_CXX
    QSKIP("no C++ compiler known to the test");
#else
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("gpix")));
    // A stub of the API the generated code calls: it prints what it was asked to run.
    QVERIFY(write_file(dir.filePath(QStringLiteral("gpix/gpix.h")), R"(#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <variant>
#include <vector>
namespace gpix {
struct Array {};
struct Result { Array array; };
using Param = std::pair<std::string, std::variant<double, std::string>>;
inline void put(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); std::fputc(0, stdout); }
inline Result run(const std::string& op, const Array&, std::vector<Param> ps) {
  put(op);
  for (const auto& [k, v] : ps) { put(k); if (const auto* s = std::get_if<std::string>(&v)) put(*s); }
  return {};
}
}  // namespace gpix
)"));
    // The stub first: the include in each generated function is then a no-op (#pragma once).
    QString tu = QStringLiteral("#include <gpix/gpix.h>\n");
    const QStringList names = hostile_names(QStringLiteral("MARK"));
    for (qsizetype i = 0; i < names.size(); ++i) {
      Workflow w;
      fill(w, names[i]);
      tu += QStringLiteral("namespace w%1 {\n").arg(i) + w.to_cpp() + QStringLiteral("}\n");
    }
    tu += QStringLiteral("int main() {\n");
    for (qsizetype i = 0; i < names.size(); ++i)
      tu += QStringLiteral("  (void)w%1::workflow(gpix::Array{});\n").arg(i);
    tu += QStringLiteral("}\n");
    const QString src = dir.filePath(QStringLiteral("w.cpp"));
    const QString exe = dir.filePath(QStringLiteral("w"));
    QVERIFY(write_file(src, tu.toUtf8()));
    const gpix::test::ProcessResult cc =
        gpix::test::run_process(QStringLiteral(GPIX_TEST_CXX),
                                {QStringLiteral("-std=c++20"), QStringLiteral("-Werror=trigraphs"),
                                 QStringLiteral("-I") + dir.path(), src, QStringLiteral("-o"), exe},
                                {.timeout_ms = 120000});
    QVERIFY2(cc.code == 0, qPrintable(tu + QString::fromUtf8(cc.err)));
    const gpix::test::ProcessResult run = gpix::test::run_process(exe, {}, {.timeout_ms = 30000});
    QVERIFY2(run.code == 0, run.err.constData());
    QList<QByteArray> got = run.out.split('\0');
    got.removeLast();
    QList<QByteArray> want;
    for (const QString& n : names) {
      want << "gaussian_blur"
           << "note" << n.toUtf8() << "sigma_x"
           << "multiply_scalar"
           << "scalar";
    }
    QCOMPARE(got, want);
#endif
  }

  // Steps the viewer ran on a composite (a (C, y, x) image whose planes are channels) ran
  // channel by channel; the exported code must too, or a z sigma mixes the channels. The code
  // is compiled against the real library and its result compared with plane-by-plane runs.
  void cpp_code_runs_composites_channel_by_channel() {
#if !defined(GPIX_TEST_CXX) || !defined(GPIX_TEST_CORE_LIB)
    QSKIP("no C++ compiler or library known to the test");
#else
    Workflow w;
    w.append(WorkflowStep{QStringLiteral("gaussian_blur"),
                          {QStringLiteral("cells")},
                          {{"sigma_x", 1.0}, {"sigma_y", 1.5}, {"sigma_z", 2.0}},
                          QStringLiteral("blurred"),
                          {true}});
    // A 2D image beside a composite goes whole to every channel.
    w.append(WorkflowStep{QStringLiteral("add_images"),
                          {QStringLiteral("blurred"), QStringLiteral("offsets")},
                          {},
                          QStringLiteral("sum"),
                          {true, false}});
    const QString code = w.to_cpp();
    QVERIFY2(code.contains(QStringLiteral("gpix::run_per_channel(")), qPrintable(code));
    // The session form keeps the marks, and a session without them reads as none.
    Workflow back;
    back.from_json(w.to_json());
    QCOMPARE(back.steps().at(1).per_channel, (QList<bool>{true, false}));
    QCOMPARE(back.to_cpp(), code);
    QJsonArray old = w.to_json();
    QJsonObject first = old[0].toObject();
    first.remove(QStringLiteral("per_channel"));
    old[0] = first;
    back.from_json(old);
    QVERIFY(back.steps().at(0).per_channel.isEmpty());
    QJsonObject wrong = w.to_json()[1].toObject();
    wrong.insert(QStringLiteral("per_channel"), QJsonArray{true});
    QVERIFY_THROWS_EXCEPTION(gpix::InvalidArgument, back.from_json(QJsonArray{wrong}));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString tu = code + QStringLiteral(R"(
#include <cstdio>
#include <cstring>
#include <random>
int main() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 100.f);
  const gpix::Shape s3{3, 19, 23}, s2{19, 23};
  gpix::HostArray a = gpix::HostArray::empty(s3, gpix::DType::f32);
  gpix::HostArray b = gpix::HostArray::empty(s2, gpix::DType::f32);
  for (std::size_t i = 0; i < s3.elements(); ++i) a.as<float>()[i] = u(rng);
  for (std::size_t i = 0; i < s2.elements(); ++i) b.as<float>()[i] = u(rng);
  const gpix::Array da = gpix::Array::push(a), db = gpix::Array::push(b);
  const gpix::HostArray got = workflow(da, db).pull();
  if (got.shape() != s3) { std::puts("shape"); return 2; }
  for (std::size_t c = 0; c < 3; ++c) {
    const gpix::Array blurred = gpix::run("gaussian_blur", gpix::channel_plane(da, c),
        {{"sigma_x", 1.0}, {"sigma_y", 1.5}, {"sigma_z", 2.0}}).array;
    const gpix::HostArray want =
        gpix::run("add_images", std::vector<gpix::Array>{blurred, db}, {}).array.pull();
    if (std::memcmp(want.data(), got.data() + c * want.bytes(), want.bytes()) != 0) {
      std::printf("channel %zu differs\n", c);
      return 1;
    }
  }
  std::puts("same");
  return 0;
}
)");
    const QString src = dir.filePath(QStringLiteral("w.cpp"));
    const QString exe = dir.filePath(QStringLiteral("w"));
    QVERIFY(write_file(src, tu.toUtf8()));
    const QString lib = QStringLiteral(GPIX_TEST_CORE_LIB);
    QStringList args = {QStringLiteral("-std=c++20"), QStringLiteral("-O0")};
#ifdef GPIX_TEST_SANITIZE
    args << QStringLiteral(GPIX_TEST_SANITIZE);
#endif
    for (const QString& inc : QStringLiteral(GPIX_TEST_CORE_INCLUDES).split(QLatin1Char('|')))
      args << QStringLiteral("-I") + inc;
    args << src << QStringLiteral("-o") << exe << lib
         << QStringLiteral("-Wl,-rpath,") + QFileInfo(lib).absolutePath();
    const gpix::test::ProcessResult cc =
        gpix::test::run_process(QStringLiteral(GPIX_TEST_CXX), args, {.timeout_ms = 240000});
    // The compiler's message first: QtTest cuts long messages short.
    QVERIFY2(cc.code == 0, qPrintable(QString::fromUtf8(cc.err).left(3000) + tu));
    const gpix::test::ProcessResult run = gpix::test::run_process(exe, {}, {.timeout_ms = 120000});
    QVERIFY2(run.code == 0, qPrintable(QString::fromUtf8(run.out + run.err)));
    QCOMPARE(run.out.trimmed(), QByteArray("same"));
#endif
  }
};

QTEST_GUILESS_MAIN(TestWorkflowExport)
#include "test_workflow_export.moc"
