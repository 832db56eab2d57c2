/* A host-memory stand-in for libcuda.so.1 with one device, so that CI (no NVIDIA driver) runs
 * the CUDA backend's own logic: allocation and out-of-memory, transfers with offsets, 1/2/4-byte
 * memsets, the fill_u64 kernel's launch and arguments, module and kernel lookup, and the
 * context discipline (every call that needs a context fails with CUDA_ERROR_INVALID_CONTEXT
 * unless one was pushed, and pushes and pops must balance). Kernels other than fill_u64 fail
 * with CUDA_ERROR_NOT_SUPPORTED: it runs no GPU code. Streams, events and user-event waits
 * (cuStreamWaitValue32) are modelled as queues of deferred host operations, so the order of
 * work is real; pinned host memory, CUDA arrays (host memory) and texture objects (descriptors
 * only) exist for the memory model. Single-threaded use only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  DEVICE_UNAVAILABLE = 46,
  INVALID_CONTEXT = 201,
  NOT_FOUND = 500,
  NOT_SUPPORTED = 801
};

#define TOTAL_BYTES (256u << 20)
static const uintptr_t kContext = 0xc0;
static int g_depth, g_retains, g_streams, g_modules;
static size_t g_allocated;

/* For the test: the state it checks after each operation. */
void fake_cuda_state(int* depth, int* retains, size_t* allocated, int* streams, int* modules) {
  *depth = g_depth;
  *retains = g_retains;
  *allocated = g_allocated;
  *streams = g_streams;
  *modules = g_modules;
}

/* For the test: the device drops off the bus after it was listed (every call that needs a
 * context fails with CUDA_ERROR_DEVICE_UNAVAILABLE, as a lost GPU's do; popping a context
 * still works), or comes back. */
static int g_vanished;
void fake_cuda_vanish(int on) {
  g_vanished = on;
}

#define NEED_CONTEXT                          \
  if (g_depth == 0) return INVALID_CONTEXT; \
  if (g_vanished) return DEVICE_UNAVAILABLE

CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return OK;
}
CUresult cuInit(unsigned flags) {
  return flags == 0 ? OK : INVALID_VALUE;
}
CUresult cuGetErrorName(int code, const char** name) {
  (void)code;
  *name = NULL;
  return INVALID_VALUE;
}
CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return OK;
}
CUresult cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return 101;
  *d = 0;
  return OK;
}
CUresult cuDeviceGetName(char* name, int len, int dev) {
  (void)dev;
  strncpy(name, "gpix fake CUDA device", (size_t)len);
  return OK;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
  (void)dev;
  switch (attr) {
    case 1:
      *v = 1024;
      return OK; /* MAX_THREADS_PER_BLOCK */
    case 8:
      *v = 49152;
      return OK; /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 16:
      *v = 4;
      return OK; /* MULTIPROCESSOR_COUNT */
    case 75:
      *v = 9;
      return OK; /* COMPUTE_CAPABILITY_MAJOR */
    case 76:
      *v = 0;
      return OK; /* COMPUTE_CAPABILITY_MINOR */
    case 83:
      *v = 1;
      return OK; /* MANAGED_MEMORY */
    default:
      return INVALID_VALUE;
  }
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  (void)dev;
  *bytes = TOTAL_BYTES;
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  (void)dev;
  ++g_retains;
  *ctx = (void*)kContext;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  if (g_retains == 0) return INVALID_CONTEXT;
  --g_retains;
  return OK;
}
CUresult cuCtxPushCurrent_v2(void* ctx) {
  if ((uintptr_t)ctx != kContext || g_retains == 0) return INVALID_CONTEXT;
  ++g_depth;
  return OK;
}
CUresult cuCtxPopCurrent_v2(void** ctx) {
  if (g_depth == 0) return INVALID_CONTEXT;
  --g_depth;
  if (ctx) *ctx = (void*)kContext;
  return OK;
}
/* ---- Streams: each one is a FIFO of operations that run as soon as nothing before them
 * blocks (a wait on an event not yet reached, or on a host flag not yet written). Every API
 * call pumps all streams; a synchronisation that could only end by another thread's action
 * returns WOULD_BLOCK, since the test is single-threaded and a real driver would hang. */
