#pragma once
// Automatic contrast of a file-backed layer over its whole stack, for the widgets that offer
// Auto (the layer list with Edit > Auto contrast, the Histogram dock): the streamed pass of
// stack_auto_contrast on the long passes' thread, shown in a PassBar with Cancel and Retry.
// The GUI thread never waits on the file; the layer keeps its limits until the new ones arrive.
#include <QObject>
#include <functional>

#include "gpix/ui/workspace.h"

namespace gpix::ui::detail {

class PassBar;

// Starts the pass for layer `id` (file-backed) in `bar` (a pass shown there before is
// cancelled). `done(low, high)` runs on context's thread when the limits arrive and the layer
// still reads the same file; `ended()` runs when the pass ends whichever way (limits, error or
// cancel). An error or a cancel changes nothing; the bar says why and offers Retry.
void start_stack_auto_contrast(QObject* context, Workspace& host, int id, PassBar* bar,
                               std::function<void(double, double)> done,
                               std::function<void()> ended);

}  // namespace gpix::ui::detail
