#pragma once
// The internal backend interface. Each API (OpenCL, CUDA) implements DeviceImpl; nothing here
// names an OpenCL or CUDA type, and nothing of it appears in a public header.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/card_memory.h"
#include "gpix/device.h"
#include "gpix/dtype.h"
#include "recycling.h"

namespace gpix::detail {

class MemoryPool;
class StagingRing;
class CopyThreads;

class EventImpl;

// One device allocation of bytes() bytes: a linear buffer, or (is_image()) an image object
// made by DeviceImpl::allocate_image(), whose bytes() is width * height * depth * element size.
class Memory {
 public:
  explicit Memory(std::size_t bytes, bool image = false) : bytes_(bytes), image_(image) {}
  virtual ~Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  std::size_t bytes() const noexcept { return bytes_; }
  // The allocation's address in the API's unified address space (a CUdeviceptr on CUDA), for
  // exchange with other frameworks (DLPack). 0 where there is none: OpenCL buffers have no
  // address outside their context.
  virtual std::uint64_t native_pointer() const noexcept { return 0; }
  bool is_image() const noexcept { return image_; }
  // Called by the pool when it hands this block to a new owner: kernels of the earlier owner
  // may still be queued on the device's default queue. Reuse on that queue is safe (it runs in
  // order); work on any other queue waits for them first (detail::after_earlier_owners): the
  // first such call records a marker of the default queue here, and every call off that queue
  // waits for it (whichever queue and thread it comes from) until it is done.
  struct HandOn {
    std::mutex mutex;
    bool pending = false;               // handed on, no marker recorded yet
    std::shared_ptr<EventImpl> marker;  // the default queue when it was first used elsewhere
  };
  void mark_handed_on() {
    std::shared_ptr<EventImpl> old;  // released after the lock
    const std::lock_guard lock(hand_on_.mutex);
    hand_on_.pending = true;
    old.swap(hand_on_.marker);
  }
  HandOn& hand_on() noexcept { return hand_on_; }

 private:
  std::size_t bytes_;
  bool image_;
  HandOn hand_on_;
};

// Page-locked host memory from DeviceImpl::allocate_host(): data() stays valid and mapped
// for the object's life, and transfers from/to it take the device's fast (DMA) path.
class HostMemory {
 public:
  HostMemory(void* data, std::size_t bytes) : data_(data), bytes_(bytes) {}
  virtual ~HostMemory() = default;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* data_;
  std::size_t bytes_;
};

// A point in time on a queue (cl_event / CUevent). Backends wrap their native event; a
// completed-at-creation event is fine for work that finished synchronously.
class EventImpl {
 public:
  virtual ~EventImpl() = default;
  // Blocks until the work is done. Throws DeviceError when it failed.
  virtual void wait() = 0;
  // Non-blocking: whether the work is done (failed work counts as done).
  virtual bool done() = 0;
  // Only for events from DeviceImpl::user_event(): marks the event complete so that work
  // waiting on it may start. Throws InvalidArgument on other events.
  virtual void complete() = 0;
};
using Waits = std::span<EventImpl* const>;

// An ordered stream of work on one device (an in-order cl_command_queue / a CUstream).
// Work on one queue runs in submission order; work on different queues is ordered only
// through events.
class QueueImpl {
 public:
  virtual ~QueueImpl() = default;
};

// A box inside a pitched 3D layout, in BYTES along x, rows along y, slices along z.
// Buffers and host memory use row_pitch/slice_pitch (bytes); for an image Memory the pitches
// are ignored and origin[0] / extent[0] are still bytes (element size * pixels), as in
// cuMemcpy3D's srcXInBytes/WidthInBytes.
struct Pitched {
  std::array<std::size_t, 3> origin{};  // x bytes, y rows, z slices
  std::size_t row_pitch = 0;
  std::size_t slice_pitch = 0;
  std::size_t offset(std::size_t x, std::size_t y, std::size_t z) const {
    return (origin[0] + x) + (origin[1] + y) * row_pitch + (origin[2] + z) * slice_pitch;
  }
};
using Extent = std::array<std::size_t, 3>;  // x bytes, y rows, z slices

// Whether the box extent at p occupies one contiguous byte range (then a plain linear
// transfer of extent[0] * extent[1] * extent[2] bytes at p.offset(0, 0, 0) does the job).
inline bool is_dense(const Pitched& p, const Extent& e) {
  return (e[1] == 1 || p.row_pitch == e[0]) && (e[2] == 1 || p.slice_pitch == e[0] * e[1]);
}

// How an image is read by kernels (public gpix::Sampler has the same fields).
struct SamplerDesc {
  bool linear = false;      // false: nearest
  bool normalized = false;  // coordinates in [0, 1] instead of pixels
  friend bool operator==(const SamplerDesc&, const SamplerDesc&) = default;
};

// An image object's format: CL_R / a one-channel CUDA array of element_bytes-sized pixels.
struct ImageFormat {
  int dims = 2;  // 2 or 3
  std::size_t width = 1, height = 1, depth = 1;
  DType dtype{};  // u8 i8 u16 i16 u32 i32 f32 (image_channel_type() says which exist)
};

enum class MapAccess : std::uint8_t { read = 1, write = 2, read_write = 3 };

// gpix's accounting and, where the API reports it, the device's own free/total.
struct NativeMemoryInfo {
  bool known = false;  // false on OpenCL, which has no query for free memory
  std::uint64_t free = 0;
  std::uint64_t total = 0;
};

// One argument of a kernel launch: a device allocation or a scalar of up to 8 bytes.
struct KernelArg {
  const Memory* memory = nullptr;
  // For an image Memory read through a sampler: one logical argument of the dialect's
  // GPIX_IMAGE2D/GPIX_IMAGE3D (OpenCL: image + sampler_t, two native arguments; CUDA: one
  // texture object made from the array and the sampler).
  bool sampled = false;
  SamplerDesc sampler{};
  std::array<std::byte, 8> value{};
  std::size_t size = 0;

