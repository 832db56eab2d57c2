#pragma once
// Background writes (a session's results, a drag-out file) run on threads of their own at a
// lower scheduling priority than the GUI thread: on a CPU shared with a CPU device and other
// programs, the event loop then gets the processor first whenever it has work.
namespace gpix::ui {

// Lowers the calling thread's priority (Linux: its nice value to 10; elsewhere nothing). Call it
// only on threads that do nothing but such background work: it cannot be raised back.
void lower_this_thread_priority();

}  // namespace gpix::ui
