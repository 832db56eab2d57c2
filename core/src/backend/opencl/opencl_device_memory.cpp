// ClDevice: buffers and images made resident at once, pinned host memory, shared virtual
// memory, and the nvidia-opencl-oom workaround's checks.
#include "backend/opencl/opencl_device.h"
#include "backend/opencl/opencl_svm.h"
#include "config.h"
#include "memory_pool.h"

namespace gpix::detail::cl {

ClDevice::~ClDevice() {
  // Cached blocks and the staging ring go back while the context and queues still exist.
  release_resources();
}

std::unique_ptr<Memory> ClDevice::do_allocate(std::size_t bytes) {
  check_card_free(bytes, "a buffer");
  cl_int err = CL_SUCCESS;
  cl::Mem mem(clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &err));
  if (err != CL_SUCCESS) throw_oom(bytes, err);
  // OpenCL allocates lazily; writing the last byte makes the buffer resident now, so
  // out-of-memory surfaces here and not in some later kernel. A write is a plain DMA: a
  // one-byte clEnqueueFillBuffer runs a fill kernel, and at offsets past 4 GB that is the
  // suspect in NVIDIA's failures (see nvidia-opencl-oom in docs/ARCHITECTURE.md).
  static const unsigned char zero = 0;
  err = touch([&](cl_command_queue q, cl_event* e) {
    return clEnqueueWriteBuffer(q, mem.get(), CL_FALSE, bytes - 1, 1, &zero, 0, nullptr, e);
  });
  if (err != CL_SUCCESS) touch_failed(bytes, err, "a buffer");
  return std::make_unique<ClMemory>(bytes, std::move(mem));
}

std::unique_ptr<HostMemory> ClDevice::allocate_host(std::size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl::Mem mem(
      clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &err));
  if (err != CL_SUCCESS) throw_oom(bytes, err, "pinned host memory");
  void* p = clEnqueueMapBuffer(default_.get(), mem.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                               bytes, 0, nullptr, nullptr, &err);
  if (err != CL_SUCCESS || !p) throw_oom(bytes, err, "pinned host memory");
  return std::make_unique<ClHostMemory>(p, bytes, std::move(mem), default_.get());
}

bool ClDevice::image_supported(DType t, int dims) {
  const cl_channel_type ct = channel_type(t);
  if (!info().images || ct == 0 || (dims != 2 && dims != 3)) return false;
  std::lock_guard lock(formats_mutex_);
  auto& formats = dims == 2 ? formats2_ : formats3_;
  if (!formats) {
    const cl_mem_object_type type = dims == 2 ? CL_MEM_OBJECT_IMAGE2D : CL_MEM_OBJECT_IMAGE3D;
    cl_uint n = 0;
    clGetSupportedImageFormats(ctx_.get(), CL_MEM_READ_WRITE, type, 0, nullptr, &n);
    std::vector<cl_image_format> f(n);
    if (n) clGetSupportedImageFormats(ctx_.get(), CL_MEM_READ_WRITE, type, n, f.data(), nullptr);
    formats = std::move(f);
  }
  return std::any_of(formats->begin(), formats->end(), [&](const cl_image_format& f) {
    return f.image_channel_order == CL_R && f.image_channel_data_type == ct;
  });
}

std::unique_ptr<Memory> ClDevice::do_allocate_image(const ImageFormat& f) {
  const cl_image_format format{CL_R, channel_type(f.dtype)};
  cl_image_desc desc{};
  desc.image_type = f.dims == 2 ? CL_MEM_OBJECT_IMAGE2D : CL_MEM_OBJECT_IMAGE3D;
  desc.image_width = f.width;
  desc.image_height = f.height;
  desc.image_depth = f.dims == 3 ? f.depth : 1;
  const std::size_t es = size_of(f.dtype);
  const std::size_t bytes = f.width * f.height * f.depth * es;
  check_card_free(bytes, "an image");
  cl_int err = CL_SUCCESS;
  cl::Mem mem(clCreateImage(ctx_.get(), CL_MEM_READ_WRITE, &format, &desc, nullptr, &err));
  if (err != CL_SUCCESS) throw_oom(bytes, err, "an image");
  // Resident at once, as allocate(): write the last pixel.
  const std::size_t origin[3] = {f.width - 1, f.height - 1, f.dims == 3 ? f.depth - 1 : 0};
  const std::size_t region[3] = {1, 1, 1};
  const std::uint64_t zero = 0;
  err = touch([&](cl_command_queue q, cl_event* e) {
    return clEnqueueWriteImage(q, mem.get(), CL_TRUE, origin, region, 0, 0, &zero, 0, nullptr, e);
  });
  if (err != CL_SUCCESS) touch_failed(bytes, err, "an image");
  return std::make_unique<ClMemory>(bytes, std::move(mem), es, f.dims);
}

