#pragma once
// Device reads for display, off the GUI thread. A pull or a statistic waits behind whatever
// the device's queue holds (a 3D median can take a minute), so widgets hand such work to
// run_async() and get the result back on their own thread through a queued signal.
#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace gpix::ui::detail {

template <class T>
struct Outcome {
  std::optional<T> value;  // empty when the work threw
  QString error;           // its message
};

// The display's own threads: filter runs occupy the global pool, and contrast or a frame must
// not queue behind them on the host side as well.
QThreadPool& display_pool();

// Runs work() on display_pool() and calls done(Outcome) on context's thread once it finished;
// never when context was destroyed before (the watcher is its child). work must own what it
// uses (arrays are shared handles: capture them by value).
template <class Work, class Done>
void run_async(QObject* context, QThreadPool& pool, Work work, Done done);

template <class Work, class Done>
void run_async(QObject* context, Work work, Done done) {
  run_async(context, display_pool(), std::move(work), std::move(done));
}

// The same on another pool: long passes (a file-backed stack's statistics) take a thread of
// their own so that the display's threads stay free for frames.
QThreadPool& long_pool();

template <class Work, class Done>
void run_async(QObject* context, QThreadPool& pool, Work work, Done done) {
  using T = std::invoke_result_t<Work&>;
  auto* watcher = new QFutureWatcher<Outcome<T>>(context);
  QObject::connect(watcher, &QFutureWatcherBase::finished, context,
                   [watcher, done = std::move(done)]() mutable {
                     done(watcher->result());
                     watcher->deleteLater();
                   });
  watcher->setFuture(QtConcurrent::run(&pool, [work = std::move(work)]() mutable {
    Outcome<T> o;
    try {
      o.value = work();
    } catch (const std::exception& e) {
      o.error = QString::fromUtf8(e.what());
    }
    return o;
  }));
}

}  // namespace gpix::ui::detail
