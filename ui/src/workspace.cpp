#include "gpix/ui/workspace.h"

namespace gpix::ui {

// Out of line: the vtable and the meta-object live in gpix_ui alone.
Workspace::~Workspace() = default;

}  // namespace gpix::ui