std::unique_ptr<Memory> ClDevice::adopt(std::uint64_t, std::size_t, std::function<void()>) {
  throw DeviceError("'" + info().name +
                    "' (opencl) cannot adopt memory allocated elsewhere; import host memory, or "
                    "use a CUDA device");
}

void* ClDevice::svm_allocate(std::size_t bytes) {
  void* p = clsvm::alloc(ctx_.get(), bytes);
  if (!p) throw_oom(bytes, CL_OUT_OF_RESOURCES, "shared virtual memory");
  return p;
}

void ClDevice::svm_map(void* p, std::size_t bytes, MapAccess access) {
  cl::check_lazy(
      clsvm::map(default_.get(), p, bytes, access != MapAccess::write, access != MapAccess::read),
      [&] { return "mapping shared virtual memory on '" + info().name + "'"; });
}

void ClDevice::svm_unmap(void* p) {
  cl::check_lazy(clsvm::unmap(default_.get(), p),
                 [&] { return "unmapping shared virtual memory on '" + info().name + "'"; });
}

[[noreturn]] void ClDevice::throw_oom(std::size_t bytes, cl_int err, const char* what) {
  throw OutOfMemory("cannot allocate " + human(bytes) + " for " + what + " on '" + info().name +
                        "': " + cl::error_name(err) + " (total memory " +
                        human(info().global_memory) + ", largest allocation " +
                        human(info().max_allocation) +
                        "); free arrays, use smaller images or another device",
                    bytes, cl::error_name(err));
}

[[noreturn]] void ClDevice::touch_failed(std::size_t bytes, cl_int err, const char* what) {
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY) {
    throw_oom(bytes, err, what);
  }
  throw DeviceError("making " + std::string(what) + " of " + human(bytes) + " resident on '" +
                        info().name + "' failed: " + cl::error_name(err) +
                        " (not an out-of-memory code; the driver may refuse further work in "
                        "this context: restart the program, or use the card's CUDA device)",
                    cl::error_name(err));
}

void ClDevice::check_card_free(std::size_t bytes, const char* what) {
  if (!card_) return;
  const NativeMemoryInfo m = card_();
  if (!m.known) return;
  const std::string why = refuse_beyond_free(bytes, m.free, m.total);
  if (why.empty()) return;
  throw OutOfMemory("cannot allocate " + human(bytes) + " for " + what + " on '" + info().name +
                        "': " + why +
                        " (NVIDIA's OpenCL cannot recover from running out, so gpix asks "
                        "first; see the nvidia-opencl-oom workaround in docs/ARCHITECTURE.md)",
                    bytes, "GPIX_CARD_MEMORY");
}

template <class F>
cl_int ClDevice::touch(F&& enqueue) {
  std::lock_guard lock(touch_mutex_);
  cl_int err = CL_SUCCESS;
  if (!touch_) touch_.reset(clCreateCommandQueue(ctx_.get(), id_, 0, &err));
  if (err != CL_SUCCESS) return err;
  cl_event raw = nullptr;
  err = enqueue(touch_.get(), &raw);
  cl::EventHandle event(raw);
  if (err == CL_SUCCESS) err = clFinish(touch_.get());
  if (err == CL_SUCCESS && event) {
    cl_int status = CL_COMPLETE;
    err = clGetEventInfo(event.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                         nullptr);
    if (err == CL_SUCCESS && status < 0) err = status;
  }
  if (err != CL_SUCCESS) touch_.reset();
  return err;
}

void ClDevice::set_card_memory_source(std::function<NativeMemoryInfo()> source) {
  if (!nvidia_ || config().workaround_disabled("nvidia-opencl-oom")) return;
  card_ = std::move(source);
  // The card's own count replaces the 95% cap on gpix's accounting (set at enumeration).
  pool().set_limit(0);
}

unsigned ClDevice::max_transfer_threads() const {
  return pocl_basic_ && !config().workaround_disabled("pocl-basic-threads") ? 1 : 0;
}

}  // namespace gpix::detail::cl
