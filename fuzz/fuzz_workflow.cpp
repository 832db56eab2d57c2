// libFuzzer target: a recorded workflow as the viewer's session files hold it (the session
// object's "workflow" array, or a bare array of steps: operation, inputs, params, output),
// read by gpix::ui::Workflow::from_json, then written back (to_json), exported as a shell
// script and as C++ (to_cli_script, to_cpp) and listed (sources()).
// The contract: from_json takes the steps or throws gpix::InvalidArgument (naming the step and
// field); what it took writes out as JSON that reads back to the same JSON; the exports never
// fail for steps it took. A broken contract aborts (a finding). That the exports are safe for
// any name is test_ui_workflow_export's (it runs the scripts); here they meet any input.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "gpix/error.h"
#include "gpix/ui/workflow.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const QJsonDocument doc = QJsonDocument::fromJson(
      QByteArray(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)));
  const QJsonArray steps =
      doc.isArray() ? doc.array() : doc.object().value(QStringLiteral("workflow")).toArray();
  gpix::ui::Workflow w;
  try {
    w.from_json(steps);
  } catch (const gpix::InvalidArgument&) {
    return 0;  // refused, naming what is wrong: the contract
  }
  const QJsonArray written = w.to_json();
  gpix::ui::Workflow again;
  try {
    again.from_json(written);
  } catch (const gpix::Error& e) {
    std::fprintf(stderr, "fuzz_workflow: what to_json wrote does not read back: %s\n", e.what());
    std::abort();
  }
  if (again.to_json() != written) {
    std::fprintf(stderr, "fuzz_workflow: the workflow changed on its way through JSON\n");
    std::abort();
  }
  (void)w.sources();
  (void)w.to_cli_script();
  (void)w.to_cpp();
  return 0;
}
