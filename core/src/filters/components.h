#pragma once
// connected_components' pieces that its tiled run (components_tiled.cpp) shares with the
// whole-array filter (segmentation.cpp).
#include <cstdint>
#include <memory>

#include "filters/registry.h"
#include "gpix/array.h"

namespace gpix::detail {

// A binary image's components labelled on its device: uint32 labels 1..count in raster order
// of each component's first pixel, background 0 (face or full connectivity).
struct Components {
  Array labels;
  std::uint32_t count = 0;
};
Components components(const Array& binary, bool full);

// labels[i] = table[labels[i]] in place, on the labels' device (table: uint32, table[0] = 0).
void map_labels(const Array& labels, const Array& table);

// connected_components over slabs of an image of this shape and dtype (run_tiled): every slab
// labelled on its own, the labels of components that touch across slab faces joined on the host,
// each slab labelled again and mapped to the whole image's numbering.
std::unique_ptr<SlabFold> components_fold(bool full, const Shape& shape, DType dtype);

}  // namespace gpix::detail
