#include "help_dialogs.h"

#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QListWidget>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "gpix/catalog.h"
#include "gpix/device.h"
#include "gpix/ui/filter_help.h"
#include "gpix/version.h"

FilterHelpDialog::FilterHelpDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Filter help"));
  setObjectName(QStringLiteral("filter_help"));
  auto* v = new QVBoxLayout(this);
  auto* split = new QSplitter;
  list_ = new QListWidget;
  list_->setObjectName(QStringLiteral("filter_help_list"));
  for (const gpix::FilterInfo& f : gpix::filters()) {
    auto* item = new QListWidgetItem(QString::fromStdString(f.name));
    item->setToolTip(gpix::ui::filter_summary(f));
    list_->addItem(item);
  }
  page_ = new QTextBrowser;
  page_->setObjectName(QStringLiteral("filter_help_page"));
  split->addWidget(list_);
  split->addWidget(page_);
  split->setStretchFactor(1, 3);
  v->addWidget(split, 1);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(box, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(box);
  connect(list_, &QListWidget::currentTextChanged, this, &FilterHelpDialog::show_filter);
  resize(860, 560);
  if (list_->count()) list_->setCurrentRow(0);
}

bool FilterHelpDialog::show_filter(const QString& name) {
  for (const gpix::FilterInfo& f : gpix::filters()) {
    if (QString::fromStdString(f.name) != name) continue;
    page_->setHtml(gpix::ui::filter_help_html(f));
    const auto items = list_->findItems(name, Qt::MatchExactly);
    if (!items.isEmpty() && list_->currentItem() != items.first()) {
      list_->setCurrentItem(items.first());
    }
    return true;
  }
  return false;
}

QString FilterHelpDialog::current_html() const {
  return page_->toHtml();
}

QDialog* make_text_dialog(QWidget* parent, const QString& title, const QString& html) {
  auto* d = new QDialog(parent);
  d->setWindowTitle(title);
  auto* v = new QVBoxLayout(d);
  auto* text = new QTextBrowser;
  text->setObjectName(QStringLiteral("help_text"));
  text->setHtml(html);
  text->setOpenExternalLinks(true);
  v->addWidget(text);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Close);
  QObject::connect(box, &QDialogButtonBox::rejected, d, &QDialog::reject);
  v->addWidget(box);
  d->resize(680, 560);
  return d;
}

QString about_html() {
  QString devices;
  for (const gpix::Device& d : gpix::devices()) {
    devices += QStringLiteral("<li>%1</li>").arg(QString::fromStdString(d.label()).toHtmlEscaped());
  }
  if (devices.isEmpty()) devices = QObject::tr("<li>none found</li>");
  return QObject::tr(
             "<h3>gpix viewer %1</h3>"
             "<p>View images and run gpix filters on GPUs and CPUs (OpenCL and "
             "CUDA). The same filters run from the <tt>gpix</tt> command line tool "
             "and from C++ (<tt>find_package(gpix)</tt>).</p>"
             "<p>Devices found:</p><ul>%2</ul>"
             "<p>Built with Qt %3, running on Qt %4.</p>")
      .arg(QStringLiteral(GPIX_VERSION_STRING), devices, QStringLiteral(QT_VERSION_STR),
           QString::fromLatin1(qVersion()));
}
