#pragma once
// The CUDA backend's device: the driver API and NVRTC, both loaded at run time. One primary
// context per device, its default queue a non-blocking stream; every call makes the context
// current for its scope, so calls may come from any thread. Its members are defined by
// concept: cuda_device_memory.cpp, cuda_device_queues.cpp, cuda_device_transfers.cpp,
// cuda_device_launch.cpp, cuda_programs.cpp, cuda_streamed_push.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_events.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/cuda_memory.h"
#include "backend/cuda/cuda_programs.h"
#include "backend/cuda/cuda_streamed_push.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cuda {

// One side of a pitched transfer: host memory, a device buffer or a CUDA array.
struct Side {
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  const std::byte* host = nullptr;
  CUdeviceptr device = 0;
  CUarray array = nullptr;
  Pitched p;
};

class CudaDevice final : public DeviceImpl {
 public:
  CudaDevice(DeviceInfo info, std::shared_ptr<const Context> ctx, cuda::Stream stream,
             const Nvrtc& nvrtc, Target target, int ordinal)
      : DeviceImpl(std::move(info)),
        ctx_(ctx),
        default_(ctx, std::move(stream)),
        nvrtc_(nvrtc),
        target_(target),
        ordinal_(ordinal),
        flags_(std::make_shared<UserFlags>(ctx)),
        pinned_(std::make_shared<PinnedCache>(ctx)),
        events_(std::make_shared<EventPool>(ctx)),
        control_(std::make_unique<StreamControl>(ctx)) {}

  ~CudaDevice() override;

  int native_ordinal() const noexcept override { return ordinal_; }
  PciAddress pci_address() const override { return pci_; }
  void set_pci(PciAddress a) { pci_ = a; }

  std::unique_ptr<Memory> do_allocate(std::size_t bytes) override;

  std::unique_ptr<Memory> adopt(std::uint64_t pointer, std::size_t bytes,
                                std::function<void()> release) override;

