#pragma once
// Sample images built into gpix, so that a first run shows something real at once.
#include <string>
#include <string_view>
#include <vector>

#include "gpix/host_array.h"

namespace gpix {

struct Sample {
  std::string name;         // "nuclei_2d"
  std::string description;  // one line
  HostArray image;
};

// The names of the built-in samples; the first is the default.
std::vector<std::string> sample_names();
// The sample of that name; throws InvalidArgument listing the names when there is none.
Sample sample(std::string_view name = "nuclei_2d");

}  // namespace gpix
