#pragma once
// QImage <-> HostArray, for the GUI's display and clipboard (library gpix_qt, Qt6::Gui).
#include <QImage>

#include "gpix/host_array.h"
#include "gpix/io.h"

namespace gpix::qt {

// A QImage as pixels of shape (height, width):
//   Grayscale8 -> u8, Grayscale16 -> u16,
//   RGB32 (3 components, the unused byte dropped), ARGB32 and ARGB32_Premultiplied (4 components
//   R, G, B, A; premultiplied images are un-premultiplied by Qt first) -> the RGB policy of
//   gpix/io.h: Channels::error (default) throws InvalidArgument naming the options, luminance
//   gives float32, channel gives u8 component N (0 = R), split gives u8 (components, height,
//   width).
//   RGBX64 / RGBA64 (_Premultiplied un-premultiplied first): the same policy with u16
//   components (luminance still float32).
// Any other format throws InvalidArgument; convert it with QImage::convertToFormat first.
HostArray from_qimage(const QImage& image, io::Channels channels = io::Channels::error,
                      int channel = 0);

// Pixels as a new QImage (a deep copy, the QImage owns its memory):
//   2D u8 -> Grayscale8, 2D u16 -> Grayscale16,
//   3D u8 (3, h, w) -> RGB32, (4, h, w) -> ARGB32 (the inverse of Channels::split).
// Other dtypes or shapes throw UnsupportedDType / InvalidArgument: map them to 8 bits with
// gpix::render_rgba and use rgba_to_qimage.
QImage to_qimage(const HostArray& pixels);

// The output of gpix::render_rgba (u32, (h, w), bytes R, G, B, A in memory) as a QImage of
// Format_RGBA8888 (a deep copy).
QImage rgba_to_qimage(const HostArray& rgba);

}  // namespace gpix::qt
