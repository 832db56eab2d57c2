#pragma once
// Colour composites: one layer whose data's first axis holds its channels (RGB files,
// multi-channel TIFF), shown in colour by adding each visible channel's colour ramp on the
// device (gpix::render_rgba with gpix::Blend::add), filtered channel by channel, and split into
// one grey layer per channel on request (an undo step).
#include <QRgb>
#include <QUndoCommand>
#include <cstddef>
#include <string>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/channels.h"
#include "gpix/ui/workspace.h"

namespace gpix::ui {

// The colour of channel `index` of `count`: red, green, blue (and a hidden white alpha) for
// colour files; green, magenta, cyan, yellow, red, blue, then grey for fluorescence channels
// (green and magenta first: the pair that stays distinct for colour-blind eyes).
QRgb default_channel_colour(int index, int count, bool rgb);

// Makes `layer` (data (C, y, x), C >= 2) a composite of its C planes: names "R", "G", "B",
// "A" for colour files (alpha hidden), else "C1".."Cn", default colours, limits not set (the
// view computes them per channel). Throws gpix::InvalidArgument for data without a channel
// axis (not 3D, or a single plane), or more than 16 channels.
void make_composite(Layer& layer, bool rgb);

// A composite's frame: a zero (transparent) target, then every visible channel's plane added
// in its colour with its limits and gamma, on the array's device; only the RGBA is read back.
// Blocking (a worker thread's call). Throws what gpix::render_rgba throws, and
// gpix::InvalidArgument when channels and planes disagree.
QImage render_composite(const gpix::Array& array, const std::vector<Channel>& channels,
                        std::size_t* pulled = nullptr);
// A host-only composite: pushed to `device` for display (float64 as float32 without fp64).
QImage render_composite(const gpix::HostArray& host, const gpix::Device& device,
                        const std::vector<Channel>& channels, std::size_t* pulled = nullptr);

// A composite's channels for people, as rich text: "3 channels: ■ C1 (green), ■ C2 (magenta),
// ■ C3 (cyan, hidden)", each square in the channel's colour; the colour's name where it is one
// of the default colours, else its #rrggbb. Empty for a layer that is not a composite.
QString channels_text(const Layer& layer);

// Filters run on a composite channel by channel: gpix::run_per_channel (gpix/channels.h), which
// also gives gpix::channel_plane.

// The grey layers of a composite's channels: "<name> [<channel>]", the channel's limits and
// gamma, the calibration of y and x. Blocking where the data is on the device (plane copies).
std::vector<Layer> split_channels(const Layer& composite);

// Replaces a composite by its channel layers (at its place in the stack); undo puts the
// composite back and removes them. The channel layers keep their ids across undo/redo.
class SplitChannelsCommand : public QUndoCommand {
 public:
  SplitChannelsCommand(Workspace& host, int id, std::vector<Layer> channels);
  void redo() override;
  void undo() override;
  const std::vector<int>& channel_ids() const { return ids_; }

 private:
  Workspace& host_;
  int id_;
  Layer composite_;
  int index_ = 0;
  std::vector<Layer> channels_;
  std::vector<int> ids_;
};

// What Layer > Split channels does: the plane copies run off the GUI thread (display pool),
// then a SplitChannelsCommand is pushed on `host`'s undo stack, on `context`'s thread. Does
// nothing for a layer that is not a composite, and says so in the status line.
void request_split_channels(Workspace& host, int id, QObject* context);

}  // namespace gpix::ui
