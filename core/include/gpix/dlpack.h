#pragma once
// DLPack exchange (DLPack 0.6, the header of Debian's libdlpack-dev; its unversioned
// DLManagedTensor is what current consumers such as PyTorch and CuPy still accept).
//
// Ownership: a tensor gpix exports keeps the pixels alive until the consumer calls its
// deleter (exactly once). A tensor gpix imports is owned by gpix from the call on: gpix calls
// its deleter exactly once, on success (at once after a copy, or when the last array sharing
// the pixels dies) and on EVERY failure (a rejected dtype, layout or device included).
#include <dlpack/dlpack.h>

#include <optional>

#include "gpix/array.h"
#include "gpix/host_array.h"

namespace gpix {

// The DLPack dtype of a gpix dtype, and back (nullopt for bool, complex, bfloat16, float16,
// opaque handles and vector lanes != 1).
DLDataType to_dlpack_dtype(DType t);
std::optional<DType> from_dlpack_dtype(DLDataType t);

// Exports a device array as a kDLCUDA tensor that shares the array's memory (no copy). The
// device's queued work is finished first, so the pixels are final when the consumer reads
// them on its own stream.
// Throws InvalidArgument for arrays on OpenCL devices (an OpenCL buffer has no address
// other frameworks can use: pull() it and export the HostArray), DeviceError where the
// backend gives no device pointer.
DLManagedTensor* to_dlpack(const Array& array);
// Exports host pixels as a kDLCPU tensor that shares them (no copy).
DLManagedTensor* to_dlpack(const HostArray& host);

enum class DlpackImport : std::uint8_t {
  copy,  // copy the pixels into gpix memory and call the deleter at once
  wrap,  // share the producer's memory; the deleter runs when the last HostArray copy dies
};

// A kDLCPU (or kDLCUDAHost) tensor as a HostArray. Accepts NULL strides (compact row-major)
// and explicit compact row-major strides (any stride on an axis of extent 1), honours
// byte_offset. Throws InvalidArgument (null tensor or data, 0 or more than 3 dims, an empty
// axis, more bytes than 64-bit memory holds, non-compact strides, a device tensor, or a
// misaligned pointer with wrap) or
// UnsupportedDType (bool, complex, bf16, f16, lanes != 1), calling the deleter first.
HostArray host_from_dlpack(DLManagedTensor* tensor, DlpackImport mode = DlpackImport::copy);

// A tensor as an Array on device. kDLCUDA: device must be the CUDA device of the tensor's
// device_id; the memory is shared (the deleter runs when the last Array handle dies).
// kDLCPU/kDLCUDAHost: the pixels are pushed to device and the deleter runs at once.
// Throws what host_from_dlpack throws, InvalidArgument for a device mismatch and DeviceError
// where the backend cannot adopt foreign memory, always calling the deleter.
Array array_from_dlpack(DLManagedTensor* tensor, const Device& device = default_device());

}  // namespace gpix
