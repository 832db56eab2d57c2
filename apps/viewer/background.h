#pragma once
// Work the window hands off its GUI thread (reading a session's files, saving a layer): the
// GUI thread never waits on the disk or the device.
#include <QObject>
#include <QPointer>
#include <QThreadPool>
#include <exception>
#include <memory>
#include <utility>

// Runs work() on `pool` (Qt's global pool without it) and then done(result, error) on context's
// thread; not at all when context was destroyed meanwhile. error is the message of what work()
// threw (empty when it returned); result is then default-constructed.
template <class Work, class Done>
void in_background(QObject* context, QThreadPool& pool, Work work, Done done) {
  using T = decltype(work());
  pool.start(
      [ctx = QPointer<QObject>(context), work = std::move(work), done = std::move(done)]() mutable {
        auto result = std::make_shared<T>();
        QString error;
        try {
          *result = work();
        } catch (const std::exception& e) {  // gpix errors and allocation failures alike
          error = QString::fromUtf8(e.what());
        } catch (...) {
          error = QStringLiteral("failed with an exception that is not std::exception");
        }
        if (!ctx) return;
        QMetaObject::invokeMethod(
            ctx.data(),
            [ctx, result, error, done = std::move(done)]() mutable {
              if (ctx) done(std::move(*result), error);
            },
            Qt::QueuedConnection);
      });
}

template <class Work, class Done>
void in_background(QObject* context, Work work, Done done) {
  in_background(context, *QThreadPool::globalInstance(), std::move(work), std::move(done));
}
