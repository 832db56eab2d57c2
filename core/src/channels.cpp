// Filters run channel by channel on (C, y, x) arrays (gpix/channels.h).
#include "gpix/channels.h"

#include <string>

#include "gpix/error.h"
#include "gpix/tiled.h"

namespace gpix {

Array channel_plane(const Array& a, std::size_t c) {
  const Shape& s = a.shape();
  if (a.ndim() != 3 || c >= s.depth()) {
    throw InvalidArgument("channel " + std::to_string(c + 1) + " does not exist in a " + s.str() +
                          " array of " + (a.ndim() == 3 ? std::to_string(s.depth()) : "no") +
                          " channels (channels are the first axis of a (C, y, x) array)");
  }
  Array plane = Array::empty(Shape{s.height(), s.width()}, a.dtype(), a.device());
  // (C, y, x) as (C * y, x): the plane is rows c*y .. (c+1)*y, one 2D box copy.
  Array rows = a.reshape(Shape{s.depth() * s.height(), s.width()});
  copy_region(rows, {c * s.height(), 0}, plane, {0, 0}, {s.height(), s.width()});
  return plane;
}

Result run_per_channel(std::string_view name, std::span<const Array> inputs,
                       const std::vector<bool>& per_channel, const Params& params,
                       const RunOptions& options) {
  const std::string filter_name(name);
  if (per_channel.size() != inputs.size()) {
    throw InvalidArgument("run_per_channel of '" + filter_name +
                          "': " + std::to_string(per_channel.size()) + " channel marks for " +
                          std::to_string(inputs.size()) + " inputs; give one per input");
  }
  std::size_t n = 0;
  Shape stack;  // the (C, y, x) shape of the marked inputs
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!per_channel[i]) continue;
    if (inputs[i].ndim() != 3) {
      throw InvalidArgument("'" + filter_name + "' runs channel by channel, and input " +
                            std::to_string(i + 1) + " is a " + inputs[i].shape().str() +
                            " array; channels are the first axis of a (C, y, x) array");
    }
    const std::size_t c = inputs[i].shape().depth();
    if (n != 0 && c != n) {
      throw InvalidArgument("'" + filter_name + "' runs channel by channel, and its inputs have " +
                            std::to_string(n) + " and " + std::to_string(c) +
                            " channels; give it images with as many channels, or split the "
                            "channels first");
    }
    n = c;
    stack = inputs[i].shape();
  }
  if (n == 0) {
    throw InvalidArgument("run_per_channel of '" + filter_name +
                          "': no input is marked as channels; run it with gpix::run");
  }
  // The other inputs: a 2D image goes whole to every channel (a mask); a stack of the marked
  // inputs' shape is cut into planes as well (labels made channel by channel, a second
  // multi-channel image without the mark); any other stack cannot be paired with channels.
  std::vector<bool> split = per_channel;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (split[i] || inputs[i].ndim() < 3) continue;
    if (!(inputs[i].shape() == stack)) {
      throw InvalidArgument("'" + filter_name + "' runs channel by channel on " + stack.str() +
                            " channels, and input " + std::to_string(i + 1) + " is a " +
                            inputs[i].shape().str() +
                            " stack, which pairs with no channel; give it a 2D image (used for "
                            "every channel) or a stack of the channels' shape");
    }
    split[i] = true;
  }
  Array out, rows;
  Table table;
  for (std::size_t c = 0; c < n; ++c) {
    std::vector<Array> in;
    in.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
      in.push_back(split[i] ? channel_plane(inputs[i], c) : inputs[i]);
    RunOptions o;
    o.cancel = options.cancel;
    if (options.progress) {
      o.progress = [&options, c, n](double f) { options.progress((double(c) + f) / double(n)); };
    }
    const Result r = run_in_slabs(name, in, params, o);
    if (c > 0 && r.is_table() != !out.valid()) {
      throw InvalidArgument("'" + filter_name +
                            "' gave an image for one channel and a table for another; split the "
                            "channels first and run it on one channel");
    }
    if (r.is_table()) {
      if (c == 0) {
        std::vector<std::string> cols = {"channel"};
        cols.insert(cols.end(), r.table.columns().begin(), r.table.columns().end());
        table = Table(std::move(cols));
      } else if (table.width() != r.table.width() + 1) {
        throw InvalidArgument("'" + filter_name + "' gave tables of " +
                              std::to_string(table.width() - 1) + " and " +
                              std::to_string(r.table.width()) +
                              " columns for two channels; split the channels first");
      }
      std::vector<double> row(r.table.width() + 1);
      row[0] = double(c + 1);
      for (std::size_t k = 0; k < r.table.size(); ++k) {
        for (std::size_t j = 0; j < r.table.width(); ++j) row[j + 1] = r.table(k, j);
        table.push_back(row);
      }
    } else {
      if (r.array.ndim() != 2) {
        throw InvalidArgument(
            "'" + filter_name + "' runs channel by channel, and its result for one channel is a " +
            r.array.shape().str() +
            " array, which cannot be stacked back into channels; split the channels first and "
            "run it on one channel");
      }
      const Shape& p = r.array.shape();
      if (!out.valid()) {
        out = Array::empty(Shape{n, p.height(), p.width()}, r.array.dtype(), r.array.device());
        rows = out.reshape(Shape{n * p.height(), p.width()});
      }
      copy_region(r.array, {0, 0}, rows, {c * p.height(), 0}, {p.height(), p.width()});
    }
    if (options.cancel && options.cancel->load()) throw Cancelled("cancelled between channels");
  }
  Result result;
  if (out.valid()) {
    result.array = out;
  } else {
    result.table = std::move(table);
  }
  return result;
}

}  // namespace gpix
