#include "backend/opencl/opencl_device.h"
#include "config.h"

#include <mutex>

namespace gpix::detail::cl {

namespace {

// The "pocl-serial-build" workaround's lock (opencl_device.h): one for every PoCL device of
// the process, since what fails is PoCL's process-wide compiler set-up.
std::unique_lock<std::mutex> build_lock(bool pocl) {
  static std::mutex m;
  if (!pocl || config().workaround_disabled("pocl-serial-build")) return {};
  return std::unique_lock(m);
}

}  // namespace

std::unique_ptr<ClDevice::Program> ClDevice::load(const std::vector<char>& bin) {
  const std::size_t size = bin.size();
  const auto* ptr = reinterpret_cast<const unsigned char*>(bin.data());
  cl_int status = CL_SUCCESS;
  cl_int err = CL_SUCCESS;
  cl::ProgramHandle p(clCreateProgramWithBinary(ctx_.get(), 1, &id_, &size, &ptr, &status, &err));
  if (err != CL_SUCCESS || status != CL_SUCCESS) return nullptr;
  const auto lock = build_lock(pocl_);
  if (clBuildProgram(p.get(), 1, &id_, nullptr, nullptr, nullptr) != CL_SUCCESS) return nullptr;
  return std::make_unique<ClProgram>(std::move(p));
}

std::unique_ptr<ClDevice::Program> ClDevice::build(const ProgramSource& src,
                                                   const Defines& defines) {
  return build_with(src, defines, "");
}

// -cl-opt-disable, not -cl-nv-opt-level=0: on NVIDIA's OpenCL (H200, a lease whose one-store
// build took 56 ms) sep_conv_simple built in 89 ms against 144 at full optimisation and 117
// with the NVIDIA option, median_count in 74 against 127 and 100, cc_local in 223 against 509
// and 390 (bench/RESULTS.md, 2026-12-03, twenty-third session). PoCL's builds took as long
// either way. Off by default (config().quick_builds) for what the same entry records: a
// float64 label_statistics differed from its full build in the last bit there, and quick
// programs ran 10-30x slower until their full builds replaced them.
std::unique_ptr<ClDevice::Program> ClDevice::build_quick(const ProgramSource& src,
                                                         const Defines& defines) {
  return build_with(src, defines, " -cl-opt-disable");
}

std::unique_ptr<ClDevice::Program> ClDevice::build_with(const ProgramSource& src,
                                                        const Defines& defines,
                                                        const char* extra_options) {
  const char* text = src.text.c_str();
  const std::size_t length = src.text.size();
  cl_int err = CL_SUCCESS;
  cl::ProgramHandle p(clCreateProgramWithSource(ctx_.get(), 1, &text, &length, &err));
  cl::check(err, "creating program " + src.name);
  std::string options = "-cl-std=CL1.2";
  for (const auto& [k, v] : defines) options += " -D" + k + "=" + v;
  if (nv_sm_ > 0) options += " -DGPIX_NV_SM=" + std::to_string(nv_sm_);
  options += extra_options;
  {
    const auto lock = build_lock(pocl_);
    err = clBuildProgram(p.get(), 1, &id_, options.c_str(), nullptr, nullptr);
  }
  if (err != CL_SUCCESS) {
    std::size_t n = 0;
    clGetProgramBuildInfo(p.get(), id_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(p.get(), id_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    throw CompileError("OpenCL could not compile " + src.name + " with options '" + options +
                           "' for '" + info().name + "': " + cl::error_name(err) +
                           "; the build log follows the message",
                       trim(log), cl::error_name(err));
  }
  return std::make_unique<ClProgram>(std::move(p));
}

}  // namespace gpix::detail::cl

namespace gpix::detail::cl {

// OpenCL compilers optimise every kernel of a program at clBuildProgram, so a filter's first
// call paid for its whole kernel file. Measured: NVIDIA's took 1.2 s for neighbourhood.kernel's
// 14 kernels (bench/RESULTS.md); on PoCL (2 cores) a first box mean took 9-11 s for the file
// and 2 s for its entry, and test_filters_neighbourhood from empty caches 687 s with one
// program per file against 561 s per entry, although it asks for most entries of the file.
bool ClDevice::prefers_programs_per_entry() const {
  return true;
}

}  // namespace gpix::detail::cl
