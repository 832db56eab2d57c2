#pragma once
// The Help menu's windows: Quick Start, the filter reference (every catalog entry, generated
// by gpix::ui::filter_help_html) and About.
#include <QDialog>

class QListWidget;
class QTextBrowser;

class FilterHelpDialog : public QDialog {
  Q_OBJECT
 public:
  explicit FilterHelpDialog(QWidget* parent = nullptr);
  // Shows this filter's page; false when the catalog has no such filter.
  bool show_filter(const QString& name);
  QString current_html() const;
  QListWidget* list() const { return list_; }

 private:
  QListWidget* list_ = nullptr;
  QTextBrowser* page_ = nullptr;
};

// A window with one page of text (the Quick Start).
QDialog* make_text_dialog(QWidget* parent, const QString& title, const QString& html);

// The About text: version, Qt, the devices gpix found and where to read more.
QString about_html();
