#pragma once
// OpenCL memory: buffers and images (cl_mem), and pinned host memory kept mapped.
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/opencl/cl.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cl {

class ClMemory final : public Memory {
 public:
  ClMemory(std::size_t bytes, cl::Mem mem) : Memory(bytes), mem_(std::move(mem)) {}
  // An image of element_bytes-sized pixels with dims 2 or 3.
  ClMemory(std::size_t bytes, cl::Mem mem, std::size_t element_bytes, int dims)
      : Memory(bytes, true), mem_(std::move(mem)), element_(element_bytes), dims_(dims) {}
  cl_mem get() const noexcept { return mem_.get(); }
  std::size_t element_bytes() const noexcept { return element_; }
  int dims() const noexcept { return dims_; }

 private:
  cl::Mem mem_;
  std::size_t element_ = 1;
  int dims_ = 0;
};

inline cl_mem native(const Memory& m) {
  return static_cast<const ClMemory&>(m).get();
}
inline const ClMemory& cl_memory(const Memory& m) {
  return static_cast<const ClMemory&>(m);
}

class ClHostMemory final : public HostMemory {
 public:
  ClHostMemory(void* p, std::size_t bytes, cl::Mem mem, cl_command_queue q)
      : HostMemory(p, bytes), mem_(std::move(mem)), q_(q) {
    clRetainCommandQueue(q_);
  }
  ~ClHostMemory() override {
    clEnqueueUnmapMemObject(q_, mem_.get(), data(), 0, nullptr, nullptr);
    clFinish(q_);
    clReleaseCommandQueue(q_);
  }

 private:
  cl::Mem mem_;
  cl_command_queue q_;
};

inline cl_channel_type channel_type(DType t) {
  switch (t) {
    case DType::u8:
      return CL_UNSIGNED_INT8;
    case DType::i8:
      return CL_SIGNED_INT8;
    case DType::u16:
      return CL_UNSIGNED_INT16;
    case DType::i16:
      return CL_SIGNED_INT16;
    case DType::u32:
      return CL_UNSIGNED_INT32;
    case DType::i32:
      return CL_SIGNED_INT32;
    case DType::f32:
      return CL_FLOAT;
    default:
      return 0;
  }
}

// An image box in pixels (origin or region) from a Pitched box in bytes.
inline std::array<std::size_t, 3> pixels(const ClMemory& img, const Pitched& p, const Extent& e,
                                         bool origin) {
  const std::size_t es = img.element_bytes();
  if (origin) return {p.origin[0] / es, p.origin[1], p.origin[2]};
  return {e[0] / es, e[1], e[2]};
}

}  // namespace gpix::detail::cl