#define WOULD_BLOCK 999
#define MAX_STREAMS 64
#define MAX_OPS 4096

typedef struct {
  unsigned recorded, reached; /* cuEventRecord count, and how many of them have run */
  int live;
} Event;

typedef struct {
  size_t width, height, depth; /* depth 0: 2D */
  unsigned element;
  unsigned char* data;
} Array;

enum {
  OP_COPY3D,
  OP_MEMSET,
  OP_FILL64,
  OP_HOSTFN,
  OP_WAIT_VALUE,
  OP_WAIT_EVENT,
  OP_RECORD,
  OP_STAGE
};
typedef struct {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  int srcMemoryType;
  const void* srcHost;
  uint64_t srcDevice;
  void* srcArray;
  void* reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  int dstMemoryType;
  void* dstHost;
  uint64_t dstDevice;
  void* dstArray;
  void* reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} Memcpy3D; /* CUDA_MEMCPY3D_v2's layout */

typedef struct {
  int type;
  Memcpy3D copy;
  unsigned char* ptr;
  uint64_t value, count;
  unsigned size;
  void (*fn)(void*);
  void* data;
  Event* event;
  unsigned target;
  uint64_t stage[8]; /* stage_in's arguments */
} Op;

typedef struct {
  int live;
  Op ops[MAX_OPS];
  size_t head, tail;
} Stream;

static Stream* g_stream_table[MAX_STREAMS];

static unsigned char* row_address(int type, const void* host, uint64_t dev, void* array, size_t x,
                                  size_t y, size_t z, size_t pitch, size_t height) {
  if (type == 3) {
    Array* a = (Array*)array;
    return a->data + ((z * a->height + y) * a->width) * a->element + x;
  }
  unsigned char* base = type == 1 ? (unsigned char*)host : (unsigned char*)(uintptr_t)dev;
  return base + z * pitch * height + y * pitch + x;
}

static void run_copy(const Memcpy3D* m) {
  for (size_t z = 0; z < m->Depth; ++z)
    for (size_t y = 0; y < m->Height; ++y)
      memmove(row_address(m->dstMemoryType, m->dstHost, m->dstDevice, m->dstArray, m->dstXInBytes,
                          m->dstY + y, m->dstZ + z, m->dstPitch, m->dstHeight),
              row_address(m->srcMemoryType, m->srcHost, m->srcDevice, m->srcArray, m->srcXInBytes,
                          m->srcY + y, m->srcZ + z, m->srcPitch, m->srcHeight),
              m->WidthInBytes);
}

static int g_stage_launches;

/* staging.kernel's stage_in(ring, dst, bytes, slice, flags, stop, gen, done) on `groups`
 * groups: waits, as they do, until every slice's flag holds gen (or stop does), then copies
 * and stores gen in each group's done word. */
static int run_stage(const uint64_t* a, unsigned groups) {
  const uint32_t gen = (uint32_t)a[6];
  const volatile uint32_t* flags = (const volatile uint32_t*)(uintptr_t)a[4];
  const int stopped = *(const volatile uint32_t*)(uintptr_t)a[5] == gen;
  const uint64_t slices = (a[2] + a[3] - 1) / a[3];
  if (!stopped) {
    for (uint64_t k = 0; k < slices; ++k)
      if (flags[k] != gen) return 0;
    memcpy((void*)(uintptr_t)a[1], (const void*)(uintptr_t)a[0], a[2]);
  }
  for (unsigned g = 0; g < groups; ++g) ((volatile uint32_t*)(uintptr_t)a[7])[g] = gen;
  return 1;
}

/* Runs op if nothing blocks it; returns whether it ran. */
static int try_run(Op* op) {
  switch (op->type) {
    case OP_WAIT_VALUE:
      return (int32_t)(*(volatile uint32_t*)op->ptr - (uint32_t)op->value) >= 0;
    case OP_WAIT_EVENT:
      return op->event->reached >= op->target;
    case OP_RECORD:
      op->event->reached = op->target;
      return 1;
    case OP_COPY3D:
      run_copy(&op->copy);
      return 1;
    case OP_MEMSET:
      for (uint64_t i = 0; i < op->count; ++i) memcpy(op->ptr + i * op->size, &op->value, op->size);
      return 1;
    case OP_FILL64:
      for (uint64_t i = 0; i < op->count; ++i) memcpy(op->ptr + i * 8, &op->value, 8);
      return 1;
    case OP_HOSTFN:
      op->fn(op->data);
      return 1;
    case OP_STAGE:
      return run_stage(op->stage, op->target);
  }
  return 1;
}

