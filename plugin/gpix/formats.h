#pragma once
// The file formats the gpix plugin contributes until gpix_io (ITK) is merged: raw files (with
// a JSON sidecar or a NAME_ZxYxX_DTYPE.raw name), PNG through QImage, and the embedded samples
// ("sample", "sample:NAME"). gpix_io registers its readers the same way:
//   host.register_reader({"itk", {"*.tif", "*.tiff", "*.nrrd", ...}, &gpix::io::read_layers});
// and, registered later, it takes precedence for the patterns it shares with these.
#include "gpix/plugin_api.h"

namespace gpix::formats {

gpix::plugin::Reader raw_reader();
gpix::plugin::Writer raw_writer();
gpix::plugin::Reader png_reader();
gpix::plugin::Writer png_writer();
gpix::plugin::Reader sample_reader();

// Registers all of the above with a host.
void register_all(gpix::plugin::HostContext& host);

}  // namespace gpix::formats
