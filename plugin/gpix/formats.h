#pragma once
// The file formats the gpix plugin contributes: raw files (gpix/raw.h of gpix_io: a JSON
// sidecar or a NAME_ZxYxX_DTYPE.raw name, as the CLI reads them), PNG through Qt's decoder and
// gpix_qt's QImage conversion, every format of gpix_io (TIFF, NRRD, MetaImage, NIfTI, JPEG),
// and the embedded samples ("sample", "sample:NAME"). A reader registered later takes
// precedence for the patterns it shares with these.
#include "gpix/plugin_api.h"

namespace gpix::formats {

gpix::plugin::Reader raw_reader();
gpix::plugin::Writer raw_writer();
gpix::plugin::Reader png_reader();
gpix::plugin::Writer png_writer();
gpix::plugin::Reader sample_reader();
// gpix_io's formats; a multi-channel file opens as a composite and a composite is written with
// its channel mark (io::Metadata::channels), so that it opens as one again.
gpix::plugin::Reader io_reader();
gpix::plugin::Writer io_writer();

// Registers all of the above with a host.
void register_all(gpix::plugin::HostContext& host);

}  // namespace gpix::formats
