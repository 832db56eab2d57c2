#pragma once
// One line that shows a pass over a file-backed stack under way ("Histogram of the whole
// stack: slab 3 of 40") with its Cancel button, or how the last one ended ("… from the cache").
// The worker reports into a PassToken (atomics); the bar reads them on a timer, so no signal
// crosses threads and the GUI thread never waits on the pass.
#include <QString>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <cstddef>
#include <memory>

#include "gpix/ui/stack_passes.h"

class QLabel;
class QPushButton;

namespace gpix::ui::detail {

struct PassToken {
  std::atomic<bool> cancel{false};
  std::atomic<std::size_t> done{0}, total{0};
  // What to hand to the stack_passes functions.
  static SlabProgress progress_of(const std::shared_ptr<PassToken>& t) {
    return [t](std::size_t d, std::size_t n) {
      t->total = n;
      t->done = d;
    };
  }
};

class PassBar : public QWidget {
  Q_OBJECT
 public:
  explicit PassBar(QWidget* parent = nullptr);
  ~PassBar() override;
  // Shows `what` with its progress and Cancel; cancels the pass shown before (only the newest
  // counts).
  std::shared_ptr<PassToken> start(const QString& what);
  // The pass with this token ended: shows `text` (hidden when empty), with a Retry button
  // (retry()) when `retry`. A token that is no longer the newest changes nothing.
  void finish(const std::shared_ptr<PassToken>& token, const QString& text = {},
              bool retry = false);
  // Stops the pass under way (its worker throws gpix::Cancelled at the next slab) and offers
  // Retry.
  void cancel();
  bool running() const { return token_ != nullptr; }
  // Shows `text` while no pass runs (a result that came from a cache).
  void note(const QString& text);
  QString text() const;
  QPushButton* cancel_button() const { return cancel_; }

 signals:
  void cancelled();
  void retry();

 private:
  void tick();
  QLabel* label_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* retry_ = nullptr;
  QTimer timer_;
  QString what_;
  std::shared_ptr<PassToken> token_;
};

}  // namespace gpix::ui::detail