  static KernelArg mem(const Memory& m) {
    KernelArg a;
    a.memory = &m;
    return a;
  }
  static KernelArg image(const Memory& m, SamplerDesc s) {
    KernelArg a;
    a.memory = &m;
    a.sampled = true;
    a.sampler = s;
    return a;
  }
  template <class T>
  static KernelArg scalar(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
    KernelArg a;
    std::memcpy(a.value.data(), &v, sizeof(T));
    a.size = sizeof(T);
    return a;
  }
};

// Compile-time defines for a kernel build: {"T", "gpix_f32"} becomes -DT=gpix_f32. Every
// launch makes one, so its buffer is recycled (recycling.h); most names and values fit in the
// strings' own storage.
using Defines = std::vector<std::pair<std::string, std::string>,
                            Recycling<std::pair<std::string, std::string>>>;
// A launch's arguments, recycled the same way.
using KernelArgs = std::vector<KernelArg, Recycling<KernelArg>>;

// A kernel source (the dialect is prepended by the caller) and a stable hash of it.
struct ProgramSource {
  std::string name;  // for messages, e.g. "stats.kernel"
  std::string text;
  std::string hash;
  // Whether a program of one entry may leave the file's other kernels out (kernel_entry.h):
  // the catalog's kernels never call one another; a user's OpenCL kernel may call another.
  bool splittable = false;
  // The file's program groups (kernel_entry.h): where programs are built per entry, a kernel
  // of a group is built in one program with the rest of its group.
  std::vector<std::vector<std::string>> groups;
};

// A compiled program's entry point, owned by the device's program cache.
class Kernel {
 public:
  explicit Kernel(std::string name) : name_(std::move(name)) {}
  virtual ~Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  // The entry point's name, for messages.
  const std::string& name() const noexcept { return name_; }
  // Set on a quick program's kernels (DeviceImpl::kernel, quick builds): the full program's
  // kernel, built now where its background build has not landed (nullptr where it failed).
  // DeviceImpl::launch asks it for launches past kQuickLaunchLimit work-items.
  std::function<std::shared_ptr<const Kernel>()> full;

 private:
  std::string name_;
};

// A quick program's kernel launched over more work-items than this runs its full program's
// kernel instead, built first where it is not ready. Measured on NVIDIA's OpenCL (H200,
// bench/RESULTS.md, 2026-12-03, twenty-third session): quick programs ran a 4096^2 float32
// median (16.8 M work-items) in 22 ms against 0.16, a Gaussian in 7.4 ms against 0.17, while
// their full builds took 40-50 ms longer than the quick ones; past this size waiting for the
// full build costs less than running the quick one.
inline constexpr std::size_t kQuickLaunchLimit = std::size_t{1} << 24;

// Work size in OpenCL terms: global is the total number of work-items per axis (a multiple
// of local), local the work-group size. Kernels bounds-check.
struct Launch {
  int dims = 1;
  std::array<std::size_t, 3> global{1, 1, 1};
  std::array<std::size_t, 3> local{1, 1, 1};
};

// A device: a non-virtual front that every caller in core uses, over the backend contract
// that each API implements.
//
// The front (public, non-virtual) checks arguments once for every backend (ranges, boxes,
// fill patterns, the largest allocation, map/unmap pairs), so both backends raise the same
// typed error with the same message for the same misuse; then it calls the backend. The
// contract (protected, `do_*` and the other pure virtuals) assumes checked arguments. The
// hooks that have a default are capabilities a backend may lack; their default says "none"
// (no peer path, no streamed push, no PCI address), never "not implemented".
//
// The blocking calls (write, read, copy, fill, launch) stay backend primitives rather than
// "async, then wait": each backend's blocking path avoids the event an async call makes
// (OpenCL: clFinish instead of a wait for an event, faster on NVIDIA's OpenCL; CUDA: a
// stream synchronise instead of an event from the pool), and at 1 MB a transfer takes ~27 us,
// where that difference shows (docs/ARCHITECTURE.md, "Backends").
class DeviceImpl {
 public:
  explicit DeviceImpl(DeviceInfo info);
  virtual ~DeviceImpl();
  DeviceImpl(const DeviceImpl&) = delete;
  DeviceImpl& operator=(const DeviceImpl&) = delete;

