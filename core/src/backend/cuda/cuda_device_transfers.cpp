// CudaDevice: blocking and pitched transfers, bounce blocks for pageable memory, map/unmap,
// managed-memory copies and peer-to-peer copies.
#include "backend/cuda/cuda_device.h"
#include "config.h"

namespace gpix::detail::cuda {

namespace {

// The largest read that do_read lands in its pinned block (CudaDevice::small_read_).
constexpr std::size_t kSmallRead = 64 * 1024;

// The payload of a host function that unpacks a bounce block into pageable host memory.
struct Unpack {
  std::shared_ptr<std::byte> block;
  std::byte* dst;
  Pitched d;
  Extent e;
};

// Copies the box e between a pitched layout and a dense block (rows of e[0] bytes).
void pack(const std::byte* src, const Pitched& s, const Extent& e, std::byte* dense) {
  for (std::size_t z = 0; z < e[2]; ++z)
    for (std::size_t y = 0; y < e[1]; ++y)
      std::memcpy(dense + (z * e[1] + y) * e[0], src + s.offset(0, y, z), e[0]);
}
void unpack(const std::byte* dense, std::byte* dst, const Pitched& d, const Extent& e) {
  for (std::size_t z = 0; z < e[2]; ++z)
    for (std::size_t y = 0; y < e[1]; ++y)
      std::memcpy(dst + d.offset(0, y, z), dense + (z * e[1] + y) * e[0], e[0]);
}
void CUDA_CB run_unpack(void* data) {
  // The driver's host-function thread: no CUDA calls here (the block goes back to its
  // cache, which only takes a lock).
  std::unique_ptr<Unpack> u(static_cast<Unpack*>(data));
  unpack(u->block.get(), u->dst, u->d, u->e);
}

}  // namespace

void CudaDevice::do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) {
  ContextScope scope(*ctx_);
  // The message is built only on failure: a repeated call allocates nothing (bench_launch).
  const auto what = [&] { return "writing " + human(bytes) + " to '" + info().name + "'"; };
  check_what(drv().cuMemcpyHtoDAsync(native(dst) + offset, src, bytes, stream()), what);
  sync(what);
}

void CudaDevice::do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) {
  ContextScope scope(*ctx_);
  const auto what = [&] { return "reading " + human(bytes) + " from '" + info().name + "'"; };
  // A small read (a reduction's result) lands in a pinned block and is copied out: the
  // driver's pageable path stages it, which cost 1.5-2.5 us a read on an H200 (a 2048^2
  // maximum 30.5 -> 28.4 us, the standard deviation's 25 kB 41.3 -> 33.9; bench/RESULTS.md,
  // 2026-12-02 sixteenth session).
  // Without page-locked memory for the block, reads take the pageable path: same bytes.
  if (bytes <= kSmallRead && !pinned_registry().contains(dst)) {
    std::unique_lock lock(small_read_mutex_);
    if (!small_read_ && !small_read_refused_) {
      try {
        small_read_ = pinned_->take(kSmallRead);
      } catch (const OutOfMemory&) {
        small_read_refused_ = true;
      }
    }
    if (small_read_) {
      check_what(drv().cuMemcpyDtoHAsync(small_read_.get(), native(src) + offset, bytes, stream()),
                 what);
      sync(what);
      std::memcpy(dst, small_read_.get(), bytes);
      return;
    }
  }
  check_what(drv().cuMemcpyDtoHAsync(dst, native(src) + offset, bytes, stream()), what);
  sync(what);
}

void CudaDevice::do_copy(const Memory& src, std::size_t src_offset, Memory& dst,
                         std::size_t dst_offset, std::size_t bytes) {
  ContextScope scope(*ctx_);
  const auto what = [&] { return "copying " + human(bytes) + " on '" + info().name + "'"; };
  check_what(
      drv().cuMemcpyDtoDAsync(native(dst) + dst_offset, native(src) + src_offset, bytes, stream()),
      what);
  check_what(drv().cuStreamSynchronize(stream()), what);
}

std::shared_ptr<EventImpl> CudaDevice::do_write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                                     const void* src, const Pitched& s, Extent ext,
                                                     Waits waits) {
  ContextScope scope(*ctx_);
  const auto what = [&] {
    return "writing " + human(ext[0] * ext[1] * ext[2]) + " to '" + info().name + "'";
  };
  const CUstream st = native(q);
  wait_for(st, waits, what);
  Side from{CU_MEMORYTYPE_HOST, static_cast<const std::byte*>(src), 0, nullptr, s};
  std::shared_ptr<std::byte> bounce;
  if (must_bounce(from.host + s.offset(0, 0, 0))) {
    // The data is taken now (the contract allows it: the host memory stays untouched
    // until the event completes anyway).
    bounce = pinned_->take(ext[0] * ext[1] * ext[2]);
    pack(from.host, s, ext, bounce.get());
    from = Side{CU_MEMORYTYPE_HOST, bounce.get(), 0, nullptr, dense(ext)};
  }
  copy3d(st, from, side(dst, d), ext, what);
  auto e = record(st, what);
  if (bounce) retain(e, bounce);
  return e;
}

