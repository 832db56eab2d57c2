#pragma once
// The OpenCL backend's device: one context and one in-order queue per device. Its members
// are defined by concept: opencl_device_memory.cpp, opencl_device_queues.cpp,
// opencl_device_transfers.cpp, opencl_device_launch.cpp, opencl_programs.cpp.
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
#include "backend/opencl/cl_events.h"
#include "backend/opencl/cl_memory.h"
#include "backend/opencl/cl_programs.h"
#include "backend/opencl/opencl_svm.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cl {

class ClDevice final : public DeviceImpl {
 public:
  ClDevice(DeviceInfo info, cl_device_id id, cl::Context ctx, cl::Queue queue)
      : DeviceImpl(std::move(info)), id_(id), ctx_(std::move(ctx)), default_(std::move(queue)) {}
  ~ClDevice() override;

  std::unique_ptr<Memory> do_allocate(std::size_t bytes) override;

  // Checks an enqueue, then (unless it was a blocking call) waits for the default queue;
  // what() names the transfer in errors.
  template <class What>
  void finish_transfer(cl_int enqueued, bool blocking, const What& what);
  // Whether a blocking read (or write) of `bytes` is one blocking call (GPIX_CL_BLOCKING).
  static bool blocks(bool read, std::size_t bytes) noexcept;

