// libFuzzer target: what `gpix run` parses from its command line, on any text: the parameters
// of a catalog filter chosen by the input (gpix::parse_param, each with its spec), a dtype name
// (gpix::parse_dtype), a --tile-budget size (cli::parse_bytes) and a raw file's --shape
// (cli::parse_shape). The option syntax itself is Qt's QCommandLineParser.
// The contract: a value of the kind the spec says (a number for numeric and boolean
// parameters, 0 or 1 for booleans, text for choices; a budget of 1 byte to 1.8e19; a valid
// Shape), or gpix::InvalidArgument saying what is taken. A broken contract aborts (a finding);
// ranges are the catalog's run() checks, which fuzz_api meets.
#include <fuzzer/FuzzedDataProvider.h>

#include <QString>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "../apps/cli/args.h"
#include "gpix/catalog.h"
#include "gpix/dtype.h"
#include "gpix/error.h"

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_cli_args: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  static const std::vector<const gpix::ParamSpec*> specs = [] {
    std::vector<const gpix::ParamSpec*> v;
    for (const auto& f : gpix::filters())
      for (const auto& p : f.params) v.push_back(&p);
    return v;
  }();
  const int which = in.ConsumeIntegralInRange(0, 3);
  const std::string text = in.ConsumeRandomLengthString(64);
  const QString qtext = QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
  try {
    switch (which) {
      case 0: {
        const gpix::ParamSpec& spec =
            *specs[in.ConsumeIntegralInRange<std::size_t>(0, specs.size() - 1)];
        const gpix::ParamValue v = gpix::parse_param(spec, text);
        const bool choice = spec.type == gpix::ParamType::choice;
        if (choice != std::holds_alternative<std::string>(v))
          broken("parse_param gave the wrong kind of value for '" + spec.name + "'");
        if (spec.type == gpix::ParamType::boolean) {
          const double b = std::get<double>(v);
          if (b != 0.0 && b != 1.0) broken("a boolean parameter parsed to another number");
        }
        break;
      }
      case 1:
        (void)gpix::parse_dtype(text);  // nullopt for what is not a dtype name
        break;
      case 2: {
        const std::uint64_t b = gpix::cli::parse_bytes(qtext);
        if (b == 0 || static_cast<double>(b) > 1.8e19) broken("parse_bytes took " + text);
        break;
      }
      default: {
        const gpix::Shape s = gpix::cli::parse_shape(qtext);
        if (s.ndim() < 1 || s.ndim() > 3 || s.elements() == 0) broken("a shape of no pixels");
        break;
      }
    }
  } catch (const gpix::InvalidArgument&) {
    // Refused, saying what is taken: the contract.
  }
  return 0;
}