std::shared_ptr<EventImpl> CudaDevice::do_read_rect(QueueImpl& q, const Memory& src,
                                                    const Pitched& s, void* dst, const Pitched& d,
                                                    Extent ext, Waits waits) {
  ContextScope scope(*ctx_);
  const auto what = [&] {
    return "reading " + human(ext[0] * ext[1] * ext[2]) + " from '" + info().name + "'";
  };
  const CUstream st = native(q);
  wait_for(st, waits, what);
  auto* host = static_cast<std::byte*>(dst);
  if (must_bounce(host + d.offset(0, 0, 0))) {
    // Into a pinned block, then a host function on the stream unpacks it: the stream, not
    // this thread, decides when the data lands.
    auto block = pinned_->take(ext[0] * ext[1] * ext[2]);
    copy3d(st, side(src, s), Side{CU_MEMORYTYPE_HOST, block.get(), 0, nullptr, dense(ext)}, ext,
           what);
    auto u = std::make_unique<Unpack>(Unpack{std::move(block), host, d, ext});
    check_what(drv().cuLaunchHostFunc(st, &run_unpack, u.get()), what);
    (void)u.release();  // run_unpack owns it now
  } else {
    copy3d(st, side(src, s), Side{CU_MEMORYTYPE_HOST, host, 0, nullptr, d}, ext, what);
  }
  return record(st, what);
}

std::shared_ptr<EventImpl> CudaDevice::do_copy_rect(QueueImpl& q, const Memory& src,
                                                    const Pitched& s, Memory& dst, const Pitched& d,
                                                    Extent ext, Waits waits) {
  ContextScope scope(*ctx_);
  const auto what = [&] {
    return "copying " + human(ext[0] * ext[1] * ext[2]) + " on '" + info().name + "'";
  };
  const CUstream st = native(q);
  wait_for(st, waits, what);
  copy3d(st, side(src, s), side(dst, d), ext, what);
  return record(st, what);
}

void* CudaDevice::do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) {
  ContextScope scope(*ctx_);
  // CUDA has no mapping of device memory: a pinned block holds the bytes while mapped.
  auto block = pinned_->take(bytes);
  if (access != MapAccess::write && bytes) {
    const std::string what = "mapping " + human(bytes) + " of '" + info().name + "'";
    check(drv().cuMemcpyDtoHAsync(block.get(), native(m) + offset, bytes, stream()), what);
    sync(what);
  }
  void* p = block.get();
  std::lock_guard lock(maps_mutex_);
  maps_[p] = Mapped{std::move(block), &m, offset, bytes, access};
  return p;
}

void CudaDevice::do_unmap(Memory& m, void* ptr) {
  Mapped mp;
  {
    std::lock_guard lock(maps_mutex_);
    auto it = maps_.find(ptr);
    if (it == maps_.end() || it->second.memory != &m) {
      throw InvalidArgument("unmap() was given a pointer that is not mapped from this array on '" +
                            info().name + "'");
    }
    mp = std::move(it->second);
    maps_.erase(it);
  }
  if (mp.access != MapAccess::read && mp.bytes) {
    ContextScope scope(*ctx_);
    const std::string what = "unmapping " + human(mp.bytes) + " of '" + info().name + "'";
    check(drv().cuMemcpyHtoDAsync(native(m) + mp.offset, mp.block.get(), mp.bytes, stream()), what);
    sync(what);
  }
}

void CudaDevice::do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                                std::size_t bytes) {
  ContextScope scope(*ctx_);
  const std::string what = "copying managed memory to an array on '" + info().name + "'";
  check(drv().cuMemcpyDtoDAsync(native(dst) + dst_offset, address(svm), bytes, stream()), what);
  sync(what);
}

void CudaDevice::do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                                  std::size_t bytes) {
  ContextScope scope(*ctx_);
  const std::string what = "copying an array to managed memory on '" + info().name + "'";
  check(drv().cuMemcpyDtoDAsync(address(svm), native(src) + src_offset, bytes, stream()), what);
  sync(what);
}

std::shared_ptr<EventImpl> CudaDevice::do_copy_peer(const Memory& src, std::size_t src_offset,
                                                    DeviceImpl& to, Memory& dst,
                                                    std::size_t dst_offset, std::size_t bytes) {
  auto* peer = dynamic_cast<CudaDevice*>(&to);
  if (!peer || peer == this || config().no_peer_copy || !peer_access(*peer)) return nullptr;
  const std::string what = "copying " + human(bytes) + " from '" + info().name + "' to '" +
                           peer->info().name + "' (peer to peer)";
  // The copy runs on this device's stream, after the source's writers; the destination's own
  // queued work (kernels still reading the block it overwrites, or the last user of a block
  // its pool recycled) is on the peer's stream, which this one waits for first.
  std::shared_ptr<EventImpl> dst_ready;
  {
    ContextScope peer_scope(*peer->ctx_);
    dst_ready = peer->record(peer->stream(), what);
  }
  ContextScope scope(*ctx_);
  EventImpl* const waits[] = {dst_ready.get()};
  wait_for(stream(), waits, what);
  check(drv().cuMemcpyPeerAsync(native(dst) + dst_offset, peer->ctx_->get(),
                                native(src) + src_offset, ctx_->get(), bytes, stream()),
        what);
  return record(stream(), what);
}

