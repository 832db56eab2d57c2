#include "pass_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace gpix::ui::detail {

PassBar::PassBar(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("pass_bar"));
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  label_ = new QLabel;
  label_->setObjectName(QStringLiteral("pass_text"));
  label_->setWordWrap(true);
  label_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setObjectName(QStringLiteral("pass_cancel"));
  cancel_->setToolTip(tr("Stop reading the file (after the slab being read)"));
  retry_ = new QPushButton(tr("Retry"));
  retry_->setObjectName(QStringLiteral("pass_retry"));
  retry_->setToolTip(tr("Read the file again"));
  retry_->hide();
  row->addWidget(label_, 1);
  row->addWidget(cancel_);
  row->addWidget(retry_);
  connect(cancel_, &QPushButton::clicked, this, &PassBar::cancel);
  connect(retry_, &QPushButton::clicked, this, &PassBar::retry);
  timer_.setInterval(100);
  connect(&timer_, &QTimer::timeout, this, &PassBar::tick);
  hide();
}

PassBar::~PassBar() {
  if (token_) token_->cancel = true;  // nobody will show it
}

std::shared_ptr<PassToken> PassBar::start(const QString& what) {
  if (token_) token_->cancel = true;
  token_ = std::make_shared<PassToken>();
  what_ = what;
  cancel_->setVisible(true);
  retry_->setVisible(false);
  tick();
  timer_.start();
  show();
  return token_;
}

void PassBar::finish(const std::shared_ptr<PassToken>& token, const QString& text, bool retry) {
  if (token != token_) return;
  token_.reset();
  timer_.stop();
  cancel_->setVisible(false);
  retry_->setVisible(retry);
  label_->setText(text);
  setVisible(!text.isEmpty());
}

void PassBar::cancel() {
  if (!token_) return;
  token_->cancel = true;
  const auto t = token_;
  finish(t, tr("%1: cancelled").arg(what_), true);
  emit cancelled();
}

void PassBar::note(const QString& text) {
  if (token_) return;
  retry_->setVisible(false);
  cancel_->setVisible(false);
  label_->setText(text);
  setVisible(!text.isEmpty());
}

QString PassBar::text() const {
  return label_->text();
}

void PassBar::tick() {
  if (!token_) return;
  const std::size_t n = token_->total, d = token_->done;
  label_->setText(n ? tr("%1: slab %2 of %3").arg(what_).arg(std::min(d + 1, n)).arg(n)
                    : tr("%1: waiting to read the file…").arg(what_));
}

}  // namespace gpix::ui::detail
