// CudaDevice: device, image, host and managed memory, adoption of foreign pointers.
#include "backend/cuda/cuda_device.h"

namespace gpix::detail::cuda {

CudaDevice::~CudaDevice() {
  {
    ContextScope scope(*ctx_, std::nothrow);
    // Everything queued, host functions included, is done before the caches go.
    drv().cuCtxSynchronize();
  }
  release_resources();  // cached blocks and the staging ring go back while the device exists
}

std::unique_ptr<Memory> CudaDevice::do_allocate(std::size_t bytes) {
  ContextScope scope(*ctx_);
  CUdeviceptr p = 0;
  // cuMemAlloc rejects 0 bytes; CUDA memory is backed at allocation, so no touch is needed.
  const CUresult r = drv().cuMemAlloc(&p, std::max<std::size_t>(bytes, 1));
  if (r != CUDA_SUCCESS) throw_alloc(r, bytes, "");
  return std::make_unique<CuMemory>(bytes, ctx_, cuda::DevicePtr(p));
}

std::unique_ptr<Memory> CudaDevice::adopt(std::uint64_t pointer, std::size_t bytes,
                                          std::function<void()> release) {
  ContextScope scope(*ctx_);
  const auto ptr = static_cast<CUdeviceptr>(pointer);
  const std::string what = "the foreign pointer 0x" + hex(pointer);
  int ordinal = -1;
  CUresult r = drv().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  if (r != CUDA_SUCCESS) {
    throw InvalidArgument(what +
                          " is not CUDA memory (cuPointerGetAttribute: " + cuda::error_name(r) +
                          "); pass a tensor on CUDA device " + std::to_string(ordinal_));
  }
  if (ordinal != ordinal_) {
    throw InvalidArgument(what + " lives on CUDA device " + std::to_string(ordinal) + ", not on '" +
                          info().name + "' (CUDA device " + std::to_string(ordinal_) +
                          "); import it on that device");
  }
  unsigned type = 0;
  r = drv().cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (r != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE) {
    throw InvalidArgument(what + " is not device memory (page-locked host memory or unknown: " +
                          cuda::error_name(r) + "); import it as a kDLCPU/kDLCUDAHost tensor");
  }
  CUcontext owner = nullptr;
  if (drv().cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, ptr) == CUDA_SUCCESS &&
      owner && owner != ctx_->get()) {
    throw InvalidArgument(what +
                          " belongs to a CUDA context other than the device's primary "
                          "context, which gpix's kernels cannot address; allocate it in "
                          "the primary context (as the CUDA runtime does)");
  }
  CUdeviceptr start = 0;
  std::size_t size = 0;
  if (drv().cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) ==
          CUDA_SUCCESS &&
      drv().cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) == CUDA_SUCCESS &&
      (ptr < start || ptr - start > size || bytes > size - (ptr - start))) {
    throw InvalidArgument(what + " with " + human(bytes) +
                          " runs past the end of its allocation (" + human(size) + " from 0x" +
                          hex(start) + ")");
  }
  // The producer gets its memory back (and may reuse it at once) when the last array sharing
  // it dies, while kernels that read or write it may still be queued on gpix's stream: they
  // finish first.
  auto synced = [ctx = ctx_, release = std::move(release)] {
    {
      ContextScope finish(*ctx, std::nothrow);
      (void)ctx->driver().cuCtxSynchronize();
    }
    if (release) release();
  };
  return std::make_unique<CuMemory>(bytes, ctx_, ptr, std::move(synced));
}

