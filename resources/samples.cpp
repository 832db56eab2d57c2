#include "gpix/samples.h"

#include <cstring>

#include "gpix/error.h"
#include "gpix_sample_files.h"

namespace gpix {
namespace {

struct Entry {
  const char* name;
  const char* file;
  const char* description;
  Shape shape;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = {
      {"nuclei_2d", "nuclei_2d.u16",
       "synthetic fluorescence nuclei, 256 x 256, uint16 (scripts/make_samples.py)",
       Shape{256, 256}},
      {"nuclei_3d", "nuclei_3d.u16",
       "synthetic fluorescence nuclei stack, 32 x 128 x 128, uint16 (scripts/make_samples.py)",
       Shape{32, 128, 128}},
  };
  return e;
}

}  // namespace

std::vector<std::string> sample_names() {
  std::vector<std::string> names;
  for (const auto& e : entries()) names.emplace_back(e.name);
  return names;
}

Sample sample(std::string_view name) {
  for (const auto& e : entries()) {
    if (name != e.name) continue;
    for (const auto& f : embedded_samples::files()) {
      if (f.name != e.file) continue;
      HostArray h = HostArray::empty(e.shape, DType::u16);
      if (f.data.size() != h.bytes()) break;
      std::memcpy(h.data(), f.data.data(), h.bytes());  // stored little-endian, as x86 and ARM
      return {e.name, e.description, h};
    }
    throw Error("the embedded sample '" + std::string(name) + "' is missing or has the wrong size");
  }
  std::string names;
  for (const auto& n : sample_names()) names += (names.empty() ? "" : ", ") + n;
  throw InvalidArgument("there is no sample named '" + std::string(name) + "'; the samples are: " +
                        names);
}

}  // namespace gpix
