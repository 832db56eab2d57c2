#include "gpix/ui/workflow.h"
#include "gpix/catalog.h"

#include <QHash>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSet>
#include <QUndoStack>

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
    // A composite that the viewer opened from colour pixels is one file of RGB pixels, which
    // `gpix run` reads only with a policy: split makes its colours the channels it filters one
    // by one. Grayscale files (a multi-channel TIFF, the NRRD of an earlier step) read the same
    // with it.
    bool split = false;
    for (qsizetype k = 0; k < s.per_channel.size() && k < s.inputs.size(); ++k)
      split = split || (s.per_channel[k] && src.contains(s.inputs[k]));
    if (split) line += QStringLiteral(" --channels split");
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
    const bool channels = s.per_channel.contains(true);
    if (channels) {
      // The inputs as one vector, and which of them are composites (a (C, y, x) array filtered
      // plane by plane, gpix/channels.h): the viewer ran the step so.
      QStringList marks;
      for (qsizetype k = 0; k < ins.size(); ++k)
        marks << (k < s.per_channel.size() && s.per_channel[k] ? QStringLiteral("true")
                                                               : QStringLiteral("false"));
      inputs = QStringLiteral("std::vector<gpix::Array>{%1}, std::vector<bool>{%2}")
                   .arg(ins.join(QStringLiteral(", ")), marks.join(QStringLiteral(", ")));
    }
    out += QStringLiteral("  const gpix::Array %1 = gpix::%2(%3, %4, {%5}).array;\n")
               .arg(v, channels ? QStringLiteral("run_per_channel") : QStringLiteral("run"),
                    cpp_string(s.operation), inputs, ps.join(QStringLiteral(", ")));
    var.insert(s.output, v);
    last = v;
  }
  out += QStringLiteral("  return %1;\n}\n").arg(last.isEmpty() ? QStringLiteral("{}") : last);
  return out;
}

QJsonArray Workflow::to_json() const {
  QJsonArray out;
  for (const WorkflowStep& s : steps_) {
    QJsonObject params;
    for (const auto& [k, v] : s.params) {
      const QString key = QString::fromStdString(k);
      if (const auto* d = std::get_if<double>(&v))
        params.insert(key, *d);
      else
        params.insert(key, QString::fromStdString(std::get<std::string>(v)));
    }
    QJsonObject step{{QStringLiteral("operation"), s.operation},
                     {QStringLiteral("inputs"), QJsonArray::fromStringList(s.inputs)},
                     {QStringLiteral("params"), params},
                     {QStringLiteral("output"), s.output}};
    if (s.per_channel.contains(true)) {
      QJsonArray marks;
      for (const bool b : s.per_channel) marks.append(b);
      step.insert(QStringLiteral("per_channel"), marks);
    }
    out.append(step);
  }
  return out;
}

void Workflow::from_json(const QJsonArray& steps) {
  QList<WorkflowStep> parsed;
  for (qsizetype i = 0; i < steps.size(); ++i) {
    const std::string where = "workflow step " + std::to_string(i + 1);
    const QJsonObject o = steps[i].toObject();
    WorkflowStep s;
    s.operation = o.value(QStringLiteral("operation")).toString();
    try {
      (void)gpix::filter(s.operation.toStdString());
    } catch (const gpix::Error& e) {
      throw gpix::InvalidArgument(where + ": " + e.what());
    }
    for (const QJsonValue v : o.value(QStringLiteral("inputs")).toArray()) {
      s.inputs << v.toString();
    }
    s.output = o.value(QStringLiteral("output")).toString();
    if (s.inputs.isEmpty() || s.output.isEmpty()) {
      throw gpix::InvalidArgument(where + " ('" + s.operation.toStdString() +
                                  "') lacks its inputs or its output layer name");
    }
    // Absent in sessions written before steps recorded it: no input ran channel by channel.
    const QJsonArray marks = o.value(QStringLiteral("per_channel")).toArray();
    for (const QJsonValue v : marks) {
      if (!v.isBool()) {
        throw gpix::InvalidArgument(where + ": per_channel holds " +
                                    (v.isString() ? "text" : "a value") +
                                    " where true or false belongs (one per input)");
      }
      s.per_channel << v.toBool();
    }
    if (!s.per_channel.isEmpty() && s.per_channel.size() != s.inputs.size()) {
      throw gpix::InvalidArgument(where + ": per_channel has " +
                                  std::to_string(s.per_channel.size()) + " entries for " +
                                  std::to_string(s.inputs.size()) + " inputs; give one per input");
    }
    const QJsonObject params = o.value(QStringLiteral("params")).toObject();
    for (auto it = params.begin(); it != params.end(); ++it) {
      if (it->isDouble()) {
        s.params.emplace(it.key().toStdString(), it->toDouble());
      } else if (it->isString()) {
        s.params.emplace(it.key().toStdString(), it->toString().toStdString());
      } else {
        throw gpix::InvalidArgument(where + ": parameter '" + it.key().toStdString() +
                                    "' is neither a number nor text");
      }
    }
    parsed << s;
  }
  steps_ = parsed;
  emit changed();
}