static void pump(void) {
  int progress = 1;
  while (progress) {
    progress = 0;
    for (int i = 0; i < MAX_STREAMS; ++i) {
      Stream* s = g_stream_table[i];
      while (s && s->head != s->tail && try_run(&s->ops[s->head % MAX_OPS])) {
        ++s->head;
        progress = 1;
      }
    }
  }
}

static int idle_all(void) {
  pump();
  for (int i = 0; i < MAX_STREAMS; ++i)
    if (g_stream_table[i] && g_stream_table[i]->head != g_stream_table[i]->tail) return 0;
  return 1;
}

static int idle(Stream* s) {
  pump();
  return s->head == s->tail;
}

static CUresult enqueue(void* stream, const Op* op) {
  Stream* s = (Stream*)stream;
  if (!s || !s->live) return 400; /* CUDA_ERROR_INVALID_HANDLE */
  if (s->tail - s->head >= MAX_OPS) return OUT_OF_MEMORY;
  s->ops[s->tail % MAX_OPS] = *op;
  ++s->tail;
  pump();
  return OK;
}

CUresult cuStreamCreate(void** out, unsigned flags) {
  NEED_CONTEXT;
  if (flags != 1) return INVALID_VALUE; /* gpix asks for CU_STREAM_NON_BLOCKING */
  for (int i = 0; i < MAX_STREAMS; ++i) {
    if (!g_stream_table[i]) {
      Stream* s = calloc(1, sizeof(Stream));
      if (!s) return OUT_OF_MEMORY;
      s->live = 1;
      g_stream_table[i] = s;
      ++g_streams;
      *out = s;
      return OK;
    }
  }
  return OUT_OF_MEMORY;
}
CUresult cuStreamDestroy_v2(void* stream) {
  NEED_CONTEXT;
  Stream* s = (Stream*)stream;
  if (!s || !s->live) return 400;
  pump();
  if (s->head != s->tail) return WOULD_BLOCK; /* gpix never drops a stream with work pending */
  for (int i = 0; i < MAX_STREAMS; ++i)
    if (g_stream_table[i] == s) g_stream_table[i] = NULL;
  free(s);
  --g_streams;
  return OK;
}
CUresult cuStreamSynchronize(void* stream) {
  NEED_CONTEXT;
  Stream* s = (Stream*)stream;
  if (!s || !s->live) return 400;
  return idle(s) ? OK : WOULD_BLOCK;
}
CUresult cuStreamQuery(void* stream) {
  NEED_CONTEXT;
  return idle((Stream*)stream) ? OK : 600; /* CUDA_ERROR_NOT_READY */
}
CUresult cuCtxSynchronize(void) {
  NEED_CONTEXT;
  return idle_all() ? OK : WOULD_BLOCK;
}