std::unique_ptr<HostMemory> CudaDevice::allocate_host(std::size_t bytes) {
  ContextScope scope(*ctx_);
  void* p = nullptr;
  // Portable: page-locked for every CUDA context, so peer devices take the fast path too.
  const CUresult r =
      // Mapped too: streamed pushes (stream_in) read the staging ring from the device.
      drv().cuMemHostAlloc(&p, std::max<std::size_t>(bytes, 1),
                           CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  if (r != CUDA_SUCCESS) {
    throw OutOfMemory("cannot allocate " + human(bytes) + " of page-locked host memory for '" +
                          info().name + "': " + cuda::error_name(r) +
                          "; free pinned HostArrays, or use ordinary host memory",
                      bytes, cuda::error_name(r));
  }
  return std::make_unique<CuHostMemory>(ctx_, cuda::HostPtr(p), bytes);
}

bool CudaDevice::image_supported(DType t, int dims) {
  return array_format(t) != static_cast<CUarray_format>(0) && (dims == 2 || dims == 3);
}

std::unique_ptr<Memory> CudaDevice::do_allocate_image(const ImageFormat& f) {
  const std::size_t es = size_of(f.dtype);
  const std::size_t bytes = f.width * f.height * f.depth * es;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = f.width;
  desc.Height = f.height;
  desc.Depth = f.dims == 3 ? f.depth : 0;  // 0: a 2D array
  desc.Format = array_format(f.dtype);
  desc.NumChannels = 1;
  ContextScope scope(*ctx_);
  CUarray a = nullptr;
  const CUresult r = drv().cuArray3DCreate(&a, &desc);
  if (r != CUDA_SUCCESS) {
    const std::string shape = std::to_string(f.width) + " x " + std::to_string(f.height) +
                              (f.dims == 3 ? " x " + std::to_string(f.depth) : "");
    throw_alloc(r, bytes,
                " for a " + shape + " " + std::string(name(f.dtype)) +
                    " image (CUDA arrays are limited to 131072 x 65536 in 2D and "
                    "16384 per axis in 3D)");
  }
  return std::make_unique<CuImage>(bytes, ctx_, cuda::Array(a), es, f.dtype);
}

NativeMemoryInfo CudaDevice::native_memory_info() {
  ContextScope scope(*ctx_);
  std::size_t free = 0, total = 0;
  check(drv().cuMemGetInfo(&free, &total), "querying the memory of '" + info().name + "'");
  return {true, free, total};
}

void* CudaDevice::svm_allocate(std::size_t bytes) {
  ContextScope scope(*ctx_);
  std::size_t free = 0, total = 0;
  check(drv().cuMemGetInfo(&free, &total), "querying the memory of '" + info().name + "'");
  // Managed memory may be oversubscribed and would then page to the host unnoticed: gpix
  // never asks for more than the device has free.
  if (bytes > free) {
    throw OutOfMemory("cannot allocate " + human(bytes) + " of managed memory on '" + info().name +
                          "': only " + human(free) + " of " + human(total) +
                          " are free; free arrays or use a smaller buffer",
                      bytes);
  }
  CUdeviceptr p = 0;
  const CUresult r = drv().cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL);
  if (r != CUDA_SUCCESS) throw_alloc(r, bytes, " of managed memory");
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

void CudaDevice::svm_free(void* p) {
  ContextScope scope(*ctx_, std::nothrow);
  drv().cuMemFree(address(p));
}

void CudaDevice::svm_map(void*, std::size_t, MapAccess) {
  // The host may touch managed memory once no kernel that could use it runs.
  ContextScope scope(*ctx_);
  check(drv().cuCtxSynchronize(), "mapping managed memory on '" + info().name + "'");
}

std::string CudaDevice::hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

CUdeviceptr CudaDevice::address(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

[[noreturn]] void CudaDevice::throw_alloc(CUresult r, std::size_t bytes, const std::string& what) {
  std::size_t free = 0, total = 0;
  std::string mem;
  if (drv().cuMemGetInfo(&free, &total) == CUDA_SUCCESS) {
    mem = human(free) + " of " + human(total) + " free";
  } else {
    mem = "total memory " + human(info().global_memory);
  }
  const std::string name = cuda::error_name(r);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    throw OutOfMemory("cannot allocate " + human(bytes) + what + " on '" + info().name +
                          "': " + name + " (" + mem +
                          "); free arrays, use smaller images or a device with more memory",
                      bytes, name);
  }
  check(r, "allocating " + human(bytes) + what + " on '" + info().name + "' (" + mem + ")");
  throw DeviceError("unreachable", name);
}

}  // namespace gpix::detail::cuda
