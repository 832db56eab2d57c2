#include "gpix/ui/workflow.h"
#include "gpix/catalog.h"

#include <QHash>
#include <QRegularExpression>
#include <QSet>

#include "gpix/error.h"
#include "gpix/scalar.h"

namespace gpix::ui {

using gpix::plugin::HostContext;
using gpix::plugin::Layer;

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

}  // namespace

QString Workflow::to_cli_script() const {
  QSet<QString> used;
  QHash<QString, QString> var;  // layer name -> shell variable
  QString out = QStringLiteral(
      "#!/bin/sh\n"
      "# gpix workflow recorded by gpix-viewer. Arguments: the source images.\n"
      "set -eu\n");
  const QStringList src = sources();
  QStringList usage;
  for (qsizetype i = 0; i < src.size(); ++i) usage << QStringLiteral("IMAGE%1").arg(i + 1);
  for (qsizetype i = 0; i < src.size(); ++i) {
    const QString v = identifier(src[i], used);
    var.insert(src[i], v);
    out += QStringLiteral("%1=\"${%2:?usage: $0 %3}\"  # recorded on layer '%4'\n")
               .arg(v)
               .arg(i + 1)
               .arg(usage.join(QLatin1Char(' ')), src[i]);
  }
  for (const WorkflowStep& s : steps_) {
    const QString v = identifier(s.output, used);
    QString line = QStringLiteral("gpix run ") + s.operation;
    for (const QString& in : s.inputs) line += QStringLiteral(" \"$%1\"").arg(var.value(in, in));
    for (const auto& [k, val] : s.params) {
      line +=
          QStringLiteral(" --%1 %2").arg(QString::fromStdString(k), shell_quote(param_text(val)));
    }
    // `gpix run NAME IN... OUT --param value`: NRRD keeps every dtype and the metadata;
    // table results (histograms, statistics) go to CSV.
    const bool table = gpix::filter(s.operation.toStdString()).output == gpix::OutputKind::table;
    out += QStringLiteral("%1=%2\n").arg(
        v, shell_quote(v + (table ? QStringLiteral(".csv") : QStringLiteral(".nrrd"))));
    const qsizetype params_at = line.indexOf(QStringLiteral(" --"));
    const QString target = QStringLiteral(" \"$%1\"").arg(v);
    if (params_at < 0)
      line += target;
    else
      line.insert(params_at, target);
    out += line + QLatin1Char('\n');
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
              : QStringLiteral("std::string(\"%1\")").arg(param_text(val));
      ps << QStringLiteral("{\"%1\", %2}").arg(QString::fromStdString(k), text);
    }
    out += QStringLiteral("  const gpix::Array %1 = gpix::run(\"%2\", %3, {%4}).array;\n")
               .arg(v, s.operation, inputs, ps.join(QStringLiteral(", ")));
    var.insert(s.output, v);
    last = v;
  }
  out += QStringLiteral("  return %1;\n}\n").arg(last.isEmpty() ? QStringLiteral("{}") : last);
  return out;
}

QList<int> Workflow::rerun(HostContext& host, int input) const {
  if (!host.has_layer(input)) throw gpix::InvalidArgument("rerun: the input layer does not exist");
  const QStringList src = sources();
  QHash<QString, int> map;  // recorded layer name -> layer id now
  if (!src.isEmpty()) map.insert(src.first(), input);
  QList<int> created;
  for (const WorkflowStep& s : steps_) {
    std::vector<gpix::Array> arrays;
    for (const QString& in : s.inputs) {
      const int id = map.contains(in) ? map.value(in) : host.find_layer(in);
      const Layer l = host.layer(id);
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
    const gpix::OutputKind kind = gpix::filter(s.operation.toStdString()).output;
    if (kind == gpix::OutputKind::labels) out.colormap = QStringLiteral("labels");
    const int id = host.add_layer(out);
    map.insert(s.output, id);
    created << id;
  }
  return created;
}

AddLayerCommand::AddLayerCommand(HostContext& host, Layer layer, Workflow* workflow,
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