static int g_events;
CUresult cuEventCreate(void** e, unsigned flags) {
  NEED_CONTEXT;
  if (flags != 2) return INVALID_VALUE; /* gpix asks for CU_EVENT_DISABLE_TIMING */
  Event* ev = calloc(1, sizeof(Event));
  if (!ev) return OUT_OF_MEMORY;
  ev->live = 1;
  ++g_events;
  *e = ev;
  return OK;
}
CUresult cuEventDestroy_v2(void* e) {
  NEED_CONTEXT;
  Event* ev = (Event*)e;
  if (!ev || !ev->live) return 400;
  /* A real driver frees it once reached; recorded-but-pending events stay allocated here. */
  pump();
  if (ev->reached < ev->recorded) return OK;
  ev->live = 0;
  free(ev);
  --g_events;
  return OK;
}
CUresult cuEventRecord(void* e, void* stream) {
  NEED_CONTEXT;
  Event* ev = (Event*)e;
  if (!ev || !ev->live) return 400;
  Op op = {0};
  op.type = OP_RECORD;
  op.event = ev;
  op.target = ++ev->recorded;
  return enqueue(stream, &op);
}
CUresult cuEventQuery(void* e) {
  NEED_CONTEXT;
  Event* ev = (Event*)e;
  pump();
  return ev->reached >= ev->recorded ? OK : 600;
}
CUresult cuEventSynchronize(void* e) {
  NEED_CONTEXT;
  Event* ev = (Event*)e;
  pump();
  return ev->reached >= ev->recorded ? OK : WOULD_BLOCK;
}
CUresult cuStreamWaitEvent(void* stream, void* e, unsigned flags) {
  NEED_CONTEXT;
  if (flags) return INVALID_VALUE;
  Op op = {0};
  op.type = OP_WAIT_EVENT;
  op.event = (Event*)e;
  op.target = op.event->recorded;
  return enqueue(stream, &op);
}
CUresult cuStreamWaitValue32_v2(void* stream, uint64_t addr, uint32_t value, unsigned flags) {
  NEED_CONTEXT;
  if (flags != 0) return INVALID_VALUE; /* CU_STREAM_WAIT_VALUE_GEQ */
  Op op = {0};
  op.type = OP_WAIT_VALUE;
  op.ptr = (unsigned char*)(uintptr_t)addr;
  op.value = value;
  return enqueue(stream, &op);
}
CUresult cuLaunchHostFunc(void* stream, void (*fn)(void*), void* data) {
  NEED_CONTEXT;
  Op op = {0};
  op.type = OP_HOSTFN;
  op.fn = fn;
  op.data = data;
  return enqueue(stream, &op);
}

/* ---- Memory: device allocations and page-locked host blocks, each registered with its range
 * so that cuPointerGetAttribute can answer. Device memory carries its size in a 16-byte header. */
#define MAX_RANGES 4096
typedef struct {
  uintptr_t base;
  size_t size;
  int host;
  unsigned flags;
} Range;
static Range g_ranges[MAX_RANGES];
static size_t g_host_allocated;
static int g_arrays, g_textures;

static void add_range(uintptr_t base, size_t size, int host, unsigned flags) {
  for (int i = 0; i < MAX_RANGES; ++i) {
    if (!g_ranges[i].base) {
      g_ranges[i].base = base;
      g_ranges[i].size = size;
      g_ranges[i].host = host;
      g_ranges[i].flags = flags;
      return;
    }
  }
}
static Range* find_range(uintptr_t p) {
  for (int i = 0; i < MAX_RANGES; ++i)
    if (g_ranges[i].base && p >= g_ranges[i].base && p < g_ranges[i].base + g_ranges[i].size)
      return &g_ranges[i];
  return NULL;
}
static int pinned(const void* p) {
  Range* r = find_range((uintptr_t)p);
  return r && r->host;
}

