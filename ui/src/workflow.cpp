#include "gpix/ui/workflow.h"
#include "gpix/catalog.h"

#include <QHash>
#include <QRegularExpression>
#include <QSet>

#include "gpix/error.h"
#include "gpix/scalar.h"

namespace gpix::ui {

QString param_text(const gpix::ParamValue& v) {
  if (const auto* d = std::get_if<double>(&v))
    return QString::fromStdString(gpix::Scalar(*d).str());
  return QString::fromStdString(std::get<std::string>(v));
}

void Workflow::append(const WorkflowStep& s) {
  steps_.append(s);
  emit changed();
}

void Workflow::remove_last() {
  if (steps_.isEmpty()) return;
  steps_.removeLast();
  emit changed();
}

void Workflow::clear() {
  steps_.clear();
  emit changed();
}

QStringList Workflow::sources() const {
  QSet<QString> produced;
  QStringList out;
  for (const WorkflowStep& s : steps_) {
    for (const QString& in : s.inputs) {
      if (!produced.contains(in) && !out.contains(in)) out << in;
    }
    produced.insert(s.output);
  }
  return out;
}

namespace {

// A C++ / shell identifier made from a layer name.
QString identifier(const QString& name, QSet<QString>& used) {
  QString id = name.toLower();
  id.replace(QRegularExpression(QStringLiteral("[^a-z0-9_]+")), QStringLiteral("_"));
  id.remove(QRegularExpression(QStringLiteral("^_+|_+$")));
  if (id.isEmpty() || id[0].isDigit()) id.prepend(QStringLiteral("img_"));
  QString unique = id;
  for (int i = 2; used.contains(unique); ++i) unique = id + QLatin1Char('_') + QString::number(i);
  used.insert(unique);
  return unique;
}

QString shell_quote(QString s) {
  s.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
  return QLatin1Char('\'') + s + QLatin1Char('\'');
}

// A shell word: as it is when it holds only characters no shell treats specially, quoted
// otherwise. Operation names and parameter keys come from the catalog today, but a script
// is written from whatever the workflow holds, so nothing reaches the script unquoted.
QString shell_word(const QString& s) {
  static const QRegularExpression plain(QStringLiteral("^[A-Za-z0-9_.,:/+=@%-]+$"));
  return plain.match(s).hasMatch() ? s : shell_quote(s);
}

// Text for a comment line (shell or C++): a layer or file name may hold a newline, which
// would end the comment and turn the rest of the name into a command. Control characters,
// line and paragraph separators and the backslash are written as escapes instead.
QString comment_text(const QString& s) {
  QString out;
  for (const QChar c : s) {
    const char16_t u = c.unicode();
    if (u == u'\\') {
      out += QStringLiteral("\\\\");
    } else if (u < 0x20 || u == 0x7f || u == 0x2028 || u == 0x2029 || (u >= 0x80 && u < 0xa0)) {
      out += QStringLiteral("\\u%1").arg(static_cast<int>(u), 4, 16, QLatin1Char('0'));
    } else {
      out += c;
    }
  }
  return out;
}

// A C++ string literal holding exactly `s` (as UTF-8): quotes, backslashes and every byte
// outside printable ASCII escaped in octal, which, unlike \x, cannot swallow a following
// hexadecimal digit.
QString cpp_string(const QString& s) {
  QString out = QStringLiteral("\"");
  for (const char b : s.toUtf8()) {
    const auto u = static_cast<unsigned char>(b);
    if (u == '"' || u == '\\') {
      out += QStringLiteral("\\") + QLatin1Char(static_cast<char>(u));
    } else if (u < 0x20 || u >= 0x7f || u == '?') {
      // '?' too: "??/" would be a trigraph in older dialects.
      out += QStringLiteral("\\%1").arg(static_cast<int>(u), 3, 8, QLatin1Char('0'));
    } else {
      out += QLatin1Char(static_cast<char>(u));
    }
  }
  return out + QLatin1Char('"');
}

}  // namespace

QString Workflow::to_cli_script(const QString& gpix_program) const {
  QSet<QString> used = {QStringLiteral("GPIX")};
  QHash<QString, QString> var;  // layer name -> shell variable
  // GPIX names the CLI: the one installed beside the viewer when it exported the script, or
  // the caller's choice, so that the script runs without gpix on PATH.
  QString out = QStringLiteral(
                    "#!/bin/sh\n"
                    "# gpix workflow recorded by gpix-viewer. Arguments: the source images.\n"
                    "set -eu\n"
                    "GPIX=${GPIX:-%1}\n")
                    .arg(shell_word(gpix_program));
  const QStringList src = sources();
  QStringList usage;
  for (qsizetype i = 0; i < src.size(); ++i) usage << QStringLiteral("IMAGE%1").arg(i + 1);
  for (qsizetype i = 0; i < src.size(); ++i) {
    const QString v = identifier(src[i], used);
    var.insert(src[i], v);
    out += QStringLiteral("%1=\"${%2:?usage: $0 %3}\"  # recorded on layer '%4'\n")
               .arg(v, QString::number(i + 1), usage.join(QLatin1Char(' ')), comment_text(src[i]));
  }
  for (const WorkflowStep& s : steps_) {
    const QString v = identifier(s.output, used);
    QString line = QStringLiteral("\"$GPIX\" run ") + shell_word(s.operation);
    for (const QString& in : s.inputs) {
      // An input no step produced and no argument names cannot occur (sources() lists every
      // such layer); quoting keeps even that case inert.
      line += var.contains(in) ? QStringLiteral(" \"$%1\"").arg(var.value(in))
                               : QLatin1Char(' ') + shell_quote(in);
    }
    QString params;
    for (const auto& [k, val] : s.params) {
      params += QStringLiteral(" --%1 %2")
                    .arg(shell_word(QString::fromStdString(k)), shell_quote(param_text(val)));
    }
    // `gpix run NAME IN... OUT --param value`: NRRD keeps every dtype and the metadata;
    // table results (histograms, statistics) go to CSV.
    const bool table = gpix::filter(s.operation.toStdString()).output == gpix::OutputKind::table;
    out += QStringLiteral("%1=%2\n").arg(
        v, shell_quote(v + (table ? QStringLiteral(".csv") : QStringLiteral(".nrrd"))));
    out += line + QStringLiteral(" \"$%1\"").arg(v) + params + QLatin1Char('\n');
    var.insert(s.output, v);
  }
  return out;
}

QString Workflow::to_cpp() const {
  QSet<QString> used = {QStringLiteral("gpix"), QStringLiteral("workflow")};
  QHash<QString, QString> var;
  QStringList args;
  for (const QString& s : sources()) {
    const QString v = identifier(s, used);
    var.insert(s, v);
    args << QStringLiteral("const gpix::Array& ") + v;
  }
  QString out = QStringLiteral(
                    "// gpix workflow recorded by gpix-viewer.\n"
                    "#include <gpix/gpix.h>\n\n"
                    "gpix::Array workflow(%1) {\n")
                    .arg(args.join(QStringLiteral(", ")));
  QString last;
  for (const WorkflowStep& s : steps_) {
    const QString v = identifier(s.output, used);
    QStringList ins;
    for (const QString& in : s.inputs) ins << var.value(in, in);
    QString inputs =
        ins.size() == 1
            ? ins[0]
            : QStringLiteral("std::vector<gpix::Array>{%1}").arg(ins.join(QStringLiteral(", ")));
    QStringList ps;
    for (const auto& [k, val] : s.params) {
      const QString text =
          std::holds_alternative<double>(val)
              ? param_text(val) +
                    (param_text(val).contains(QRegularExpression(QStringLiteral("[.en]")))
                         ? QString()
                         : QStringLiteral(".0"))
              : QStringLiteral("std::string(%1)").arg(cpp_string(param_text(val)));
      ps << QStringLiteral("{%1, %2}").arg(cpp_string(QString::fromStdString(k)), text);
    }
    out += QStringLiteral("  const gpix::Array %1 = gpix::run(%2, %3, {%4}).array;\n")
               .arg(v, cpp_string(s.operation), inputs, ps.join(QStringLiteral(", ")));
    var.insert(s.output, v);
    last = v;
  }
  out += QStringLiteral("  return %1;\n}\n").arg(last.isEmpty() ? QStringLiteral("{}") : last);
  return out;
}

QList<int> Workflow::rerun(Workspace& host, int input) const {
  if (!host.has_layer(input)) throw gpix::InvalidArgument("rerun: the input layer does not exist");
  const QStringList src = sources();
  QHash<QString, int> map;  // recorded layer name -> layer id now
  if (!src.isEmpty()) map.insert(src.first(), input);
  QList<int> created;
  for (const WorkflowStep& s : steps_) {
    std::vector<gpix::Array> arrays;
    Layer first;  // its calibration goes to the result
    for (const QString& in : s.inputs) {
      const int id = map.contains(in) ? map.value(in) : host.find_layer(in);
      const Layer l = host.layer(id);
      if (!first.valid()) first = l;
      if (!l.array.valid()) {
        throw gpix::InvalidArgument("rerun: step '" + s.operation.toStdString() +
                                    "' needs layer '" + in.toStdString() +
                                    "', which is not on the device");
      }
      arrays.push_back(l.array);
    }
    const gpix::Result r = gpix::run(s.operation.toStdString(), arrays, s.params);
    if (r.is_table()) continue;
    Layer out;
    out.name = s.operation;
    out.array = r.array;
    inherit_calibration(first, out);
    const gpix::OutputKind kind = gpix::filter(s.operation.toStdString()).output;
    if (kind == gpix::OutputKind::labels) out.colormap = QStringLiteral("labels");
    const int id = host.add_layer(out);
    map.insert(s.output, id);
    created << id;
  }
  return created;
}

AddLayerCommand::AddLayerCommand(Workspace& host, Layer layer, Workflow* workflow,
                                 WorkflowStep step)
    : host_(host), layer_(std::move(layer)), workflow_(workflow), step_(std::move(step)) {
  setText(QObject::tr("Add %1").arg(layer_.name));
}

void AddLayerCommand::redo() {
  id_ = host_.add_layer(layer_);
  if (workflow_ && !step_.operation.isEmpty()) {
    step_.output = host_.layer(id_).name;
    workflow_->append(step_);
  }
}

void AddLayerCommand::undo() {
  if (host_.has_layer(id_)) {
    layer_ = host_.layer(id_);  // keep display changes made since, for redo
    host_.remove_layer(id_);
  }
  if (workflow_ && !step_.operation.isEmpty()) workflow_->remove_last();
  id_ = -1;
}

}  // namespace gpix::ui
