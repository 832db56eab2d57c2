#pragma once
// TIFF through libtiff, for what ITK 5.2's TIFFImageIO cannot do: it writes only u8 i8 u16 i16
// f32 and reads 32-bit integer, 64-bit and f64 samples wrongly. gpix writes every TIFF with
// libtiff and reads single-sample grayscale files with it; ITK keeps colour, palette and
// other bit depths. Both present themselves as an itk::ImageIOBase, so io.cpp keeps one path
// for dimensions, metadata and errors.
//
// libtiff reports through handlers that print to stderr by default. gpix's own files use
// per-file handlers (TIFFOpenOptions, thread-safe); ITK's private copy of libtiff
// (itk_TIFF*) and the system one also get global handlers, installed once, that collect into
// the thread's TiffMessages while gpix reads or writes and pass everything else on.
#include <itkImageIOBase.h>

#include <string>
#include <vector>

namespace gpix::io::detail {

// Collects what libtiff says on this thread while it lives (instances nest).
class TiffMessages {
 public:
  TiffMessages();
  ~TiffMessages();
  TiffMessages(const TiffMessages&) = delete;
  TiffMessages& operator=(const TiffMessages&) = delete;

  std::vector<std::string> warnings;
  std::vector<std::string> errors;

  // " (libtiff: a; b)" for the errors from the n-th on, or "" when there are none.
  std::string says(std::size_t from = 0) const;
  // Warnings then errors (errors that did not stop a read are worth a look too).
  std::vector<std::string> all() const;

  static TiffMessages* current();

 private:
  TiffMessages* outer_;
};

// The reader for a TIFF file: gpix's libtiff reader for single-sample grayscale files of 8,
// 16, 32 or 64 bits (what gpix and most microscopy software write), ITK's TIFFImageIO for
// the rest (RGB, palette, 1-bit...). A file libtiff cannot open gets the libtiff reader,
// whose CanReadFile says no.
itk::ImageIOBase::Pointer tiff_reader(const std::string& file);

// The libtiff reader and writer (every gpix dtype, 2D, or 3D as one page per z slice).
itk::ImageIOBase::Pointer libtiff_io();

}  // namespace gpix::io::detail