  // Blocking transfers: one blocking call, or a non-blocking enqueue and clFinish (the queue
  // is in order, so both wait for the same work), whichever NVIDIA's OpenCL returned from
  // sooner after a kernel (H200, pageable memory, two rounds, bench/RESULTS.md 2026-12-02):
  // reads up to 512 kB blocking (a reduction's 8-byte result 16.5-17.9 us against 26.1-26.6
  // queued), writes up to 64 kB queued (a filter's taps: 8 bytes 13.6-14.7 against 16.9-18.2)
  // and from there to 512 kB blocking (128 kB 30.4-33.5 against 45.0-46.2). Larger ones stay
  // queued: from ordinary memory they are staged (transfer.cpp), and a pinned 1 MB push was
  // faster queued (32.5-33.9 -> 34.2-35.3 GB/s). Messages are built only on failure.
  void do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) override;

  void do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) override;

  void do_copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
               std::size_t bytes) override;

  void do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
               std::size_t pattern_bytes) override;

  // Named workaround "nvidia-opencl-fill-4g": NVIDIA's clEnqueueFillBuffer (driver 580,
  // H200) writes wrong values when a fill reaches byte 2^32 of a buffer and, for a fill
  // starting past it, kills the context (CL_INVALID_COMMAND_QUEUE); measured by
  // `gpu_check --large-allocations`. Such fills run gpix's own kernel (fill.kernel's
  // fill_pattern, 64-bit indices). GPIX_DISABLE_WORKAROUNDS=nvidia-opencl-fill-4g lifts it.
  // GPIX_TEST_FILL_KERNEL=1 takes the kernel for every fill (tests of fill_pattern on any
  // device; the 4 GB case needs an NVIDIA card).
  bool fill_by_kernel(std::size_t offset, std::size_t bytes) const;
  void fill_kernel(cl_command_queue q, Memory& dst, std::size_t offset, std::size_t bytes,
                   const void* pattern, std::size_t pattern_bytes,
                   const std::vector<cl_event>& waits, cl_event* e);

  void do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) override;

  // ---- queues and events
  QueueImpl& default_queue() override { return default_; }
  std::unique_ptr<QueueImpl> create_queue() override;
  void do_finish(QueueImpl& q) override;
  std::shared_ptr<EventImpl> marker(QueueImpl& q, Waits waits) override;
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

  // ---- pinned host memory and mapping
  std::unique_ptr<HostMemory> allocate_host(std::size_t bytes) override;

  void* do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) override;
  void do_unmap(Memory& m, void* ptr) override;

  // ---- images
  bool image_supported(DType t, int dims) override;

  std::unique_ptr<Memory> do_allocate_image(const ImageFormat& f) override;

  // OpenCL buffers have no address outside their context (DLPack needs one).
  std::unique_ptr<Memory> adopt(std::uint64_t, std::size_t, std::function<void()>) override;

  // ---- shared virtual memory
  bool svm_supported() override { return info().svm; }
  void* svm_allocate(std::size_t bytes) override;
  void svm_free(void* p) override { clsvm::free(ctx_.get(), p); }
  void svm_map(void* p, std::size_t bytes, MapAccess access) override;
  void svm_unmap(void* p) override;
  void do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                      std::size_t bytes) override;
  void do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                        std::size_t bytes) override;

 protected:
  std::unique_ptr<Program> load(const std::vector<char>& bin) override;

  std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) override;
  std::unique_ptr<Program> build_quick(const ProgramSource& src, const Defines& defines) override;

 private:
  void enqueue_kernel(cl_command_queue q, const Kernel& k, const Launch& l,
                      std::span<const KernelArg> args, const std::vector<cl_event>& w, cl_event* e);

  // One sampler per description, made on first use (under mutex_).
  cl_sampler sampler(const SamplerDesc& d);

  [[noreturn]] void throw_oom(std::size_t bytes, cl_int err, const char* what = "a buffer");

  // Out-of-memory codes at a touch are OutOfMemory; anything else means the driver failed in
  // another way (NVIDIA: -9999 after a faulting command), and says so.
  [[noreturn]] void touch_failed(std::size_t bytes, cl_int err, const char* what);

  // The named workaround "nvidia-opencl-oom": with the CUDA device of the same card known,
  // refuse a buffer that does not fit into the card's free memory before NVIDIA's OpenCL is
  // asked (it cannot recover from running out).
  void check_card_free(std::size_t bytes, const char* what);

  // Runs enqueue (a command that makes a new allocation resident; it sets *event) on a queue
  // of its own and waits for it, checking the enqueue, the wait and the command's own status.
  // NVIDIA's OpenCL refuses every later command on a queue where a touch failed
  // (CL_INVALID_COMMAND_QUEUE), so the touch queue is thrown away after a failure and the
  // default queue, with the user's work, is never hit.
  template <class F>
  cl_int touch(F&& enqueue);

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
  // Named workaround "pocl-serial-build": PoCL 3.1 aborted the process ("Failed to create
  // kernel compiler pass inline-kernels", SIGABRT) in a fresh process where two programs built
  // at once (CI, `gpix run median_box` with a background compile beside the plain kernel's;
  // not reproduced here since, see docs/ARCHITECTURE.md). Two threads' first filters could
  // meet it the same way, so builds on PoCL devices take one process-wide lock.
  // GPIX_DISABLE_WORKAROUNDS=pocl-serial-build lifts it.
  void set_pocl() { pocl_ = true; }
  // NVIDIA's compute capability as major * 10 + minor (cl_nv_device_attribute_query), passed
  // to every build as GPIX_NV_SM: dialect.h's inline PTX float64 atomic needs sm_60.
  void set_nv_sm(int sm) { nv_sm_ = sm; }
  unsigned max_transfer_threads() const override;
  bool prefers_programs_per_entry() const override;
  void set_card_memory_source(std::function<NativeMemoryInfo()> source) override;
  // The card's free and total memory as CUDA counts them, where the card is known.
  NativeMemoryInfo native_memory_info() override { return card_ ? card_() : NativeMemoryInfo{}; }

 private:
  PciAddress pci_;
  bool nvidia_ = false;
  bool pocl_basic_ = false;
  bool pocl_ = false;
  int nv_sm_ = 0;
  // build() and build_quick(): the program with these options added.
  std::unique_ptr<Program> build_with(const ProgramSource& src, const Defines& defines,
                                      const char* extra_options);
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

}  // namespace gpix::detail::cl