CUresult cuMemAlloc_v2(uint64_t* p, size_t n) {
  NEED_CONTEXT;
  if (n == 0) return INVALID_VALUE;
  if (n > TOTAL_BYTES - g_allocated) return OUT_OF_MEMORY;
  unsigned char* m = malloc(n + 16);
  if (!m) return OUT_OF_MEMORY;
  memcpy(m, &n, sizeof n);
  memset(m + 16, 0xa5, n); /* poison: never zero by accident */
  g_allocated += n;
  *p = (uint64_t)(uintptr_t)(m + 16);
  add_range((uintptr_t)(m + 16), n, 0, 0);
  return OK;
}
CUresult cuMemAllocManaged(uint64_t* p, size_t n, unsigned flags) {
  if (flags != 1) return INVALID_VALUE; /* CU_MEM_ATTACH_GLOBAL */
  return cuMemAlloc_v2(p, n);
}
CUresult cuMemFree_v2(uint64_t p) {
  NEED_CONTEXT;
  if (!idle_all()) return WOULD_BLOCK; /* cuMemFree waits for the device */
  unsigned char* m = (unsigned char*)(uintptr_t)p - 16;
  size_t n;
  memcpy(&n, m, sizeof n);
  Range* r = find_range((uintptr_t)p);
  if (!r || r->host || r->base != (uintptr_t)p) return INVALID_VALUE;
  r->base = 0;
  g_allocated -= n;
  free(m);
  return OK;
}
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  NEED_CONTEXT;
  *free_bytes = TOTAL_BYTES - g_allocated;
  *total = TOTAL_BYTES;
  return OK;
}
CUresult cuMemHostAlloc(void** p, size_t n, unsigned flags) {
  NEED_CONTEXT;
  if (n == 0 || (flags & ~3u)) return INVALID_VALUE; /* PORTABLE | DEVICEMAP */
  size_t rounded = (n + 4095) / 4096 * 4096;
  void* m = aligned_alloc(4096, rounded);
  if (!m) return OUT_OF_MEMORY;
  memset(m, 0x5a, rounded);
  add_range((uintptr_t)m, rounded, 1, flags);
  g_host_allocated += rounded;
  *p = m;
  return OK;
}
CUresult cuMemFreeHost(void* p) {
  NEED_CONTEXT;
  Range* r = find_range((uintptr_t)p);
  if (!r || !r->host || r->base != (uintptr_t)p) return INVALID_VALUE;
  g_host_allocated -= r->size;
  r->base = 0;
  free(p);
  return OK;
}
CUresult cuMemHostGetDevicePointer_v2(uint64_t* d, void* p, unsigned flags) {
  NEED_CONTEXT;
  Range* r = find_range((uintptr_t)p);
  if (flags || !r || !r->host || !(r->flags & 2)) return INVALID_VALUE;
  *d = (uint64_t)(uintptr_t)p; /* unified addressing: the same address */
  return OK;
}
CUresult cuPointerGetAttribute(void* data, int attribute, uint64_t p) {
  NEED_CONTEXT;
  Range* r = find_range((uintptr_t)p);
  if (!r) return INVALID_VALUE; /* pageable memory is unknown to the driver */
  switch (attribute) {
    case 1: /* CONTEXT */
      *(void**)data = (void*)kContext;
      return OK;
    case 2: /* MEMORY_TYPE */
      *(unsigned*)data = r->host ? 1u : 2u;
      return OK;
    case 9: /* DEVICE_ORDINAL */
      *(int*)data = 0;
      return OK;
    case 11: /* RANGE_START_ADDR */
      *(uint64_t*)data = r->base;
      return OK;
    case 12: /* RANGE_SIZE */
      *(size_t*)data = r->size;
      return OK;
    default:
      return INVALID_VALUE;
  }
}

/* The driver copies pageable host memory only after the stream drains: with a stream blocked
 * for good that would hang, which the fake reports. */
