// The OpenCL backend: one context and one in-order queue per device.
#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/opencl/cl.h"
#include "backend/opencl/opencl_svm.h"
#include "config.h"
#include "gpix/error.h"
#include "memory_pool.h"
#include "programs.h"
#include "util.h"

namespace gpix::detail {
namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  return trim(s);
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  return trim(s);
}

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

cl_mem native(const Memory& m) {
  return static_cast<const ClMemory&>(m).get();
}
const ClMemory& cl_memory(const Memory& m) {
  return static_cast<const ClMemory&>(m);
}

class ClQueue final : public QueueImpl {
 public:
  explicit ClQueue(cl::Queue q) : q_(std::move(q)) {}
  cl_command_queue get() const noexcept { return q_.get(); }

 private:
  cl::Queue q_;
};

cl_command_queue native(QueueImpl& q) {
  return static_cast<ClQueue&>(q).get();
}

class ClEvent final : public EventImpl {
 public:
  ClEvent(cl_event e, bool user) : e_(e), user_(user) {}
  cl_event get() const noexcept { return e_.get(); }
  void wait() override {
    const cl_event e = e_.get();
    cl_int err = clWaitForEvents(1, &e);
    cl_int status = CL_COMPLETE;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    if (status < 0) err = status;
    cl::check(err, "waiting for an event");
  }
  bool done() override {
    cl_int status = CL_COMPLETE;
    cl::check(clGetEventInfo(e_.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                             nullptr),
              "querying an event");
    return status <= CL_COMPLETE;  // CL_COMPLETE is 0; failures are negative
  }
  void complete() override {
    if (!user_) throw InvalidArgument("complete() is only for user events (Event::user())");
    cl::check(clSetUserEventStatus(e_.get(), CL_COMPLETE), "completing a user event");
  }

 private:
  cl::EventHandle e_;
  bool user_;
};

// The wait list of events, all of this device (core waits on the host for others).
std::vector<cl_event> wait_list(Waits waits) {
  std::vector<cl_event> v;
  v.reserve(waits.size());
  for (EventImpl* e : waits) v.push_back(static_cast<ClEvent*>(e)->get());
  return v;
}