  void do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) override;

  void do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) override;

  void do_copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
               std::size_t bytes) override;

  void do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
               std::size_t pattern_bytes) override;

  void do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) override;

  // ---- queues and events
  QueueImpl& default_queue() override { return default_; }

  std::unique_ptr<QueueImpl> create_queue() override;

  void do_finish(QueueImpl& q) override;

  std::shared_ptr<EventImpl> marker(QueueImpl& q, Waits waits) override;
  // A kernel runs beside a copy of another stream (backend.h).
  bool prefers_tiled_pipeline() const override { return true; }
  // CUDA's grid limits (the same on every compute capability gpix supports).
  std::size_t max_groups(int axis) const override { return axis == 0 ? 0x7fffffffU : 65535U; }

  std::shared_ptr<EventImpl> user_event() override;

  // ---- pitched transfers
  std::shared_ptr<EventImpl> do_write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                           const void* src, const Pitched& s, Extent ext,
                                           Waits waits) override;

  std::shared_ptr<EventImpl> do_read_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                          void* dst, const Pitched& d, Extent ext,
                                          Waits waits) override;

  std::shared_ptr<EventImpl> do_copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                          Memory& dst, const Pitched& d, Extent ext,
                                          Waits waits) override;

  std::shared_ptr<EventImpl> do_fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                           std::size_t bytes, const void* pattern,
                                           std::size_t pattern_bytes, Waits waits) override;

  std::shared_ptr<EventImpl> do_launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                             std::span<const KernelArg> args, Waits waits) override;

  // ---- host memory
  std::unique_ptr<HostMemory> allocate_host(std::size_t bytes) override;

  void* do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) override;

  void do_unmap(Memory& m, void* ptr) override;

  // ---- images
  bool image_supported(DType t, int dims) override;

  std::unique_ptr<Memory> do_allocate_image(const ImageFormat& f) override;

  NativeMemoryInfo native_memory_info() override;

  // ---- managed memory as shared virtual memory
  bool svm_supported() override { return info().svm; }
  void* svm_allocate(std::size_t bytes) override;
  void svm_free(void* p) override;
  void svm_map(void*, std::size_t, MapAccess) override;
  void svm_unmap(void*) override {}
  void do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                      std::size_t bytes) override;
  void do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                        std::size_t bytes) override;

  // ---- streamed pushes (kernels/staging.kernel)
  std::unique_ptr<StreamedPush> do_stream_in(QueueImpl& q, Memory& mem, std::size_t offset,
                                             void* host, std::size_t bytes,
                                             std::size_t slice) override;

  // ---- peer copies
  std::shared_ptr<EventImpl> do_copy_peer(const Memory& src, std::size_t src_offset, DeviceImpl& to,
                                          Memory& dst, std::size_t dst_offset,
                                          std::size_t bytes) override;

 protected:
  std::unique_ptr<Program> load(const std::vector<char>& bin) override;
  std::unique_ptr<Program> load_prebuilt(const std::string& program_key, bool* rejected) override;

  std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) override;

 private:
  struct Mapped {
    std::shared_ptr<std::byte> block;
    const Memory* memory = nullptr;
    std::size_t offset = 0, bytes = 0;
    MapAccess access = MapAccess::read;
  };

  const cuda::Driver& drv() const noexcept { return ctx_->driver(); }
  CUstream stream() const noexcept { return default_.get(); }

  void sync(const What& what) { check_what(drv().cuStreamSynchronize(stream()), what); }

  static std::string hex(std::uint64_t v);
  static CUdeviceptr address(const void* p);
  static Pitched dense(const Extent& e) { return Pitched{{0, 0, 0}, e[0], e[0] * e[1]}; }

  [[noreturn]] void throw_alloc(CUresult r, std::size_t bytes, const std::string& what);

  // A plain event from the device's pool (no timing). Needs the context current.
  cuda::Event new_event(const What& what) { return events_->take(what); }

  // An event recorded on st now. Needs the context current.
  std::shared_ptr<EventImpl> record(CUstream st, const What& what);

  // Makes st wait for every event (all of this device: core waits on the host for others).
  void wait_for(CUstream st, Waits waits, const What& what);

  // The driver copies pageable host memory synchronously after the stream drains; while a
  // user event is pending, the stream may never drain on its own (the thread that would
  // complete it is the one that would block), so pageable memory then goes through a pinned
  // block instead. Page-locked memory that gpix did not allocate is bounced too (a copy more,
  // only while a user event is pending).
  bool must_bounce(const void* host);

  Side side(const Memory& m, const Pitched& p) const;

  // One box between two sides, on st. Buffers and host memory have their origin folded into
  // the address; arrays take it as coordinates (x in bytes, as Pitched says).
  void copy3d(CUstream st, const Side& s, const Side& d, const Extent& e, const What& what);

  // The 8-byte fill kernel where a fill needs one (the driver has no 8-byte memset), looked
  // up before any context scope: a first use compiles it.
  KernelPtr fill64_kernel(std::size_t bytes, std::size_t pattern_bytes);

  void enqueue_fill(CUstream st, Memory& dst, std::size_t offset, std::size_t bytes,
                    const void* pattern, std::size_t pattern_bytes, const Kernel* fill64,
                    const What& what);

  // Needs the context current.
  void enqueue_launch(CUstream st, const Kernel& k, const Launch& l,
                      std::span<const KernelArg> args);

  // Whether cuMemcpyPeerAsync goes straight to peer's memory; peer access is enabled on first
  // use. Otherwise (no NVLink/PCIe P2P between them) callers stage through host memory.
  bool peer_access(CudaDevice& peer);

  std::shared_ptr<const Context> ctx_;
  CuQueue default_;
  const Nvrtc& nvrtc_;
  Target target_;
  PciAddress pci_;
  int ordinal_;
  std::shared_ptr<UserFlags> flags_;
  std::shared_ptr<PinnedCache> pinned_;
  std::shared_ptr<EventPool> events_;
  std::unique_ptr<StreamControl> control_;
  std::mutex maps_mutex_;
  std::map<void*, Mapped> maps_;
  // do_read's landing block for small reads into pageable memory (a reduction's result), taken
  // from pinned_ on first use; the mutex covers the copy into it and out of it.
  std::mutex small_read_mutex_;
  std::shared_ptr<std::byte> small_read_;
  bool small_read_refused_ = false;  // no page-locked memory for it: reads stay pageable
  std::mutex peer_mutex_;
  std::map<const CudaDevice*, bool> peers_;
};

}  // namespace gpix::detail::cuda
