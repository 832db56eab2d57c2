#pragma once
// Images whose first axis holds channels (fluorescence channels, the colours of an RGB file),
// not z slices: a (C, y, x) array. Filters treat a 3D array as a volume, so a blur of such an
// array with a z sigma, a 3D median or a z projection would mix the channels; people who
// filter a colour or multi-channel image expect each channel filtered on its own. The viewer
// (its composites) and `gpix run` (files marked as channels, io::Metadata::channels) both run
// filters through run_per_channel.
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix {

// Plane `c` of a (C, y, x) array as a contiguous (y, x) array on its device (a copy).
// InvalidArgument for an array that is not 3D or a plane it does not have.
Array channel_plane(const Array& array, std::size_t c);

// Runs filter `name` channel by channel: every input whose `per_channel[i]` is set is a
// (C, y, x) array and gives its plane c; so does any other input of that same shape (labels
// made channel by channel, a multi-channel image without the mark); a 2D input is passed whole
// to every channel (a mask, one label image for all channels). Image results, one (y, x) image per
// channel of one shape and dtype, are stacked into (C, y, x) in channel order. Table results are
// joined into one table whose first column, "channel", numbers the channels from 1 (C1, as the
// viewer and ImageJ name them), then the filter's columns, the rows of channel 1 first. Each
// channel runs through run_in_slabs (gpix/tiled.h), so progress and cancel in `options` follow it
// across the channels. InvalidArgument where per_channel marks no input or inputs with different
// channel counts, where another input is a stack of another shape, or where one channel's image
// result is not 2D (the message says to split the channels first); and what run_in_slabs
// throws.
Result run_per_channel(std::string_view name, std::span<const Array> inputs,
                       const std::vector<bool>& per_channel, const Params& params = {},
                       const RunOptions& options = {});

}  // namespace gpix
