// connected_components slab by slab (gpix::run_tiled), equal to the whole-array labelling.
//
// The whole image numbers its components 1..n in raster order of their first pixels. Slabs
// are cut along axis 0, so that order is: by the slab that holds a component's first pixel,
// then by its first pixel within that slab. The first pass labels every slab on its own
// (1..k in the slab's raster order, on whichever device takes it) and names each slab's label
// l by the key (z0, l), z0 the slab's first plane: keys in increasing order are slabs' labels
// in raster order of their first pixels. The two planes on either side of each slab face give
// the pairs of labels that touch across it (face connectivity: the pixel opposite; full: the
// 3x3 (3D) or 3 (2D) pixels around it), and a union-find over those keys only (the boundary:
// host memory of the order of the faces' pixels, never of the image) joins them, each set
// rooted at its smallest key, which is the component's first pixel's label. A component's
// number is then the number of roots up to its own: its root's index among all slabs' labels
// (the slabs' label counts before it, plus l) less the non-roots before it. The second pass
// labels every slab again (the labelling is deterministic: a component's root is its first
// pixel) and maps its labels through a table of that slab's numbers.
#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "filters/components.h"
#include "gpix/error.h"
#include "gpix/host_array.h"

namespace gpix::detail {
namespace {

using Key = std::uint64_t;  // (first plane of the slab) << 32 | label within the slab
Key key(std::size_t z0, std::uint32_t label) {
  return (static_cast<Key>(z0) << 32) | label;
}
std::size_t key_plane(Key k) {
  return static_cast<std::size_t>(k >> 32);
}
std::uint32_t key_label(Key k) {
  return static_cast<std::uint32_t>(k & 0xffffffffu);
}

class ComponentsFold final : public SlabFold {
 public:
  ComponentsFold(bool full, const Shape& shape, DType dtype)
      : full_(full), input_bytes_(size_of(dtype)) {
    const auto d = shape.dims();
    if (shape.ndim() == 3) {
      rows_ = d[1];
      width_ = d[2];
    } else {
      rows_ = 1;
      width_ = shape.ndim() == 2 ? d[1] : 1;
    }
    if (shape[0] >= (std::size_t{1} << 32)) {
      throw InvalidArgument(
          "connected_components: tiled runs take fewer than 2^32 planes; this "
          "image is " +
          shape.str());
    }
  }

  bool maps() const override { return true; }
  bool unordered() const override { return true; }
  // The input, the labelling's parents, ranks and labels (uint32 each), and the second pass's
  // table (at most one uint32 per pixel); +1 for the counts per group and their scan.
  std::size_t pixel_bytes() const override { return input_bytes_ + 4 * 4 + 1; }

  void add(int, std::span<const Array> slab, std::size_t z0) override {
    const Array in = slab[0].is_contiguous() ? slab[0] : slab[0].to_buffer();
    const Components c = components(in, full_);
    const std::size_t planes = in.shape()[0], z1 = z0 + planes;
    // Background-only planes stay empty (nothing touches them).
    std::vector<std::uint32_t> first, last;
    if (c.count > 0) {
      first = plane(c.labels, 0);
      last = planes == 1 ? first : plane(c.labels, planes - 1);
    }
    std::lock_guard lock(mutex_);
    counts_[z0] = c.count;
    // The face at z0 (below: the slab that ends there) and the one at z1.
    if (auto it = below_.find(z0); it != below_.end()) {
      join(it->second.z0, it->second.labels, z0, first);
      below_.erase(it);
    } else {
      above_[z0] = std::move(first);
    }
    if (auto it = above_.find(z1); it != above_.end()) {
      join(z0, last, z1, it->second);
      above_.erase(it);
    } else {
      below_[z1] = {z0, std::move(last)};
    }
  }

  Folded finish() override {
    Key total = 0;
    for (const auto& [z0, count] : counts_) {
      offsets_[z0] = total;
      total += count;
    }
    for (const auto& entry : parent_) {
      const Key k = entry.first;
      const Key root = find(k);
      if (root != k) nonroots_.push_back(index(k));
      joined_[key_plane(k)].emplace_back(key_label(k), index(root));
    }
    std::sort(nonroots_.begin(), nonroots_.end());
    for (auto& [z0, labels] : joined_) std::sort(labels.begin(), labels.end());
    parent_ = {};
    const Key labels = total - nonroots_.size();
    if (labels >= 0xffffffffu) {
      throw InvalidArgument("connected_components: the image has " + std::to_string(labels) +
                            " components, more than uint32 labels hold (4294967294)");
    }
    return {{}, [this](std::span<const Array> slab, std::size_t z0) { return relabel(slab, z0); }};
  }

 private:
  // The labels of plane p of a slab's labelling, on the host.
  std::vector<std::uint32_t> plane(const Array& labels, std::size_t p) const {
    std::vector<std::size_t> origin(labels.ndim(), 0);
    std::vector<std::size_t> extent(labels.shape().dims().begin(), labels.shape().dims().end());
    origin[0] = p;
    extent[0] = 1;
    const HostArray h = labels.read_region(Region{origin, extent});
    const auto v = h.as<std::uint32_t>();
    return {v.begin(), v.end()};
  }