static CUresult host_copy(void* stream, const Memcpy3D* m) {
  const int host = m->srcMemoryType == 1 ? 1 : m->dstMemoryType == 1 ? 2 : 0;
  const void* hp = host == 1 ? m->srcHost : m->dstHost;
  if (host && !pinned(hp)) {
    if (!idle((Stream*)stream)) return WOULD_BLOCK;
  }
  Op op = {0};
  op.type = OP_COPY3D;
  op.copy = *m;
  return enqueue(stream, &op);
}
static Memcpy3D linear(int st, const void* sh, uint64_t sd, int dt, void* dh, uint64_t dd,
                       size_t n) {
  Memcpy3D m = {0};
  m.srcMemoryType = st;
  m.srcHost = sh;
  m.srcDevice = sd;
  m.dstMemoryType = dt;
  m.dstHost = dh;
  m.dstDevice = dd;
  m.WidthInBytes = n;
  m.Height = m.Depth = 1;
  m.srcPitch = m.dstPitch = n;
  return m;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t n, void* s) {
  NEED_CONTEXT;
  Memcpy3D m = linear(1, src, 0, 2, NULL, dst, n);
  return host_copy(s, &m);
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t n, void* s) {
  NEED_CONTEXT;
  Memcpy3D m = linear(2, NULL, src, 1, dst, 0, n);
  return host_copy(s, &m);
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void* s) {
  NEED_CONTEXT;
  Memcpy3D m = linear(2, NULL, src, 2, NULL, dst, n);
  return host_copy(s, &m);
}
CUresult cuMemcpyPeerAsync(uint64_t dst, void* dctx, uint64_t src, void* sctx, size_t n, void* s) {
  NEED_CONTEXT;
  if ((uintptr_t)dctx != kContext || (uintptr_t)sctx != kContext) return INVALID_CONTEXT;
  return cuMemcpyDtoDAsync_v2(dst, src, n, s);
}
CUresult cuMemcpy3DAsync_v2(const Memcpy3D* m, void* s) {
  NEED_CONTEXT;
  if (!m->WidthInBytes || !m->Height || !m->Depth) return INVALID_VALUE;
  if (m->srcMemoryType < 1 || m->srcMemoryType > 3 || m->dstMemoryType < 1 || m->dstMemoryType > 3)
    return INVALID_VALUE;
  /* The driver's own checks: pitches at least a row, slices at least Height rows, arrays big
   * enough. */
  if ((m->srcMemoryType != 3 && m->srcPitch < m->WidthInBytes) ||
      (m->dstMemoryType != 3 && m->dstPitch < m->WidthInBytes))
    return INVALID_VALUE;
  if (m->Depth > 1 && ((m->srcMemoryType != 3 && m->srcHeight < m->Height) ||
                       (m->dstMemoryType != 3 && m->dstHeight < m->Height)))
    return INVALID_VALUE;
  for (int side = 0; side < 2; ++side) {
    const Array* a = (const Array*)(side ? m->dstArray : m->srcArray);
    if ((side ? m->dstMemoryType : m->srcMemoryType) != 3) continue;
    const size_t x = side ? m->dstXInBytes : m->srcXInBytes, y = side ? m->dstY : m->srcY,
                 z = side ? m->dstZ : m->srcZ;
    const size_t depth = a->depth ? a->depth : 1;
    if (x % a->element || x + m->WidthInBytes > a->width * a->element ||
        y + m->Height > a->height || z + m->Depth > depth)
      return INVALID_VALUE;
  }
  return host_copy(s, m);
}
static CUresult memset_op(uint64_t dst, uint64_t v, size_t n, unsigned size, void* s) {
  if (dst % size) return INVALID_VALUE;
  Op op = {0};
  op.type = OP_MEMSET;
  op.ptr = (unsigned char*)(uintptr_t)dst;
  op.value = v;
  op.count = n;
  op.size = size;
  return enqueue(s, &op);
}
CUresult cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void* s) {
  NEED_CONTEXT;
  return memset_op(dst, v, n, 1, s);
}
CUresult cuMemsetD16Async(uint64_t dst, unsigned short v, size_t n, void* s) {
  NEED_CONTEXT;
  return memset_op(dst, v, n, 2, s);
}
CUresult cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void* s) {
  NEED_CONTEXT;
  return memset_op(dst, v, n, 4, s);
}

/* ---- Arrays and texture objects (descriptors only: no kernel reads them here). */
typedef struct {
  size_t Width, Height, Depth;
  int Format;
  unsigned NumChannels, Flags;
} Array3DDesc;
CUresult cuArray3DCreate_v2(void** out, const Array3DDesc* d) {
  NEED_CONTEXT;
  unsigned es;
  switch (d->Format) {
    case 0x01:
    case 0x08:
      es = 1;
      break;
    case 0x02:
    case 0x09:
      es = 2;
      break;
    case 0x03:
    case 0x0a:
    case 0x20:
      es = 4;
      break;
    default:
      return INVALID_VALUE;
  }
  if (d->NumChannels != 1 || d->Flags || !d->Width || !d->Height) return INVALID_VALUE;
  const size_t bytes = d->Width * d->Height * (d->Depth ? d->Depth : 1) * es;
  if (bytes > TOTAL_BYTES - g_allocated) return OUT_OF_MEMORY;
  Array* a = calloc(1, sizeof(Array));
  if (!a) return OUT_OF_MEMORY;
  a->width = d->Width;
  a->height = d->Height;
  a->depth = d->Depth;
  a->element = es;
  a->data = malloc(bytes);
  memset(a->data, 0xa5, bytes);
  g_allocated += bytes;
  ++g_arrays;
  *out = a;
  return OK;
}
CUresult cuArrayDestroy(void* p) {
  NEED_CONTEXT;
  Array* a = (Array*)p;
  g_allocated -= a->width * a->height * (a->depth ? a->depth : 1) * a->element;
  free(a->data);
  free(a);
  --g_arrays;
  return OK;
}
/* The last texture object's array, filter mode, flags and address mode, for the test. */
static void* g_tex_array;
static int g_tex_filter, g_tex_address;
static unsigned g_tex_flags;
void fake_cuda_last_texture(void** array, int* filter, unsigned* flags, int* address) {
  *array = g_tex_array;
  *filter = g_tex_filter;
  *flags = g_tex_flags;
  *address = g_tex_address;
}
CUresult cuTexObjectCreate(uint64_t* tex, const int* res, const int* desc, const void* view) {
  NEED_CONTEXT;
  if (view || res[0] != 0) return INVALID_VALUE; /* CU_RESOURCE_TYPE_ARRAY */
  memcpy(&g_tex_array, (const char*)res + 8, sizeof(void*));
  g_tex_address = desc[0];
  g_tex_filter = desc[3];
  g_tex_flags = (unsigned)desc[4];
  ++g_textures;
  *tex = 0x7e000000u + (uint64_t)g_textures;
  return OK;
}
CUresult cuTexObjectDestroy(uint64_t tex) {
  NEED_CONTEXT;
  (void)tex;
  --g_textures;
  return OK;
}

