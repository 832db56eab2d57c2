#pragma once
// JPEG reading through libjpeg(-turbo) under gpix's own error manager, as an itk::ImageIOBase
// so that io.cpp keeps one path for dimensions, metadata and errors. Writing stays with ITK's
// JPEGImageIO (it only compresses pixels gpix holds).
//
// Why not ITK's reader: ITK 5.2's JPEGImageIO::Read longjmps from libjpeg's error handler
// back into a C++ function that has since called setjmp again and kept state in registers.
// After an error inside jpeg_start_decompress (a progressive JPEG decodes every scan there),
// execution resumed in its row loop with a corrupt stack and died in jpeg_read_scanlines
// (SIGSEGV; fuzz_read_jpeg, fuzz/corpus/jpeg/regression-progressive-segv.jpg). An error while
// reading rows returned a partly filled image with only a printed warning. Checking the file
// in validate.cpp first would not be sound: the only complete check is a full decode, after
// which ITK's flawed path would still run on the same bytes.
//
// Here setjmp and longjmp stay inside one small function whose frames (and those of libjpeg
// it jumps over) hold plain data only, libjpeg's errors and its warnings that mean lost pixels
// (corrupt or missing entropy-coded data) become itk::ExceptionObjects, which io.cpp turns
// into IoErrors, and libjpeg may use at most a few times the image's own size in memory.
#include <itkImageIOBase.h>

namespace gpix::io::detail {

itk::ImageIOBase::Pointer jpeg_reader();

}  // namespace gpix::io::detail
