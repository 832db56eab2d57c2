// ClDevice: blocking and pitched transfers, mapping, shared-virtual-memory copies.
#include "backend/opencl/opencl_device.h"
#include "backend/opencl/opencl_svm.h"
#include "config.h"

namespace gpix::detail::cl {

template <class What>
void ClDevice::finish_transfer(cl_int enqueued, bool blocking, const What& what) {
  cl::check_lazy(enqueued, what);
  if (!blocking) cl::check_lazy(clFinish(default_.get()), what);
}

bool ClDevice::blocks(bool read, std::size_t bytes) noexcept {
  const int b = config().cl_blocking;
  // kLarge: the staging ring's threshold (GPIX_STAGING_MIN_MB's default), so that the rule
  // changes the transfers from ordinary memory that were measured; above it come pinned ones
  // (queued was faster for a pinned 1 MB push) and transfers with staging switched off.
  constexpr std::size_t kSmallWrite = std::size_t{64} << 10, kLarge = std::size_t{512} << 10;
  return b >= 0 ? b == 1 : bytes <= kLarge && (read || bytes > kSmallWrite);
}

void ClDevice::do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const bool blocking = blocks(false, bytes);
  finish_transfer(clEnqueueWriteBuffer(default_.get(), native(dst), blocking ? CL_TRUE : CL_FALSE,
                                       offset, bytes, src, 0, nullptr, nullptr),
                  blocking,
                  [&] { return "writing " + human(bytes) + " to '" + info().name + "'"; });
}

void ClDevice::do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const bool blocking = blocks(true, bytes);
  finish_transfer(clEnqueueReadBuffer(default_.get(), native(src), blocking ? CL_TRUE : CL_FALSE,
                                      offset, bytes, dst, 0, nullptr, nullptr),
                  blocking,
                  [&] { return "reading " + human(bytes) + " from '" + info().name + "'"; });
}

void ClDevice::do_copy(const Memory& src, std::size_t src_offset, Memory& dst,
                       std::size_t dst_offset, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  cl::check_lazy(clEnqueueCopyBuffer(default_.get(), native(src), native(dst), src_offset,
                                     dst_offset, bytes, 0, nullptr, nullptr),
                 [&] { return "copying " + human(bytes) + " on '" + info().name + "'"; });
}

std::shared_ptr<EventImpl> ClDevice::do_write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                                   const void* src, const Pitched& s, Extent ext,
                                                   Waits waits) {
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

std::shared_ptr<EventImpl> ClDevice::do_read_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                                  void* dst, const Pitched& d, Extent ext,
                                                  Waits waits) {
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

std::shared_ptr<EventImpl> ClDevice::do_copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                                  Memory& dst, const Pitched& d, Extent ext,
                                                  Waits waits) {
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
  cl::check_lazy(err, [&] {
    return "copying " + human(ext[0] * ext[1] * ext[2]) + " on '" + info().name + "'";
  });
  return wrap(e);
}

void* ClDevice::do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) {
  cl_map_flags flags = 0;
  if (access == MapAccess::read) flags = CL_MAP_READ;
  if (access == MapAccess::write) flags = CL_MAP_WRITE_INVALIDATE_REGION;
  if (access == MapAccess::read_write) flags = CL_MAP_READ | CL_MAP_WRITE;
  cl_int err = CL_SUCCESS;
  void* p = clEnqueueMapBuffer(default_.get(), native(m), CL_TRUE, flags, offset, bytes, 0, nullptr,
                               nullptr, &err);
  cl::check_lazy(err, [&] { return "mapping " + human(bytes) + " of '" + info().name + "'"; });
  return p;
}

void ClDevice::do_unmap(Memory& m, void* ptr) {
  cl_int err = clEnqueueUnmapMemObject(default_.get(), native(m), ptr, 0, nullptr, nullptr);
  if (err == CL_SUCCESS) err = clFinish(default_.get());
  cl::check_lazy(err, [&] { return "unmapping an array of '" + info().name + "'"; });
}

void ClDevice::do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                              std::size_t bytes) {
  // Coarse-grain SVM is host-visible only while mapped.
  void* p = const_cast<void*>(svm);
  svm_map(p, bytes, MapAccess::read);
  cl_int err = clEnqueueWriteBuffer(default_.get(), native(dst), CL_TRUE, dst_offset, bytes, p, 0,
                                    nullptr, nullptr);
  svm_unmap(p);
  cl::check_lazy(
      err, [&] { return "copying shared virtual memory to an array on '" + info().name + "'"; });
}

void ClDevice::do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                                std::size_t bytes) {
  svm_map(svm, bytes, MapAccess::write);
  cl_int err = clEnqueueReadBuffer(default_.get(), native(src), CL_TRUE, src_offset, bytes, svm, 0,
                                   nullptr, nullptr);
  svm_unmap(svm);
  cl::check_lazy(
      err, [&] { return "copying an array to shared virtual memory on '" + info().name + "'"; });
}

}  // namespace gpix::detail::cl