namespace {

// The text of a parameter's default, as param_text() writes values.
QString default_text(const gpix::ParamSpec& p) {
  if (p.type == gpix::ParamType::choice) return QString::fromStdString(p.default_choice);
  return param_text(p.default_value);
}

}  // namespace

QString result_name(const QString& operation, const gpix::Params& params, const QStringList& inputs,
                    int ndim) {
  const std::vector<gpix::ParamSpec>* specs = nullptr;
  try {
    specs = &gpix::filter(operation.toStdString()).params;
  } catch (const gpix::Error&) {
  }
  QList<QPair<QString, QString>> shown;  // name, value text
  if (specs) {
    const bool all = specs->size() <= 4;
    QHash<QString, QString> value;
    QStringList order;
    for (const gpix::ParamSpec& p : *specs) {
      const QString name = QString::fromStdString(p.name);
      if (ndim < 3 && name.endsWith(QStringLiteral("_z"))) continue;
      const auto it = params.find(p.name);
      const QString text = it != params.end() ? param_text(it->second) : default_text(p);
      if (!all && text == default_text(p)) continue;
      value.insert(name, text);
      order << name;
    }
    QSet<QString> done;
    for (const QString& name : order) {
      if (done.contains(name)) continue;
      static const QRegularExpression axis(QStringLiteral("^(.*)_([xyz])$"));
      const auto m = axis.match(name);
      if (!m.hasMatch()) {
        shown.append({name, value.value(name)});
        continue;
      }
      // Group the axes of one stem that share a value: "sigma=2" or "radius_xy=2".
      const QString stem = m.captured(1);
      QString axes;
      for (const QChar a : {QLatin1Char('x'), QLatin1Char('y'), QLatin1Char('z')}) {
        const QString n = stem + QLatin1Char('_') + a;
        if (order.contains(n) && !done.contains(n) && value.value(n) == value.value(name)) {
          axes += a;
          done.insert(n);
        }
      }
      int present = 0;
      for (const QChar a : {QLatin1Char('x'), QLatin1Char('y'), QLatin1Char('z')})
        present += order.contains(stem + QLatin1Char('_') + a) ? 1 : 0;
      const QString label =
          axes.size() == present && present > 1 ? stem : QString(stem + QLatin1Char('_') + axes);
      shown.append({label, value.value(name)});
    }
  }
  QStringList parts;
  for (qsizetype i = 0; i < shown.size() && i < 3; ++i)
    parts << shown[i].first + QLatin1Char('=') + shown[i].second;
  if (shown.size() > 3) parts << QStringLiteral("…");
  QString what = operation;
  if (!parts.isEmpty()) what += QLatin1Char(' ') + parts.join(QLatin1Char(' '));
  const QString base = inputs.value(0);
  QString name = base.isEmpty() ? what : base + QStringLiteral(" · ") + what;
  // Chains of results grow with every step: keep the newest part whole.
  if (name.size() > 90) name = QStringLiteral("…") + name.right(89);
  return name;
}

AddLayerCommand::AddLayerCommand(Workspace& host, Layer layer, Workflow* workflow,
                                 WorkflowStep step)
    : host_(host), layer_(std::move(layer)), workflow_(workflow), step_(std::move(step)) {
  setText(QObject::tr("Add %1").arg(layer_.name));
}

void AddLayerCommand::redo() {
  if (id_ < 0) {
    id_ = host_.add_layer(layer_);
    if (const auto at = host_.layer_ids().indexOf(in_place_of_); in_place_of_ >= 0 && at >= 0)
      host_.move_layer(id_, int(at) + 1);
  } else {
    host_.restore_layer(id_, layer_, index_);
  }
  hid_input_ = false;
  if (in_place_of_ >= 0 && host_.has_layer(in_place_of_)) {
    Layer input = host_.layer(in_place_of_);
    if (input.visible) {
      input.visible = false;
      host_.replace_layer(in_place_of_, input);
      hid_input_ = true;
    }
  }
  if (workflow_ && !step_.operation.isEmpty()) {
    step_.output = host_.layer(id_).name;
    workflow_->append(step_);
  }
}

void AddLayerCommand::undo() {
  if (host_.has_layer(id_)) {
    layer_ = host_.layer(id_);  // keep display changes made since, for redo
    index_ = int(host_.layer_ids().indexOf(id_));
    host_.remove_layer(id_);
  }
  if (hid_input_ && host_.has_layer(in_place_of_)) {
    Layer input = host_.layer(in_place_of_);
    input.visible = true;
    host_.replace_layer(in_place_of_, input);
  }
  if (workflow_ && !step_.operation.isEmpty()) workflow_->remove_last();
}

}  // namespace gpix::ui
