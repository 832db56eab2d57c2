#pragma once
// The gpix command line's own option values (the catalog's parameters parse through
// gpix::parse_param). Each throws gpix::InvalidArgument saying what it takes; fuzz_cli_args
// feeds them any text.
#include <QString>
#include <cstdint>

#include "gpix/shape.h"

namespace gpix::cli {

// "256MB", "1.5GB", "512MiB", "1000000": bytes (SI and binary units, as gpix prints sizes).
std::uint64_t parse_bytes(const QString& text);

// A raw file's --shape: "Z,Y,X", "Y,X" or "X", whole numbers.
Shape parse_shape(const QString& text);

}  // namespace gpix::cli