std::shared_ptr<EventImpl> wrap(cl_event e) {
  return std::make_shared<ClEvent>(e, false);
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

cl_channel_type channel_type(DType t) {
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

std::array<std::size_t, 3> pixels(const ClMemory& img, const Pitched& p, const Extent& e,
                                  bool origin) {
  const std::size_t es = img.element_bytes();
  if (origin) return {p.origin[0] / es, p.origin[1], p.origin[2]};
  return {e[0] / es, e[1], e[2]};
}

class ClKernel final : public Kernel {
 public:
  explicit ClKernel(cl::KernelHandle k) : k_(std::move(k)) {}
  cl_kernel get() const noexcept { return k_.get(); }

 private:
  cl::KernelHandle k_;
};

class ClDevice final : public DeviceImpl {
 public:
  ClDevice(DeviceInfo info, cl_device_id id, cl::Context ctx, cl::Queue queue)
      : DeviceImpl(std::move(info)), id_(id), ctx_(std::move(ctx)), default_(std::move(queue)) {}
  ~ClDevice() override {
    // Cached blocks and the staging ring go back while the context and queues still exist.
    release_resources();
  }

  std::unique_ptr<Memory> do_allocate(std::size_t bytes) override {
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

  // Checks an enqueue, then waits for the default queue; what() names the transfer in errors.
  template <class What>
  void finish_transfer(cl_int enqueued, const What& what) {
    cl::check_lazy(enqueued, what);
    cl::check_lazy(clFinish(default_.get()), what);
  }

  // Blocking transfers: a non-blocking enqueue and clFinish, which NVIDIA's OpenCL returns
  // from sooner than from a blocking call (H200, pinned 1 MB pushes 32.5-33.9 -> 34.2-35.3
  // GB/s, same lease). The queue is in order, so both wait for the same work. Messages are
  // built only on failure.
  void do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    finish_transfer(clEnqueueWriteBuffer(default_.get(), native(dst), CL_FALSE, offset, bytes, src,
                                         0, nullptr, nullptr),
                    [&] { return "writing " + human(bytes) + " to '" + info().name + "'"; });
  }

  void do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    finish_transfer(clEnqueueReadBuffer(default_.get(), native(src), CL_FALSE, offset, bytes, dst,
                                        0, nullptr, nullptr),
                    [&] { return "reading " + human(bytes) + " from '" + info().name + "'"; });
  }

  void do_copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
               std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    cl::check(clEnqueueCopyBuffer(default_.get(), native(src), native(dst), src_offset, dst_offset,
                                  bytes, 0, nullptr, nullptr),
              "copying " + human(bytes) + " on '" + info().name + "'");
  }

  void do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
               std::size_t pattern_bytes) override {
    if (fill_by_kernel(offset, bytes)) {  // enqueue_kernel takes mutex_ itself
      fill_kernel(default_.get(), dst, offset, bytes, pattern, pattern_bytes, {}, nullptr);
      return;
    }
    std::lock_guard lock(mutex_);
    cl::check(clEnqueueFillBuffer(default_.get(), native(dst), pattern, pattern_bytes, offset,
                                  bytes, 0, nullptr, nullptr),
              "filling " + human(bytes) + " on '" + info().name + "'");
  }

  // Named workaround "nvidia-opencl-fill-4g": NVIDIA's clEnqueueFillBuffer (driver 580,
  // H200) writes wrong values when a fill reaches byte 2^32 of a buffer and, for a fill
  // starting past it, kills the context (CL_INVALID_COMMAND_QUEUE); measured by
  // `gpu_check --large-allocations`. Such fills run gpix's own kernel (fill.kernel's
  // fill_pattern, 64-bit indices). GPIX_DISABLE_WORKAROUNDS=nvidia-opencl-fill-4g lifts it.
  // GPIX_TEST_FILL_KERNEL=1 takes the kernel for every fill (tests of fill_pattern on any
  // device; the 4 GB case needs an NVIDIA card).
  bool fill_by_kernel(std::size_t offset, std::size_t bytes) const {
    if (config().test_fill_kernel) return true;
    return nvidia_ && offset + bytes >= (std::size_t{1} << 32) &&
           !config().workaround_disabled("nvidia-opencl-fill-4g");
  }
  void fill_kernel(cl_command_queue q, Memory& dst, std::size_t offset, std::size_t bytes,
                   const void* pattern, std::size_t pattern_bytes,
                   const std::vector<cl_event>& waits, cl_event* e) {
    if (pattern_bytes > 8) {
      throw UnsupportedFeature("filling past 4 GB of a buffer on '" + info().name +
                               "' with a pattern of " + std::to_string(pattern_bytes) +
                               " bytes: NVIDIA's OpenCL fill is wrong there and gpix's own fill "
                               "takes patterns of up to 8 bytes (every gpix dtype)");
    }
    std::uint64_t p = 0;
    std::memcpy(&p, pattern, pattern_bytes);
    const Kernel& k = kernel(program("fill.kernel"), "fill_pattern", {});
    Launch l;
    l.dims = 1;
    l.local = {256, 1, 1};
    l.global = {std::min<std::size_t>((bytes + 255) / 256, 65536) * 256, 1, 1};
    const std::array<KernelArg, 5> args = {
        KernelArg::mem(dst), KernelArg::scalar<std::uint64_t>(offset),
        KernelArg::scalar<std::uint64_t>(bytes), KernelArg::scalar<std::uint64_t>(p),
        KernelArg::scalar<std::uint32_t>(static_cast<std::uint32_t>(pattern_bytes))};
    enqueue_kernel(q, k, l, args, waits, e);
  }

  void do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) override {
    enqueue_kernel(default_.get(), k, l, args, {}, nullptr);
  }

  // ---- queues and events
  QueueImpl& default_queue() override { return default_; }
  std::unique_ptr<QueueImpl> create_queue() override {
    cl_int err = CL_SUCCESS;
    cl::Queue q(clCreateCommandQueue(ctx_.get(), id_, 0, &err));
    cl::check(err, "creating a queue on '" + info().name + "'");
    return std::make_unique<ClQueue>(std::move(q));
  }
  void do_finish(QueueImpl& q) override {
    cl::check(clFinish(native(q)), "waiting for a queue of '" + info().name + "'");
  }
  std::shared_ptr<EventImpl> marker(QueueImpl& q, Waits waits) override {
    const auto w = wait_list(waits);
    cl_event e = nullptr;
    cl::check(clEnqueueMarkerWithWaitList(native(q), static_cast<cl_uint>(w.size()),
                                          w.empty() ? nullptr : w.data(), &e),
              "enqueueing a marker on '" + info().name + "'");
    return wrap(e);
  }
  std::shared_ptr<EventImpl> user_event() override {
    cl_int err = CL_SUCCESS;
    cl_event e = clCreateUserEvent(ctx_.get(), &err);
    cl::check(err, "creating a user event on '" + info().name + "'");
    return std::make_shared<ClEvent>(e, true);
  }

  // ---- pitched transfers
  std::shared_ptr<EventImpl> do_write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                           const void* src, const Pitched& s, Extent ext,
                                           Waits waits) override {
    const auto w = wait_list(waits);
    const cl_uint nw = static_cast<cl_uint>(w.size());
    const cl_event* wp = w.empty() ? nullptr : w.data();
    const auto* host = static_cast<const std::byte*>(src) + s.offset(0, 0, 0);
    cl_event e = nullptr;
    cl_int err;
    if (dst.is_image()) {
      const auto& img = cl_memory(dst);
      const auto o = pixels(img, d, ext, true), r = pixels(img, d, ext, false);
      err = clEnqueueWriteImage(native(q), img.get(), CL_FALSE, o.data(), r.data(),
                                ext[1] > 1 || ext[2] > 1 ? s.row_pitch : 0,
                                ext[2] > 1 ? s.slice_pitch : 0, host, nw, wp, &e);
    } else if (is_dense(d, ext) && is_dense(s, ext)) {
      err = clEnqueueWriteBuffer(native(q), native(dst), CL_FALSE, d.offset(0, 0, 0),
                                 ext[0] * ext[1] * ext[2], host, nw, wp, &e);
    } else {
      const std::size_t zero[3] = {0, 0, 0};
      err = clEnqueueWriteBufferRect(native(q), native(dst), CL_FALSE, d.origin.data(), zero,
                                     ext.data(), d.row_pitch, d.slice_pitch, s.row_pitch,
                                     s.slice_pitch, host, nw, wp, &e);
    }
    cl::check_lazy(err, [&] {
      return "writing " + human(ext[0] * ext[1] * ext[2]) + " to '" + info().name + "'";
    });
    return wrap(e);
  }

  std::shared_ptr<EventImpl> do_read_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                          void* dst, const Pitched& d, Extent ext,
                                          Waits waits) override {
    const auto w = wait_list(waits);
    const cl_uint nw = static_cast<cl_uint>(w.size());
    const cl_event* wp = w.empty() ? nullptr : w.data();
    auto* host = static_cast<std::byte*>(dst) + d.offset(0, 0, 0);
    cl_event e = nullptr;
    cl_int err;
    if (src.is_image()) {
      const auto& img = cl_memory(src);
      const auto o = pixels(img, s, ext, true), r = pixels(img, s, ext, false);
      err = clEnqueueReadImage(native(q), img.get(), CL_FALSE, o.data(), r.data(),
                               ext[1] > 1 || ext[2] > 1 ? d.row_pitch : 0,
                               ext[2] > 1 ? d.slice_pitch : 0, host, nw, wp, &e);
    } else if (is_dense(d, ext) && is_dense(s, ext)) {
      err = clEnqueueReadBuffer(native(q), native(src), CL_FALSE, s.offset(0, 0, 0),
                                ext[0] * ext[1] * ext[2], host, nw, wp, &e);
    } else {
      const std::size_t zero[3] = {0, 0, 0};
      err = clEnqueueReadBufferRect(native(q), native(src), CL_FALSE, s.origin.data(), zero,
                                    ext.data(), s.row_pitch, s.slice_pitch, d.row_pitch,
                                    d.slice_pitch, host, nw, wp, &e);
    }
    cl::check_lazy(err, [&] {
      return "reading " + human(ext[0] * ext[1] * ext[2]) + " from '" + info().name + "'";
    });
    return wrap(e);
  }

  std::shared_ptr<EventImpl> do_copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                          Memory& dst, const Pitched& d, Extent ext,
                                          Waits waits) override {
    const auto w = wait_list(waits);
    const cl_uint nw = static_cast<cl_uint>(w.size());
    const cl_event* wp = w.empty() ? nullptr : w.data();
    cl_event e = nullptr;
    cl_int err;
    if (src.is_image() && dst.is_image()) {
      const auto& si = cl_memory(src);
      const auto& di = cl_memory(dst);
      const auto so = pixels(si, s, ext, true), dorg = pixels(di, d, ext, true),
                 r = pixels(si, s, ext, false);
      err = clEnqueueCopyImage(native(q), si.get(), di.get(), so.data(), dorg.data(), r.data(), nw,
                               wp, &e);
    } else if (src.is_image()) {
      const auto& si = cl_memory(src);
      const auto so = pixels(si, s, ext, true), r = pixels(si, s, ext, false);
      err = clEnqueueCopyImageToBuffer(native(q), si.get(), native(dst), so.data(), r.data(),
                                       d.offset(0, 0, 0), nw, wp, &e);
    } else if (dst.is_image()) {
      const auto& di = cl_memory(dst);
      const auto dorg = pixels(di, d, ext, true), r = pixels(di, d, ext, false);
      err = clEnqueueCopyBufferToImage(native(q), native(src), di.get(), s.offset(0, 0, 0),
                                       dorg.data(), r.data(), nw, wp, &e);
    } else if (is_dense(d, ext) && is_dense(s, ext)) {
      err = clEnqueueCopyBuffer(native(q), native(src), native(dst), s.offset(0, 0, 0),
                                d.offset(0, 0, 0), ext[0] * ext[1] * ext[2], nw, wp, &e);
    } else {
      err = clEnqueueCopyBufferRect(native(q), native(src), native(dst), s.origin.data(),
                                    d.origin.data(), ext.data(), s.row_pitch, s.slice_pitch,
                                    d.row_pitch, d.slice_pitch, nw, wp, &e);
    }
    cl::check(err, "copying " + human(ext[0] * ext[1] * ext[2]) + " on '" + info().name + "'");
    return wrap(e);
  }

  std::shared_ptr<EventImpl> do_fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                           std::size_t bytes, const void* pattern,
                                           std::size_t pattern_bytes, Waits waits) override {
    const auto w = wait_list(waits);
    cl_event e = nullptr;
    if (fill_by_kernel(offset, bytes)) {
      fill_kernel(native(q), dst, offset, bytes, pattern, pattern_bytes, w, &e);
      return wrap(e);
    }
    cl::check(
        clEnqueueFillBuffer(native(q), native(dst), pattern, pattern_bytes, offset, bytes,
                            static_cast<cl_uint>(w.size()), w.empty() ? nullptr : w.data(), &e),
        "filling " + human(bytes) + " on '" + info().name + "'");
    return wrap(e);
  }

  std::shared_ptr<EventImpl> do_launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                             std::span<const KernelArg> args,
                                             Waits waits) override {
    const auto w = wait_list(waits);
    cl_event e = nullptr;
    enqueue_kernel(native(q), k, l, args, w, &e);
    return wrap(e);
  }

  // ---- pinned host memory and mapping
  std::unique_ptr<HostMemory> allocate_host(std::size_t bytes) override {
    cl_int err = CL_SUCCESS;
    cl::Mem mem(clCreateBuffer(ctx_.get(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes,
                               nullptr, &err));
    if (err != CL_SUCCESS) throw_oom(bytes, err, "pinned host memory");
    void* p = clEnqueueMapBuffer(default_.get(), mem.get(), CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                 bytes, 0, nullptr, nullptr, &err);
    if (err != CL_SUCCESS || !p) throw_oom(bytes, err, "pinned host memory");
    return std::make_unique<ClHostMemory>(p, bytes, std::move(mem), default_.get());
  }

  void* do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) override {
    cl_map_flags flags = 0;
    if (access == MapAccess::read) flags = CL_MAP_READ;
    if (access == MapAccess::write) flags = CL_MAP_WRITE_INVALIDATE_REGION;
    if (access == MapAccess::read_write) flags = CL_MAP_READ | CL_MAP_WRITE;
    cl_int err = CL_SUCCESS;
    void* p = clEnqueueMapBuffer(default_.get(), native(m), CL_TRUE, flags, offset, bytes, 0,
                                 nullptr, nullptr, &err);
    cl::check(err, "mapping " + human(bytes) + " of '" + info().name + "'");
    return p;
  }
  void do_unmap(Memory& m, void* ptr) override {
    cl_int err = clEnqueueUnmapMemObject(default_.get(), native(m), ptr, 0, nullptr, nullptr);
    if (err == CL_SUCCESS) err = clFinish(default_.get());
    cl::check(err, "unmapping an array of '" + info().name + "'");
  }

  // ---- images
  bool image_supported(DType t, int dims) override {
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

  std::unique_ptr<Memory> do_allocate_image(const ImageFormat& f) override {
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

  // OpenCL buffers have no address outside their context (DLPack needs one).
  std::unique_ptr<Memory> adopt(std::uint64_t, std::size_t, std::function<void()>) override {
    throw DeviceError("'" + info().name +
                      "' (opencl) cannot adopt memory allocated elsewhere; import host memory, or "
                      "use a CUDA device");
  }

  // ---- shared virtual memory
  bool svm_supported() override { return info().svm; }
  void* svm_allocate(std::size_t bytes) override {
    void* p = clsvm::alloc(ctx_.get(), bytes);
    if (!p) throw_oom(bytes, CL_OUT_OF_RESOURCES, "shared virtual memory");
    return p;
  }
  void svm_free(void* p) override { clsvm::free(ctx_.get(), p); }
  void svm_map(void* p, std::size_t bytes, MapAccess access) override {
    cl::check(
        clsvm::map(default_.get(), p, bytes, access != MapAccess::write, access != MapAccess::read),
        "mapping shared virtual memory on '" + info().name + "'");
  }
  void svm_unmap(void* p) override {
    cl::check(clsvm::unmap(default_.get(), p),
              "unmapping shared virtual memory on '" + info().name + "'");
  }
  void do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                      std::size_t bytes) override {
    // Coarse-grain SVM is host-visible only while mapped.
    void* p = const_cast<void*>(svm);
    svm_map(p, bytes, MapAccess::read);
    cl_int err = clEnqueueWriteBuffer(default_.get(), native(dst), CL_TRUE, dst_offset, bytes, p, 0,
                                      nullptr, nullptr);
    svm_unmap(p);
    cl::check(err, "copying shared virtual memory to an array on '" + info().name + "'");
  }
  void do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                        std::size_t bytes) override {
    svm_map(svm, bytes, MapAccess::write);
    cl_int err = clEnqueueReadBuffer(default_.get(), native(src), CL_TRUE, src_offset, bytes, svm,
                                     0, nullptr, nullptr);
    svm_unmap(svm);
    cl::check(err, "copying an array to shared virtual memory on '" + info().name + "'");
  }

 protected:
  class ClProgram final : public Program {
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
      if (clGetProgramInfo(p_.get(), CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr) !=
          CL_SUCCESS) {
        return {};
      }
      return bin;
    }
    std::unique_ptr<Kernel> create_kernel(std::string_view name) override {
      cl_int err = CL_SUCCESS;
      std::string n(name);
      cl::KernelHandle k(clCreateKernel(p_.get(), n.c_str(), &err));
      cl::check(err, "creating kernel '" + n + "'");
      return std::make_unique<ClKernel>(std::move(k));
    }

   private:
    cl::ProgramHandle p_;
  };

  std::unique_ptr<Program> load(const std::vector<char>& bin) override {
    const std::size_t size = bin.size();
    const auto* ptr = reinterpret_cast<const unsigned char*>(bin.data());
    cl_int status = CL_SUCCESS;
    cl_int err = CL_SUCCESS;
    cl::ProgramHandle p(clCreateProgramWithBinary(ctx_.get(), 1, &id_, &size, &ptr, &status, &err));
    if (err != CL_SUCCESS || status != CL_SUCCESS) return nullptr;
    if (clBuildProgram(p.get(), 1, &id_, nullptr, nullptr, nullptr) != CL_SUCCESS) return nullptr;
    return std::make_unique<ClProgram>(std::move(p));
  }

  std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) override {
    const char* text = src.text.c_str();
    const std::size_t length = src.text.size();
    cl_int err = CL_SUCCESS;
    cl::ProgramHandle p(clCreateProgramWithSource(ctx_.get(), 1, &text, &length, &err));
    cl::check(err, "creating program " + src.name);
    std::string options = "-cl-std=CL1.2";
    for (const auto& [k, v] : defines) options += " -D" + k + "=" + v;
    err = clBuildProgram(p.get(), 1, &id_, options.c_str(), nullptr, nullptr);
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

 private:
  void enqueue_kernel(cl_command_queue q, const Kernel& k, const Launch& l,
                      std::span<const KernelArg> args, const std::vector<cl_event>& w,
                      cl_event* e) {
    cl_kernel kernel = static_cast<const ClKernel&>(k).get();
    // clSetKernelArg is not thread-safe on one kernel object, so argument setting and the
    // enqueue happen under one lock.
    std::lock_guard lock(mutex_);
    cl_uint index = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      cl_int err;
      if (args[i].memory) {
        cl_mem m = native(*args[i].memory);
        err = clSetKernelArg(kernel, index++, sizeof(cl_mem), &m);
        if (err == CL_SUCCESS && args[i].sampled) {
          // The dialect's GPIX_IMAGE2D/3D parameter is an image and a sampler_t.
          cl_sampler smp = sampler(args[i].sampler);
          err = clSetKernelArg(kernel, index++, sizeof(cl_sampler), &smp);
        }
      } else {
        err = clSetKernelArg(kernel, index++, args[i].size, args[i].value.data());
      }
      cl::check(err, "setting kernel argument " + std::to_string(i));
    }
    cl::check(clEnqueueNDRangeKernel(
                  q, kernel, static_cast<cl_uint>(l.dims), nullptr, l.global.data(), l.local.data(),
                  static_cast<cl_uint>(w.size()), w.empty() ? nullptr : w.data(), e),
              "launching a kernel on '" + info().name + "'");
  }

  // One sampler per description, made on first use (under mutex_).
  cl_sampler sampler(const SamplerDesc& d) {
    const int key = (d.linear ? 1 : 0) | (d.normalized ? 2 : 0);
    auto& s = samplers_[static_cast<std::size_t>(key)];
    if (!s) {
      cl_int err = CL_SUCCESS;
      s = cl::Sampler(clCreateSampler(ctx_.get(), d.normalized ? CL_TRUE : CL_FALSE,
                                      CL_ADDRESS_CLAMP_TO_EDGE,
                                      d.linear ? CL_FILTER_LINEAR : CL_FILTER_NEAREST, &err));
      cl::check(err, "creating a sampler on '" + info().name + "'");
    }
    return s.get();
  }

  [[noreturn]] void throw_oom(std::size_t bytes, cl_int err, const char* what = "a buffer") {
    throw OutOfMemory("cannot allocate " + human(bytes) + " for " + what + " on '" + info().name +
                          "': " + cl::error_name(err) + " (total memory " +
                          human(info().global_memory) + ", largest allocation " +
                          human(info().max_allocation) +
                          "); free arrays, use smaller images or another device",
                      bytes, cl::error_name(err));
  }

  // Out-of-memory codes at a touch are OutOfMemory; anything else means the driver failed in
  // another way (NVIDIA: -9999 after a faulting command), and says so.
  [[noreturn]] void touch_failed(std::size_t bytes, cl_int err, const char* what) {
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

  // The named workaround "nvidia-opencl-oom": with the CUDA device of the same card known,
  // refuse a buffer that does not fit into the card's free memory before NVIDIA's OpenCL is
  // asked (it cannot recover from running out).
  void check_card_free(std::size_t bytes, const char* what) {
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

  // Runs enqueue (a command that makes a new allocation resident; it sets *event) on a queue
  // of its own and waits for it, checking the enqueue, the wait and the command's own status.
  // NVIDIA's OpenCL refuses every later command on a queue where a touch failed
  // (CL_INVALID_COMMAND_QUEUE), so the touch queue is thrown away after a failure and the
  // default queue, with the user's work, is never hit.
  template <class F>
  cl_int touch(F&& enqueue) {
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

 public:
  PciAddress pci_address() const override { return pci_; }
  void set_pci(PciAddress a) { pci_ = a; }
  void set_nvidia() { nvidia_ = true; }
  // Named workaround "pocl-basic-threads": PoCL 3.1's synchronous "basic" driver runs
  // commands in whichever thread enqueues or waits, and with two host threads enqueueing reads
  // on one queue it deadlocks on its own event mutex (pocl_update_event_running; seen in
  // test_core_memory_two_devices with POCL_DEVICES="pthread basic"). Staged transfers use one
  // copy thread there. GPIX_DISABLE_WORKAROUNDS=pocl-basic-threads lifts it.
  void set_pocl_basic() { pocl_basic_ = true; }
  unsigned max_transfer_threads() const override {
    return pocl_basic_ && !config().workaround_disabled("pocl-basic-threads") ? 1 : 0;
  }
  void set_card_memory_source(std::function<NativeMemoryInfo()> source) override {
    if (!nvidia_ || config().workaround_disabled("nvidia-opencl-oom")) return;
    card_ = std::move(source);
    // The card's own count replaces the 95% cap on gpix's accounting (set at enumeration).
    pool().set_limit(0);
  }
  // The card's free and total memory as CUDA counts them, where the card is known.
  NativeMemoryInfo native_memory_info() override { return card_ ? card_() : NativeMemoryInfo{}; }

 private:
  PciAddress pci_;
  bool nvidia_ = false;
  bool pocl_basic_ = false;
  std::function<NativeMemoryInfo()> card_;
  cl_device_id id_;
  cl::Context ctx_;
  ClQueue default_;
  std::mutex mutex_;
  std::mutex touch_mutex_;
  cl::Queue touch_;
  std::array<cl::Sampler, 4> samplers_;
  std::mutex formats_mutex_;
  std::optional<std::vector<cl_image_format>> formats2_, formats3_;
};

DeviceType to_type(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return DeviceType::gpu;
  if (t & CL_DEVICE_TYPE_CPU) return DeviceType::cpu;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return DeviceType::accelerator;
  return DeviceType::other;
}

}  // namespace

BackendDevices enumerate_opencl() {
  BackendDevices out;
  out.status.backend = Backend::opencl;
  cl_uint nplat = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &nplat);
  if (err != CL_SUCCESS || nplat == 0) {
    out.status.detail = "no OpenCL platform found (" + cl::error_name(err) +
                        "); install an OpenCL driver such as pocl-opencl-icd, or register a "
                        "vendor's ICD in /etc/OpenCL/vendors";
    return out;
  }
  std::vector<cl_platform_id> platforms(nplat);
  clGetPlatformIDs(nplat, platforms.data(), nullptr);
  std::vector<std::string> problems;
  for (cl_platform_id p : platforms) {
    const std::string pname = platform_string(p, CL_PLATFORM_NAME);
    cl_uint ndev = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev);
    if (err != CL_SUCCESS || ndev == 0) {
      problems.push_back(pname + ": no devices (" + cl::error_name(err) + ")");
      continue;
    }
    std::vector<cl_device_id> ids(ndev);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, ndev, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      DeviceInfo info;
      info.backend = Backend::opencl;
      info.name = device_string(id, CL_DEVICE_NAME);
      info.vendor = device_string(id, CL_DEVICE_VENDOR);
      info.platform = pname;
      info.type = to_type(device_value<cl_device_type>(id, CL_DEVICE_TYPE));
      info.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
      info.global_memory = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
      info.max_allocation = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.local_memory = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
      info.max_work_group = device_value<std::size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
      info.fp64 = device_value<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
      info.images = device_value<cl_bool>(id, CL_DEVICE_IMAGE_SUPPORT) == CL_TRUE;
      info.svm = clsvm::svm_coarse_grain(id);
      info.api_version = device_string(id, CL_DEVICE_VERSION);
      info.driver_version = device_string(id, CL_DRIVER_VERSION);
      cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                       reinterpret_cast<cl_context_properties>(p), 0};
      cl::Context ctx(clCreateContext(props, 1, &id, nullptr, nullptr, &err));
      if (err != CL_SUCCESS) {
        problems.push_back(info.name + ": cannot create a context (" + cl::error_name(err) + ")");
        continue;
      }
      cl::Queue q(clCreateCommandQueue(ctx.get(), id, 0, &err));
      if (err != CL_SUCCESS) {
        problems.push_back(info.name + ": cannot create a queue (" + cl::error_name(err) + ")");
        continue;
      }
      const bool nvidia = pname.find("NVIDIA") != std::string::npos;
      const bool pocl_basic =
          pname == "Portable Computing Language" && info.name.rfind("basic", 0) == 0;
      const std::uint64_t total = info.global_memory;
      auto dev = std::make_shared<ClDevice>(std::move(info), id, std::move(ctx), std::move(q));
      if (pocl_basic) dev->set_pocl_basic();
      if (nvidia) {
        dev->set_nvidia();
        // cl_nv_device_attribute_query: CL_DEVICE_PCI_BUS_ID_NV, _SLOT_ID_NV, _DOMAIN_ID_NV.
        cl_uint bus = 0, slot = 0, domain = 0;
        if (clGetDeviceInfo(id, 0x4008, sizeof bus, &bus, nullptr) == CL_SUCCESS &&
            clGetDeviceInfo(id, 0x4009, sizeof slot, &slot, nullptr) == CL_SUCCESS) {
          std::optional<std::uint32_t> dom;
          if (clGetDeviceInfo(id, 0x400A, sizeof domain, &domain, nullptr) == CL_SUCCESS)
            dom = domain;
          dev->set_pci(pci_from_nv_opencl(bus, slot, dom));
        }
      }
      // Named workaround "nvidia-opencl-oom": NVIDIA's OpenCL reports out-of-memory when a
      // new buffer is first touched and then refuses every later command in that context
      // (CL_INVALID_COMMAND_QUEUE, then -9999), so no recovery is possible once the driver
      // runs out. Where the CUDA driver sees the same card, the registry hands this device its
      // free-memory count (set_card_memory_source) and allocate() refuses what does not fit.
      // Otherwise gpix stops at 95% of the device's memory by its own accounting and raises
      // OutOfMemory itself, with the context intact (other processes' use is not seen then).
      // GPIX_DISABLE_WORKAROUNDS=nvidia-opencl-oom (or gpix::set_memory_limit) lifts both.
      if (nvidia && !config().workaround_disabled("nvidia-opencl-oom")) {
        dev->pool().set_limit(total / 100 * 95);
        dev->pool().set_limit_reason(
            "95% of the device's memory: NVIDIA's OpenCL cannot recover from running out, "
            "see the nvidia-opencl-oom workaround in docs/ARCHITECTURE.md");
      }
      out.devices.push_back(std::move(dev));
    }
  }
  out.status.devices = out.devices.size();
  out.status.available = !out.devices.empty();
  out.status.detail = std::to_string(nplat) + " platform(s), " +
                      std::to_string(out.devices.size()) + " usable device(s)";
  for (const auto& p : problems) out.status.detail += "; " + p;
  return out;
}

}  // namespace gpix::detail
