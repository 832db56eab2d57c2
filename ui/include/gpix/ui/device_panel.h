#pragma once
// Every device of every backend, one card each (backend, type, memory, compute units,
// versions), the current one marked; "Use" switches the host's device at any time (layers are
// copied over, never lost). Memory held by layers is refreshed by a timer.
#include <QList>
#include <QTimer>
#include <QWidget>

#include "gpix/ui/workspace.h"

class QLabel;
class QPushButton;

namespace gpix::ui {

class DevicePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DevicePanel(Workspace& host, QWidget* parent = nullptr);

  int card_count() const { return int(cards_.size()); }
  // The text of card i (title + details), for tests and accessibility.
  QString card_text(int i) const;
  bool card_is_current(int i) const;
  QPushButton* use_button(int i) const;
  // Bytes of layer data on device i (what gpix can attribute; the driver's own use is not
  // included).
  std::uint64_t layer_bytes(int i) const;
  // The viewer's host memory: layers held there, and the plane cache of file-backed layers
  // against its bound (stack_file.h).
  QString host_memory_text() const;

 public slots:
  void refresh();

 private:
  struct Card {
    QLabel* title = nullptr;
    QLabel* details = nullptr;
    QLabel* memory = nullptr;
    QPushButton* use = nullptr;
  };
  Workspace& host_;
  QList<Card> cards_;
  QLabel* host_memory_ = nullptr;
  QTimer timer_;
};

}  // namespace gpix::ui