  const DeviceInfo& info() const noexcept { return info_; }
  void set_index(int i) { info_.index = i; }

  // ---- the front: checked calls (front.cpp)

  // Allocation made resident at once, so that out-of-memory shows up here. Throws OutOfMemory
  // (also for more than info().max_allocation).
  std::unique_ptr<Memory> allocate(std::size_t bytes);
  // Blocking transfers on the default queue. Throw InvalidArgument for a range outside the
  // allocation; 0 bytes do nothing.
  void write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes);
  void read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes);
  void copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
            std::size_t bytes);
  // Repeats pattern (1, 2, 4 or 8 bytes) over [offset, offset + bytes), which must be whole
  // patterns (InvalidArgument otherwise).
  void fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
            std::size_t pattern_bytes);
  // A kernel launch on the default queue. Throws InvalidArgument when a global size is not a
  // multiple of the work-group size; an empty launch does nothing.
  void launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args);
  // Blocks until the default queue is done.
  void finish();

  // Asynchronous pitched 3D transfers on q that start after every event in waits (and after
  // earlier work on q). The host pointer must stay valid and untouched until the returned
  // event completes. Either Memory may be an image (see Pitched). Throws InvalidArgument for
  // an empty extent or a buffer box outside its allocation.
  // OpenCL: clEnqueue{Write,Read,Copy}BufferRect, {Write,Read,Copy}Image, CopyBufferToImage,
  // CopyImageToBuffer (for those two the buffer side is tightly packed: row_pitch ==
  // extent[0], slice_pitch == extent[0] * extent[1]; callers guarantee it).
  // CUDA: cuMemcpy3DAsync (CU_MEMORYTYPE_HOST / DEVICE / ARRAY).
  std::shared_ptr<EventImpl> write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                        const void* src, const Pitched& s, Extent extent,
                                        Waits waits);
  std::shared_ptr<EventImpl> read_rect(QueueImpl& q, const Memory& src, const Pitched& s, void* dst,
                                       const Pitched& d, Extent extent, Waits waits);
  std::shared_ptr<EventImpl> copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                       Memory& dst, const Pitched& d, Extent extent, Waits waits);
  // Asynchronous fill of a linear byte range of a buffer, checked like fill() (CUDA:
  // cuMemsetD8/16/32Async, or a small kernel for 8-byte patterns).
  std::shared_ptr<EventImpl> fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                        std::size_t bytes, const void* pattern,
                                        std::size_t pattern_bytes, Waits waits);
  // A kernel launch on q after waits, checked like launch() (CUDA: cuLaunchKernel).
  std::shared_ptr<EventImpl> launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                          std::span<const KernelArg> args, Waits waits);
  // Blocks until all work on q is done (CUDA: cuStreamSynchronize).
  void finish(QueueImpl& q);

  // Maps [offset, offset + bytes) of a buffer into host memory, blocking; the pointer stays
  // valid until unmap(). read: holds the current contents; write: the contents are undefined
  // and whatever is written reaches the device at unmap(); read_write both. unmap() blocks
  // until the device sees the writes; it throws InvalidArgument for a pointer that map() did
  // not return for m. OpenCL: clEnqueueMapBuffer/UnmapMemObject; CUDA: a pinned staging
  // block plus cuMemcpyDtoH at map and cuMemcpyHtoD at unmap.
  void* map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access);
  void unmap(Memory& m, void* ptr);

  // An image object of the given format, made resident like allocate(). Throws
  // UnsupportedDType when the device has no such format (image_supported() says first).
  // OpenCL: clCreateImage (CL_R, one channel type per dtype); CUDA: cuArray3DCreate.
  std::unique_ptr<Memory> allocate_image(const ImageFormat& f);

  // A copy of bytes from src (on this device) to dst on device `to`, made by the devices
  // themselves on this device's default queue; returns its event, or nullptr when this pair
  // of devices has no direct path (callers then stage through host memory).
  std::shared_ptr<EventImpl> copy_peer(const Memory& src, std::size_t src_offset, DeviceImpl& to,
                                       Memory& dst, std::size_t dst_offset, std::size_t bytes);

  // Blocking copies between shared virtual memory and a buffer (range-checked).
  void svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm, std::size_t bytes);
  void svm_copy_from(const Memory& src, std::size_t src_offset, void* svm, std::size_t bytes);

  // A push that host threads feed while a kernel on the device already takes it in (see
  // StreamedPush), or nullptr where the backend has none or the arguments do not suit it.
  class StreamedPush;
  std::unique_ptr<StreamedPush> stream_in(QueueImpl& q, Memory& mem, std::size_t offset, void* host,
                                          std::size_t bytes, std::size_t slice);

  // ---- the contract: what each backend implements

  // The queue that the blocking calls use (CUDA: the device's primary stream).
  virtual QueueImpl& default_queue() = 0;
  // A new independent queue (CUDA: cuStreamCreate(CU_STREAM_NON_BLOCKING)).
  virtual std::unique_ptr<QueueImpl> create_queue() = 0;
  // An event that completes when everything submitted to q so far and every event in waits
  // has completed (OpenCL: clEnqueueMarkerWithWaitList; CUDA: cuStreamWaitEvent for each
  // wait, then cuEventRecord).
  virtual std::shared_ptr<EventImpl> marker(QueueImpl& q, Waits waits) = 0;
  // An event that completes only when EventImpl::complete() is called from the host
  // (OpenCL: clCreateUserEvent; CUDA: cuStreamWaitValue32 on a pinned flag on a private
  // stream followed by cuEventRecord).
  virtual std::shared_ptr<EventImpl> user_event() = 0;

  // Page-locked host memory of bytes bytes, usable by every queue of this device; throws
  // OutOfMemory. OpenCL: a CL_MEM_ALLOC_HOST_PTR buffer kept mapped (the pinned path on
  // NVIDIA's OpenCL); CUDA: cuMemHostAlloc(CU_MEMHOSTALLOC_PORTABLE).
  virtual std::unique_ptr<HostMemory> allocate_host(std::size_t bytes) = 0;
  // Whether allocate_image() can make a one-channel image of dtype t with dims 2 or 3.
  virtual bool image_supported(DType t, int dims) = 0;
  // The API's own view of free and total memory (CUDA: cuMemGetInfo; OpenCL: the card's
  // CUDA device where the registry linked one, else unknown).
  virtual NativeMemoryInfo native_memory_info() = 0;

  // Shared virtual memory (OpenCL 2.0 coarse-grain SVM; CUDA: cuMemAllocManaged). Whether
  // this device can allocate it, and the calls. svm_map/svm_unmap bracket host access
  // (coarse-grain SVM needs them; managed memory needs only a synchronize).
  virtual bool svm_supported() = 0;
  virtual void* svm_allocate(std::size_t bytes) = 0;
  virtual void svm_free(void* p) = 0;
  virtual void svm_map(void* p, std::size_t bytes, MapAccess access) = 0;
  virtual void svm_unmap(void* p) = 0;

  // Interop (DLPack): wraps memory allocated by someone else at native_pointer-style address
  // `pointer` of `bytes` bytes, without copying; `release` is called once when the Memory is
  // destroyed. Throws (DeviceError where the backend cannot adopt foreign memory) without
  // calling release, so the caller keeps ownership on failure.
  virtual std::unique_ptr<Memory> adopt(std::uint64_t pointer, std::size_t bytes,
                                        std::function<void()> release) = 0;

  // ---- optional capabilities; the defaults say the device has none

  // The API's own device number (the CUDA ordinal), or -1 where the backend has no
  // process-wide device numbering.
  virtual int native_ordinal() const noexcept { return -1; }
  // The PCI address of the card, where the API reports one (CUDA; NVIDIA's OpenCL).
  virtual PciAddress pci_address() const { return {}; }
  // Another backend's count of the same card's memory (the registry hands NVIDIA's OpenCL
  // devices the CUDA device of their card, see card_memory.h). Ignored by default.
  virtual void set_card_memory_source(std::function<NativeMemoryInfo()> /*source*/) {}
  // How many host threads may call into this device at once for one staged transfer (0: no
  // limit). A driver that is not safe with concurrent callers says 1.
  virtual unsigned max_transfer_threads() const { return 0; }
  // Whether a kernel file is built as one program per entry (kernel_entry.h) rather than as
  // one program: where the compiler's time grows with the kernels in a program and a filter
  // needs one or two of them. GPIX_PROGRAM_UNIT (file / entry) overrides it; kernel() asks
  // programs_per_entry(), which applies that.
  virtual bool prefers_programs_per_entry() const { return false; }
  bool programs_per_entry() const;
  // Whether a tiled run's worker pushes slab k + 1 while slab k's filter runs
  // (detail::write_all_after; GPIX_TILED_PIPELINE overrides it): where a kernel runs beside a
  // transfer of another queue. NVIDIA's OpenCL started the filter only once the push had
  // landed (a slab's run time grew to its push time, 0.23 -> 0.28 s for an 8 GB Gaussian from
  // pinned memory), CUDA ran them together (0.185 -> 0.175 s; bench/RESULTS.md).
  virtual bool prefers_tiled_pipeline() const { return false; }
  bool tiled_pipeline() const;
  // The most work-groups a launch may have on `axis` (0, 1, 2 = x, y, z): CUDA's grid takes
  // 2^31 - 1 on x and 65535 on y and z; OpenCL's has no limit but size_t. groups_limit() is
  // what launches are held to: this, and on y and z no more than config().grid_groups_limit
  // (tests lower it to run the swapped grids of filters/launch.cpp on small images).
  virtual std::size_t max_groups(int /*axis*/) const {
    return std::numeric_limits<std::size_t>::max();
  }
  std::size_t groups_limit(int axis) const;

  // A push that host threads feed while a kernel on the device already takes it in (CUDA,
  // kernels/staging.kernel). `host` is page-locked memory from allocate_host(); its `bytes`
  // go to mem at `offset` in slices of `slice` bytes (the last one shorter), each as soon as
  // the host marks it filled. Runs on q.
  class StreamedPush {
   public:
    virtual ~StreamedPush() = default;
    // Launches the kernel; slices may be marked before or after. Throws the launch's error.
    virtual void start() = 0;
    // Slice k is in host memory (the thread's stores to it come first). Any thread, once.
    virtual void ready(std::size_t k) noexcept = 0;
    // Returns once device memory holds every slice; throws the device's error. With `failed`
    // (not every slice was marked) the kernel is told to stop first and nothing is promised.
    virtual void finish(bool failed) = 0;
  };

  // A built program that hands out its kernels (backends derive their programs from it).
  class Program {
   public:
    virtual ~Program() = default;
    virtual std::unique_ptr<Kernel> create_kernel(std::string_view name) = 0;
    // The device binary for the disk cache; empty where the backend cannot provide one.
    virtual std::vector<char> binary() const { return {}; }
  };

  // ---- shared by every backend (keep_alive.cpp, kernel_cache.cpp)

  // The device's memory pool (core/src/memory_pool.h); every allocation of arrays and
  // temporaries goes through it. Created on first use.
  MemoryPool& pool();
  // The device's pinned staging rings for transfers between pageable host memory and the
  // device (core/src/staging_ring.h), one per direction (`to_device`: pushes), so that a push
  // and a pull (two workers of a tiled run) are staged at once. Created on first use, beside
  // the pool.
  StagingRing& staging_ring(bool to_device);
  // The device's host threads that copy staged transfers through those rings
  // (core/src/copy_threads.h), one pool per direction, so that transfers to two devices copy
  // at once; all pools share the host's cores (ThreadShare::process). Created on first use.
  CopyThreads& copy_threads(bool to_device);
  // The queues that blocking pushes and pulls of large transfers use (transfer.cpp), apart
  // from the default queue that kernels use and from each other: a push and a pull then
  // travel at once, on the copy engines of both directions. A pull on the default queue held
  // back every push queued behind it (a push waits for the default queue's work so far), which
  // serialised a tiled run's pinned pushes and pulls (bench/RESULTS.md, 2026-11-28 fourth
  // session). Created on first use.
  QueueImpl& push_queue();
  QueueImpl& pull_queue();
  // Objects kept alive until event e completes (a HostArray behind an async transfer).
  // Released by later calls of retain()/collect() (Event::wait() collects) once e is done,
  // or at finish. Polls EventImpl::done(), so no backend needs a completion callback.
  void retain(std::shared_ptr<EventImpl> e, std::shared_ptr<const void> keep);
  void collect(bool wait_all = false);

  // A kernel handed out by the program cache. It keeps its program alive: the cache may evict
  // a program (it holds at most config().program_cache_entries) while a caller still launches
  // one of its kernels. Hold it for as long as the kernel is used; never keep a bare
  // `const Kernel&` to it.
  using KernelPtr = std::shared_ptr<const Kernel>;

  // The kernel `name` of src built with defines, compiled once per device and cached in
  // memory and on disk (program_cache.h). Throws CompileError with the build log. The cache's
  // lock is not held while a program compiles: requests for other programs go on meanwhile,
  // and requests for the same one wait for that compile instead of starting their own.
  KernelPtr kernel(const ProgramSource& src, std::string_view name, const Defines& defines);

  // The same kernel where it is ready now: in memory, or loaded from the prebuilt bundle or
  // the disk cache (milliseconds). Otherwise nullptr, and the program compiles on a
  // background thread (once; a later call finds it, or, where that compile failed, compiles
  // again and throws its error). For filters with a fast kernel that is slow to compile and
  // a plain one that gives bit-identical results and compiles quickly: the first call runs
  // the plain one instead of waiting (tiered compilation). Where programs are built per file
  // (programs_per_entry() false), on devices other than GPUs unless config().tiered_compile
  // is 1, or where it is 0, this waits like kernel() and never returns nullptr.
  KernelPtr kernel_if_ready(const ProgramSource& src, std::string_view name,
                            const Defines& defines);
  // Blocks until the background compiles started so far are done (tests, benchmarks); those
  // still waiting for a quiet compiler start at once.
  void wait_for_background_compiles();
  // For the device's teardown and the process's exit: background compiles still waiting for
  // a quiet compiler never start (their programs are left uncompiled), running ones are
  // waited for, and later tiered requests wait for their program like kernel().
  void stop_background_compiles();

  struct CacheCounters {
    std::uint64_t memory_hits = 0, disk_hits = 0, compiles = 0, disk_rejected = 0, disk_writes = 0;
    std::uint64_t prebuilt_hits = 0, prebuilt_rejected = 0;
    std::uint64_t evictions = 0;            // programs dropped for the entry limit
    std::uint64_t background_compiles = 0;  // compiles started by kernel_if_ready()
    std::uint64_t quick_compiles = 0;       // quick builds (build_quick) that served a request
    std::uint64_t upgrades = 0;             // quick programs replaced by their full build
    std::uint64_t upgrade_failures = 0;     // full builds that failed where the quick one built
  };
  CacheCounters cache_counters();
  // The programs in the in-memory cache now.
  std::size_t programs_in_memory();
  // Drops the in-memory programs (kernels handed out before stay valid while their KernelPtr
  // lives).
  void clear_memory_cache();
  // Tests only: called on the compiling thread, without the cache's lock, before each
  // compile from source (not for memory or disk hits).
  void set_compile_hook_for_testing(std::function<void(const ProgramSource&, const Defines&)> f);

 protected:
  // Backends call this first in their destructor: cached pool blocks, the staging ring and
  // the keep-alive list go back while the backend's context still exists.
  void release_resources();

  // The contract behind the front's checked calls: arguments are valid and non-empty.
  virtual std::unique_ptr<Memory> do_allocate(std::size_t bytes) = 0;
  virtual void do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual void do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) = 0;
  virtual void do_copy(const Memory& src, std::size_t src_offset, Memory& dst,
                       std::size_t dst_offset, std::size_t bytes) = 0;
  virtual void do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
                       std::size_t pattern_bytes) = 0;
  virtual void do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) = 0;
  virtual void do_finish(QueueImpl& q) = 0;
  virtual std::shared_ptr<EventImpl> do_write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                                   const void* src, const Pitched& s, Extent extent,
                                                   Waits waits) = 0;
  virtual std::shared_ptr<EventImpl> do_read_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                                  void* dst, const Pitched& d, Extent extent,
                                                  Waits waits) = 0;
  virtual std::shared_ptr<EventImpl> do_copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                                  Memory& dst, const Pitched& d, Extent extent,
                                                  Waits waits) = 0;
  virtual std::shared_ptr<EventImpl> do_fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                                   std::size_t bytes, const void* pattern,
                                                   std::size_t pattern_bytes, Waits waits) = 0;
  virtual std::shared_ptr<EventImpl> do_launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                                     std::span<const KernelArg> args,
                                                     Waits waits) = 0;
  virtual void* do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) = 0;
  virtual void do_unmap(Memory& m, void* ptr) = 0;
  virtual std::unique_ptr<Memory> do_allocate_image(const ImageFormat& f) = 0;
  virtual void do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                              std::size_t bytes) = 0;
  virtual void do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                                std::size_t bytes) = 0;
  // Optional: a direct device-to-device path (CUDA peer to peer); nullptr where there is none.
  virtual std::shared_ptr<EventImpl> do_copy_peer(const Memory& /*src*/, std::size_t /*src_offset*/,
                                                  DeviceImpl& /*to*/, Memory& /*dst*/,
                                                  std::size_t /*dst_offset*/,
                                                  std::size_t /*bytes*/) {
    return nullptr;
  }
  // Optional: a streamed push (see StreamedPush); nullptr where there is none.
  virtual std::unique_ptr<StreamedPush> do_stream_in(QueueImpl& /*q*/, Memory& /*mem*/,
                                                     std::size_t /*offset*/, void* /*host*/,
                                                     std::size_t /*bytes*/, std::size_t /*slice*/) {
    return nullptr;
  }

  virtual std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) = 0;
  // A build the compiler finishes sooner, with its optimisations off, for the same results
  // (quick builds: kernel() serves a first call with it while build() runs in the background);
  // nullptr where the backend has none.
  virtual std::unique_ptr<Program> build_quick(const ProgramSource& /*src*/,
                                               const Defines& /*defines*/) {
    return nullptr;
  }
  // A program from a binary that binary() produced on this device and driver; nullptr when
  // the backend rejects it (it is then rebuilt from source) or has no binaries.
  virtual std::unique_ptr<Program> load(const std::vector<char>& /*binary*/) { return nullptr; }
  // A program from the prebuilt kernel bundle (kernel_bundle.h) for the in-memory cache's
  // key; nullptr where the bundle has none for this device (or the driver rejects it: *rejected
  // is then set). Only CUDA has prebuilt programs: OpenCL binaries belong to one driver.
  virtual std::unique_ptr<Program> load_prebuilt(const std::string& /*program_key*/,
                                                 bool* /*rejected*/) {
    return nullptr;
  }

 private:
  // The checks of the front (front.cpp); messages name the device and what was asked.
  void check_range(const Memory& m, std::size_t offset, std::size_t bytes, const char* op) const;
  void check_box(const Memory& m, const Pitched& p, const Extent& e, const char* op) const;
  void check_fill(const Memory& m, std::size_t offset, std::size_t bytes,
                  std::size_t pattern_bytes) const;
  // False for an empty launch (a global size of 0: nothing to run). Throws InvalidArgument for
  // a global size that is not a whole number of work-groups and for more work-groups on an
  // axis than groups_limit().
  bool check_launch(const Kernel& k, const Launch& l) const;

  DeviceInfo info_;

  // The in-memory program cache (kernel_cache.cpp). An entry is made by the first request
  // and filled outside cache_mutex_ by that request's thread (or a background compile);
  // `built` is ready once the program is there (or holds the compile error). Past
  // config().program_cache_entries the least recently used built entry is dropped; kernels
  // handed out keep theirs alive (KernelPtr).
  struct ProgramEntry {
    std::promise<void> promise;
    std::shared_future<void> built;
    std::unique_ptr<Program> program;
    std::uint64_t last_use = 0;  // cache_mutex_
    std::mutex kernels_mutex;
    std::map<std::string, std::unique_ptr<Kernel>, std::less<>> kernels;
    // A quick program's (quick builds): its full build, made once by the background upgrade or
    // by a large launch (upgrade()), whichever asks first; the other waits on upgrade_mutex.
    struct Upgrade {
      std::string key;  // in programs_
      std::function<std::unique_ptr<Program>(bool background)> build;
      std::mutex mutex;
      std::shared_ptr<ProgramEntry> full;  // mutex
      bool failed = false;                 // mutex
    };
    std::unique_ptr<Upgrade> upgrade;  // set before the entry is settled; quick programs only
  };
  // What one request needs to find or build its program.
  struct ProgramRequest {
    std::string key;  // in memory
    bool one_entry = false;
    // One-entry programs: the kernel's program group (ProgramSource::groups), built whole;
    // nullptr for a kernel of no group. Points into the source, which outlives the request.
    const std::vector<std::string>* group = nullptr;
  };
  static const std::vector<std::string>* group_of(const ProgramSource& src, std::string_view name);
  ProgramRequest program_request(const ProgramSource& src, std::string_view name,
                                 const Defines& defines) const;
  // Appends a request's key (program_request()'s r.key) to out: a reused buffer allocates
  // nothing (built_kernel()).
  void append_request_key(std::string& out, const ProgramSource& src, std::string_view name,
                          const Defines& defines) const;
  // The kernel where its program is in memory and built (nullptr otherwise: the caller takes
  // the full path, which compiles, loads or waits). Allocates nothing on a hit, nor where the
  // program is still compiling, which `compiling` (when given) then says.
  KernelPtr built_kernel(const ProgramSource& src, std::string_view name, const Defines& defines,
                         bool* compiling = nullptr);
  // The on-disk key of a program: its in-memory key plus everything about the device and
  // driver. Built only when the disk cache is asked (a memory hit, every repeated call, does
  // not need it: five allocations a call).
  std::string disk_key(const std::string& key) const;
  // The entry for key, made (and *mine set) where there is none; evicted entries go to
  // *dropped, to be released after the lock.
  std::shared_ptr<ProgramEntry> claim(const std::string& key, bool* mine,
                                      std::vector<std::shared_ptr<ProgramEntry>>* dropped);
  // A claimed entry's program from the prebuilt bundle or the disk cache; nullptr on a miss.
  std::unique_ptr<Program> load_cached(const ProgramRequest& r);
  // Compiles a claimed entry's program and stores it on disk. A compile a caller waits for
  // (not `background`) counts as compiler activity for wait_for_quiet_compiler(). `quick`:
  // build_quick() instead, never stored on disk; nullptr where the backend has no quick build.
  std::unique_ptr<Program> compile(const ProgramRequest& r, const ProgramSource& src,
                                   std::string_view name, const Defines& defines,
                                   bool background = false, bool quick = false);
  // Whether background compiles are used here (tiered compilation: config().tiered_compile,
  // GPUs by default) and the device is not being released.
  bool tiered_now();
  // Whether request r's first build is a quick one (config().quick_builds, tiered_now()).
  bool quick_build_applies(const ProgramRequest& r);
  // Starts job on a background thread once registered for the exit handler; throws where no
  // thread is to be had.
  void start_background(std::function<void()> job);
  // A quick program's full build (background: the upgrade queued by kernel(), else a large
  // launch's): built once, put in the quick entry's place in the cache (unless that entry has
  // left it); nullptr where the full build failed (counted; the quick program stays).
  std::shared_ptr<ProgramEntry> upgrade(ProgramEntry& quick, bool background);
  // A background compile's wait before it starts: until no foreground compile is running and
  // none has ended (or been announced by kernel_if_ready()) for `quiet`, or until
  // wait_for_background_compiles() asks for it now. False: stop_background_compiles() was
  // called, and the compile must not start.
  bool wait_for_quiet_compiler(std::chrono::milliseconds quiet);
  // The body of kernel_if_ready()'s background thread: waits for a quiet compiler, then
  // compiles and fills the claimed entry (or settles it with the error).
  void background_compile(const ProgramRequest& r, const ProgramSource& src,
                          const std::string& name, const Defines& defines,
                          const std::shared_ptr<ProgramEntry>& entry,
                          std::chrono::milliseconds quiet);
  // The process-wide list of devices with background work, which an exit handler stops
  // (kernel_cache.cpp says why), and that handler's registration.
  static void note_background_work(DeviceImpl* d);
  static void forget_background_work(DeviceImpl* d);
  static void stop_background_compiles_at_exit();
  // After a foreground build: registers the exit handler again where `d` has background work
  // (kernel_cache.cpp says why).
  static void note_build_for_exit_handler(DeviceImpl* d);
  // Fills a claimed entry, or removes it and passes the error to its waiters.
  static void settle(ProgramEntry& entry, std::unique_ptr<Program> program);
  void settle_failed(const std::string& key, const std::shared_ptr<ProgramEntry>& entry,
                     std::exception_ptr error);
  KernelPtr kernel_of(const std::shared_ptr<ProgramEntry>& entry, std::string_view name);

  std::mutex cache_mutex_;
  CacheCounters counters_;
  std::uint64_t use_clock_ = 0;  // cache_mutex_
  std::map<std::string, std::shared_ptr<ProgramEntry>, std::less<>> programs_;
  std::function<void(const ProgramSource&, const Defines&)> compile_hook_;
  std::set<std::string, std::less<>> background_failed_;  // cache_mutex_
  std::mutex background_mutex_;
  std::vector<std::future<void>> background_;
  // The compiler's activity on this device (wait_for_quiet_compiler()).
  std::mutex quiet_mutex_;
  std::condition_variable quiet_cv_;
  int foreground_compiles_ = 0;                          // quiet_mutex_
  std::chrono::steady_clock::time_point last_activity_;  // quiet_mutex_
  int flushes_ = 0;         // quiet_mutex_: wait_for_background_compiles() calls in progress
  bool releasing_ = false;  // quiet_mutex_: stop_background_compiles() was called
  // A background compile was queued here once (note_background_work); read by builds, which
  // must not take the device list's lock (kernel_cache.cpp says why).
  std::atomic<bool> had_background_work_{false};

  std::once_flag pool_once_;
  std::shared_ptr<MemoryPool> pool_;
  std::once_flag ring_once_[2];
  std::unique_ptr<StagingRing> ring_[2];  // [to_device]
  std::once_flag copy_threads_once_[2];
  std::unique_ptr<CopyThreads> copy_threads_[2];  // [to_device]
  std::once_flag push_queue_once_, pull_queue_once_;
  std::unique_ptr<QueueImpl> push_queue_, pull_queue_;
  std::mutex retain_mutex_;
  std::vector<std::pair<std::shared_ptr<EventImpl>, std::shared_ptr<const void>>> retained_;
  std::mutex maps_mutex_;
  std::multimap<const void*, const Memory*> maps_;  // map()'s pointers, checked by unmap()
};

// Every backend's devices, as the backends enumerate them.
struct BackendDevices {
  BackendStatus status;
  std::vector<std::shared_ptr<DeviceImpl>> devices;
};
BackendDevices enumerate_opencl();
BackendDevices enumerate_cuda();

}  // namespace gpix::detail