  // Joins the labels that touch across a face: `below` is the last plane of the slab from
  // plane zb on, `above` the first plane of the slab from za on.
  void join(std::size_t zb, const std::vector<std::uint32_t>& below, std::size_t za,
            const std::vector<std::uint32_t>& above) {
    if (below.empty() || above.empty()) return;
    const long reach = full_ ? 1 : 0;
    const long rows = static_cast<long>(rows_), width = static_cast<long>(width_);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    std::pair<std::uint32_t, std::uint32_t> previous{0, 0};
    for (long y = 0; y < rows; ++y) {
      for (long x = 0; x < width; ++x) {
        const std::uint32_t a = above[static_cast<std::size_t>(y * width + x)];
        if (a == 0) continue;
        for (long yy = std::max(0L, y - reach); yy <= std::min(rows - 1, y + reach); ++yy) {
          for (long xx = std::max(0L, x - reach); xx <= std::min(width - 1, x + reach); ++xx) {
            const std::uint32_t b = below[static_cast<std::size_t>(yy * width + xx)];
            if (b == 0 || std::pair(b, a) == previous) continue;
            previous = {b, a};
            pairs.push_back(previous);
          }
        }
      }
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    for (const auto& [b, a] : pairs) unite(key(zb, b), key(za, a));
  }

  Key find(Key k) {
    Key root = k;
    for (auto it = parent_.find(root); it != parent_.end() && it->second != root;
         it = parent_.find(root)) {
      root = it->second;
    }
    while (k != root) {  // path compression
      auto it = parent_.find(k);
      k = std::exchange(it->second, root);
    }
    return root;
  }
  // The smaller key (the earlier first pixel) becomes the root.
  void unite(Key a, Key b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_.try_emplace(a, a);
    parent_[b] = a;
  }

  // A key's index among all slabs' labels, in raster order of first pixels (from 0).
  Key index(Key k) const { return offsets_.at(key_plane(k)) + key_label(k) - 1; }

  // The second pass: the slab labelled again, its labels mapped to the whole image's.
  Array relabel(std::span<const Array> slab, std::size_t z0) const {
    const Array in = slab[0].is_contiguous() ? slab[0] : slab[0].to_buffer();
    const Components c = components(in, full_);
    const auto count = counts_.find(z0);
    if (count == counts_.end() || count->second != c.count) {
      throw Error("internal: connected_components: the slab from plane " + std::to_string(z0) +
                  " is not one of the first pass's");
    }
    if (c.count == 0) return c.labels;
    static const std::vector<std::pair<std::uint32_t, Key>> none;
    const auto j = joined_.find(z0);
    const auto& joined = j == joined_.end() ? none : j->second;
    const Key offset = offsets_.at(z0);
    std::vector<std::uint32_t> table(std::size_t{c.count} + 1, 0);
    auto number = [&](Key root) {  // a root's component number: roots up to it
      const auto before = std::lower_bound(nonroots_.begin(), nonroots_.end(), root);
      return static_cast<std::uint32_t>(root - static_cast<Key>(before - nonroots_.begin()) + 1);
    };
    auto jt = joined.begin();
    auto nt = nonroots_.begin();
    for (std::uint32_t l = 1; l <= c.count; ++l) {
      if (jt != joined.end() && jt->first == l) {
        table[l] = number(jt->second);
        ++jt;
        continue;
      }
      // A label that touches no face is its own root; these come in increasing order.
      const Key root = offset + l - 1;
      while (nt != nonroots_.end() && *nt < root) ++nt;
      table[l] = static_cast<std::uint32_t>(root - static_cast<Key>(nt - nonroots_.begin()) + 1);
    }
    const Array t = Array::push(HostArray::from(table, Shape{table.size()}), in.device());
    map_labels(c.labels, t);
    return c.labels;
  }

  const bool full_;
  const std::size_t input_bytes_;
  std::size_t rows_ = 1, width_ = 1;  // of one plane

  std::mutex mutex_;                             // the first pass's state, from every worker
  std::map<std::size_t, std::uint32_t> counts_;  // labels of each slab (by z0)
  std::map<std::size_t, std::vector<std::uint32_t>> above_;  // first planes, face z0
  struct Below {
    std::size_t z0;
    std::vector<std::uint32_t> labels;
  };
  std::map<std::size_t, Below> below_;   // last planes, face z1
  std::unordered_map<Key, Key> parent_;  // boundary labels only

  // After finish(), read by every worker.
  std::map<std::size_t, Key> offsets_;  // slab z0 -> labels of the slabs before it
  std::vector<Key> nonroots_;           // indices of joined labels that are not roots
  std::map<std::size_t, std::vector<std::pair<std::uint32_t, Key>>> joined_;  // z0 -> (l, root)
};

}  // namespace

std::unique_ptr<SlabFold> components_fold(bool full, const Shape& shape, DType dtype) {
  return std::make_unique<ComponentsFold>(full, shape, dtype);
}

}  // namespace gpix::detail
