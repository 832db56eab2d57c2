#pragma once
// The longest gap between turns of the event loop while it is being watched: a 5 ms precise
// timer whose ticks should come every 5 ms; anything that holds the GUI thread delays them.
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <algorithm>

class StallMeter : public QObject {
 public:
  StallMeter() {
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(5);
    connect(&timer_, &QTimer::timeout, this, [this] {
      const qint64 now = clock_.nsecsElapsed();
      if (last_ >= 0 && now - last_ > worst_) {
        worst_ = now - last_;
        worst_end_ = now;
      }
      last_ = now;
      ++ticks_;
    });
  }
  void start() {
    worst_ = 0;
    worst_end_ = 0;
    last_ = -1;
    ticks_ = 0;
    clock_.start();
    timer_.start();
  }
  void stop() { timer_.stop(); }
  double worst_ms() const { return double(worst_) / 1e6; }
  int ticks() const { return ticks_; }
  // When the longest stall ended, in ms since start().
  double worst_end_ms() const { return double(worst_end_) / 1e6; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = -1;
  qint64 worst_ = 0;
  qint64 worst_end_ = 0;
  int ticks_ = 0;
};