/* ---- Peers: one device, so never a peer. */
CUresult cuDeviceCanAccessPeer(int* can, int dev, int peer) {
  (void)dev;
  (void)peer;
  *can = 0;
  return OK;
}
CUresult cuCtxEnablePeerAccess(void* ctx, unsigned flags) {
  (void)ctx;
  (void)flags;
  return NOT_SUPPORTED;
}

/* For the test: pinned host memory, arrays, texture objects and events alive. */
int fake_cuda_stage_launches(void) {
  return g_stage_launches;
}
void fake_cuda_state2(size_t* host_allocated, int* arrays, int* textures, int* events) {
  *host_allocated = g_host_allocated;
  *arrays = g_arrays;
  *textures = g_textures;
  *events = g_events;
}

/* Modules: any image is accepted; two kernel names are known. */
static const char* const kKernels[] = {"fill_u64", "stats_partial", "resample", "stage_in"};
CUresult cuModuleLoadData(void** m, const void* image) {
  NEED_CONTEXT;
  if (!image) return INVALID_VALUE;
  ++g_modules;
  *m = (void*)0x3;
  return OK;
}
CUresult cuModuleUnload(void* m) {
  NEED_CONTEXT;
  (void)m;
  --g_modules;
  return OK;
}
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  NEED_CONTEXT;
  (void)m;
  for (size_t i = 0; i < sizeof kKernels / sizeof kKernels[0]; ++i) {
    if (strcmp(name, kKernels[i]) == 0) {
      *f = (void*)&kKernels[i];
      return OK;
    }
  }
  return NOT_FOUND;
}
CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
  (void)f;
  if (attr != 0) return INVALID_VALUE;
  *v = 1024;
  return OK;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void* s, void** params, void** extra) {
  NEED_CONTEXT;
  if (!gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024 || shared || extra)
    return INVALID_VALUE;
  if (f == (void*)&kKernels[3]) {
    Op op = {0};
    op.type = OP_STAGE;
    op.target = gx;
    for (int i = 0; i < 8; ++i) {
      op.stage[i] = 0;
      memcpy(&op.stage[i], params[i], i == 6 ? 4 : 8); /* gen is 32-bit */
    }
    if (op.stage[0] % 16 || op.stage[1] % 16 || op.stage[3] % 16 || !op.stage[3])
      return INVALID_VALUE;
    ++g_stage_launches;
    return enqueue(s, &op);
  }
  if (f != (void*)&kKernels[0]) return NOT_SUPPORTED;
  /* fill_u64(gpix_u64* out, gpix_index n, gpix_u64 value) */
  uint64_t out, n, value;
  memcpy(&out, params[0], 8);
  memcpy(&n, params[1], 8);
  memcpy(&value, params[2], 8);
  if (out % 8) return 716; /* CUDA_ERROR_MISALIGNED_ADDRESS */
  Op op = {0};
  op.type = OP_FILL64;
  op.ptr = (unsigned char*)(uintptr_t)out;
  op.count = n;
  op.value = value;
  return enqueue(s, &op);
}