bool CudaDevice::peer_access(CudaDevice& peer) {
  std::lock_guard lock(peer_mutex_);
  auto it = peers_.find(&peer);
  if (it != peers_.end()) return it->second;
  bool ok = false;
  int can = 0;
  if (drv().cuDeviceCanAccessPeer(&can, ctx_->device(), peer.ctx_->device()) == CUDA_SUCCESS &&
      can) {
    ContextScope scope(*ctx_);
    const CUresult r = drv().cuCtxEnablePeerAccess(peer.ctx_->get(), 0);
    ok = r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  peers_[&peer] = ok;
  return ok;
}

bool CudaDevice::must_bounce(const void* host) {
  return flags_->pending.load() != 0 && !pinned_registry().contains(host);
}

Side CudaDevice::side(const Memory& m, const Pitched& p) const {
  if (m.is_image()) {
    return Side{CU_MEMORYTYPE_ARRAY, nullptr, 0, static_cast<const CuImage&>(m).get(), p};
  }
  return Side{CU_MEMORYTYPE_DEVICE, nullptr, native(m), nullptr, p};
}

void CudaDevice::copy3d(CUstream st, const Side& s, const Side& d, const Extent& e,
                        const What& what) {
  const bool arrays = s.type == CU_MEMORYTYPE_ARRAY || d.type == CU_MEMORYTYPE_ARRAY;
  if (!arrays && is_dense(s.p, e) && is_dense(d.p, e)) {
    const std::size_t n = e[0] * e[1] * e[2];
    const std::size_t so = s.p.offset(0, 0, 0), dof = d.p.offset(0, 0, 0);
    CUresult r;
    if (s.type == CU_MEMORYTYPE_HOST) {
      r = drv().cuMemcpyHtoDAsync(d.device + dof, s.host + so, n, st);
    } else if (d.type == CU_MEMORYTYPE_HOST) {
      r = drv().cuMemcpyDtoHAsync(const_cast<std::byte*>(d.host) + dof, s.device + so, n, st);
    } else {
      r = drv().cuMemcpyDtoDAsync(d.device + dof, s.device + so, n, st);
    }
    check_what(r, what);
    return;
  }
  // Rows per slice of a pitched side; slices that are not a whole number of rows apart are
  // copied one at a time.
  auto pitch = [&](const Side& x) {
    return e[1] == 1 && x.p.row_pitch < e[0] ? e[0] : x.p.row_pitch;
  };
  auto whole_rows = [&](const Side& x) {
    if (x.type == CU_MEMORYTYPE_ARRAY || e[2] == 1) return true;
    const std::size_t rp = pitch(x);
    return rp > 0 && x.p.slice_pitch % rp == 0 && x.p.slice_pitch / rp >= e[1];
  };
  const bool one_call = whole_rows(s) && whole_rows(d);
  const std::size_t slices = one_call ? 1 : e[2];
  for (std::size_t z = 0; z < slices; ++z) {
    CUDA_MEMCPY3D m{};
    const std::size_t depth = one_call ? e[2] : 1;
    auto fill_side = [&](const Side& x, bool src) {
      std::size_t xb = 0, y = 0, zz = 0, height = 0, rp = 0;
      CUdeviceptr dev = 0;
      const void* host = nullptr;
      CUarray arr = nullptr;
      if (x.type == CU_MEMORYTYPE_ARRAY) {
        xb = x.p.origin[0];
        y = x.p.origin[1];
        zz = x.p.origin[2] + z;
        arr = x.array;
      } else {
        rp = pitch(x);
        height = depth == 1 ? e[1] : x.p.slice_pitch / rp;
        const std::size_t off = x.p.offset(0, 0, z);
        if (x.type == CU_MEMORYTYPE_HOST) {
          host = x.host + off;
        } else {
          dev = x.device + off;
        }
      }
      if (src) {
        m.srcXInBytes = xb;
        m.srcY = y;
        m.srcZ = zz;
        m.srcMemoryType = x.type;
        m.srcHost = host;
        m.srcDevice = dev;
        m.srcArray = arr;
        m.srcPitch = rp;
        m.srcHeight = height;
      } else {
        m.dstXInBytes = xb;
        m.dstY = y;
        m.dstZ = zz;
        m.dstMemoryType = x.type;
        m.dstHost = const_cast<void*>(host);
        m.dstDevice = dev;
        m.dstArray = arr;
        m.dstPitch = rp;
        m.dstHeight = height;
      }
    };
    fill_side(s, true);
    fill_side(d, false);
    m.WidthInBytes = e[0];
    m.Height = e[1];
    m.Depth = depth;
    check_what(drv().cuMemcpy3DAsync(&m, st), what);
  }
}

}  // namespace gpix::detail::cuda
