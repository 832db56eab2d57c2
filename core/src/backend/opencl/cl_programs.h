#pragma once
// OpenCL programs and kernels.
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

class ClKernel final : public Kernel {
 public:
  ClKernel(cl::KernelHandle k, std::string name) : Kernel(std::move(name)), k_(std::move(k)) {}
  cl_kernel get() const noexcept { return k_.get(); }

 private:
  cl::KernelHandle k_;
};

// A built cl_program; hands out its kernels and, for the disk cache, its binary.
class ClProgram final : public DeviceImpl::Program {
 public:
  explicit ClProgram(cl::ProgramHandle p) : p_(std::move(p)) {}
  std::vector<char> binary() const override {
    std::size_t size = 0;
    if (clGetProgramInfo(p_.get(), CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) !=
            CL_SUCCESS ||
        size == 0) {
      return {};
    }
    std::vector<char> bin(size);
    unsigned char* ptr = reinterpret_cast<unsigned char*>(bin.data());
    if (clGetProgramInfo(p_.get(), CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) != CL_SUCCESS) {
      return {};
    }
    return bin;
  }
  std::unique_ptr<Kernel> create_kernel(std::string_view name) override {
    cl_int err = CL_SUCCESS;
    std::string n(name);
    cl::KernelHandle k(clCreateKernel(p_.get(), n.c_str(), &err));
    cl::check(err, "creating kernel '" + n + "'");
    return std::make_unique<ClKernel>(std::move(k), std::move(n));
  }

 private:
  cl::ProgramHandle p_;
};

}  // namespace gpix::detail::cl
