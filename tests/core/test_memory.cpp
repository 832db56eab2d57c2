// Memory management on every device present: queues and events, pinned and staged
// transfers, mapping, regions, padding, reshape views, the pool and out-of-memory recovery,
// image objects with samplers, cross-device copies and shared virtual memory.
#include <QScopeGuard>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "gpix/gpix.h"
#include "memory_pool.h"
#include "support/devices.h"
#include "support/random.h"
#include "support/shared_buffer.h"

using namespace gpix;

namespace {

template <class T>
HostArray host_random(const Shape& s) {
  const auto v = test::random_bits<T>(s.elements());
  return HostArray::from(v, s);
}

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// Random origin and extent (z, y, x) inside shape, biased to touch the edges.
void random_box(const Shape& s, std::vector<std::size_t>& o, std::vector<std::size_t>& e) {
  o.clear();
  e.clear();
  auto& r = test::rng();
  for (std::size_t dim : s.dims()) {
    std::size_t org = r() % dim;
    if (r() % 4 == 0) org = 0;
    if (r() % 4 == 0) org = dim - 1;
    std::size_t ext = 1 + r() % (dim - org);
    if (r() % 3 == 0) ext = dim - org;  // reach the far edge
    o.push_back(org);
    e.push_back(ext);
  }
}

// Element index of (z, y, x) in a dense array of shape s (missing axes = 0).
std::size_t index3(const Shape& s, std::size_t z, std::size_t y, std::size_t x) {
  return (z * s.height() + y) * s.width() + x;
}

// Pads a box to 3 axes (z, y, x).
std::array<std::size_t, 3> three(const std::vector<std::size_t>& v, std::size_t fill) {
  std::array<std::size_t, 3> out{fill, fill, fill};
  for (std::size_t i = 0; i < v.size(); ++i) out[3 - v.size() + i] = v[i];
  return out;
}

// CPU reference of copy_region on dense host copies (bytes of element size es).
void ref_copy(const HostArray& src, const std::vector<std::size_t>& so, HostArray& dst,
              const std::vector<std::size_t>& dorg, const std::vector<std::size_t>& ext) {
  const std::size_t es = size_of(src.dtype());
  const auto s3 = three(so, 0), d3 = three(dorg, 0), e3 = three(ext, 1);
  for (std::size_t z = 0; z < e3[0]; ++z)
    for (std::size_t y = 0; y < e3[1]; ++y)
      for (std::size_t x = 0; x < e3[2]; ++x)
        std::memcpy(dst.data() + es * index3(dst.shape(), d3[0] + z, d3[1] + y, d3[2] + x),
                    src.data() + es * index3(src.shape(), s3[0] + z, s3[1] + y, s3[2] + x), es);
}

Shape padded_of(const Shape& s) {
  std::vector<std::size_t> p(s.dims().begin(), s.dims().end());
  auto& r = test::rng();
  for (auto& d : p) d += r() % 5;
  p.back() += 3;  // always some row padding
  return Shape(std::span<const std::size_t>(p.data(), p.size()));
}

// Arrays of several layouts holding the same host pixels.
enum class Layout { contiguous, padded, image };
Array make(const HostArray& h, Layout l, const Device& d) {
  Array a;
  if (l == Layout::contiguous) a = Array::empty(h.shape(), h.dtype(), d);
  if (l == Layout::padded) a = Array::padded(h.shape(), padded_of(h.shape()), h.dtype(), d);
  if (l == Layout::image) a = Array::empty_image(h.shape(), h.dtype(), d);
  a.fill(0);  // poison the padding too, with something not in h (mostly)
  a.write(h);
  return a;
}

bool can_image(const Device& d, DType t) {
  try {
    Array::empty_image(Shape{2, 2}, t, d);
    Array::empty_image(Shape{2, 2, 2}, t, d);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

class TestMemory : public QObject {
  Q_OBJECT
  static void small_chunks() {
    detail::config_for_testing().staging.max_piece = std::size_t{1} << 20;
    detail::config_for_testing().staging.min_bytes = std::size_t{1} << 20;
  }

 private slots:
  void initTestCase() {
    // Small staging chunks so that the pipeline runs through many chunks on small arrays.
    small_chunks();
    qInfo("%zu device(s)", test::test_devices().size());
  }

  void devices_data() { test::add_device_rows(); }

  // ---------------------------------------------------------------- queues and events
  void async_chain_data() { devices_data(); }
  void async_chain() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    const Shape s{37, 41};
    HostArray in = host_random<std::uint16_t>(s);
    Queue q1 = Queue::create(dev), q2 = Queue::create(dev);
    Array a = Array::empty(s, DType::u16, dev), b = Array::empty(s, DType::u16, dev);
    Array c = Array::padded(s, Shape{40, 64}, DType::u16, dev);
    // push (q1) -> fill b (q2, after push) -> copy a into padded c (q2) -> copy c into b
    // (q1, after q2's copy) -> pull (q2, after that). Each step on another queue, so only
    // the events order them.
    Event e1 = push_async(in, a, q1);
    Event e2 = fill_async(b, 7, q2, {e1});
    Event e3 = copy_async(a, c, q2, {e2});
    Event e4 = copy_async(c, b, q1, {e3});
    HostArray out = HostArray::pinned(s, DType::u16, dev);
    std::memset(out.data(), 0xEE, out.bytes());
    Event e5 = pull_async(b, out, q2, {e4});
    e5.wait();
    QVERIFY(e5.done() && e1.done());
    QVERIFY(same_bytes(out, in));
    q1.finish();
    q2.finish();
    Queue::default_for(dev).finish();
    // A marker after everything.
    Event m = q1.marker({e5});
    m.wait();
    QVERIFY(m.done());
    // The queue of another device, or the wrong sizes, are typed errors.
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, push_async(in.data(), in.bytes() - 1, a, q1));
    HostArray wrong(Shape{3}, DType::u16);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, pull_async(a, wrong, q1));
    // Two overlapping views of one array: the destination gets the source as it was (OpenCL
    // refused the copy with CL_MEM_COPY_OVERLAP, CUDA left it undefined).
    Array whole = Array::push(in, dev);
    Array top = whole.view(Region{{0, 0}, {20, 41}});
    Array lower = whole.view(Region{{10, 0}, {20, 41}});
    copy_async(top, lower, q1).wait();
    const HostArray moved = whole.pull();
    const auto* want = reinterpret_cast<const std::uint16_t*>(in.data());
    const auto* got = reinterpret_cast<const std::uint16_t*>(moved.data());
    for (std::size_t y = 0; y < s[0]; ++y) {
      for (std::size_t x = 0; x < s[1]; ++x) {
        const std::size_t from = y >= 10 && y < 30 ? (y - 10) * s[1] + x : y * s[1] + x;
        QCOMPARE(got[y * s[1] + x], want[from]);
      }
    }
  }

  // A pull that forgets to wait for the push reads stale data, deterministically: the push
  // is held back on q1 by a user event, the pull runs on q2. The same pull with the wait
  // reads the new data. This shows the ordering test above can fail.
  void missing_wait_is_caught_data() { devices_data(); }
  void missing_wait_is_caught() {
    const Device dev = test::fetch_device();
    const Shape s{5, 17, 9};
    HostArray in = host_random<std::int32_t>(s);
    Array a = Array::empty(s, DType::i32, dev);
    a.fill(-123456);  // poison
    Queue q1 = Queue::create(dev), q2 = Queue::create(dev);
    Event gate = Event::user(dev);
    Event pushed = push_async(in, a, q1, {gate});
    QVERIFY(!pushed.done());

    HostArray wrong = HostArray::empty(s, DType::i32);
    pull_async(a, wrong, q2).wait();  // the missing wait
    for (std::int32_t v : wrong.as<std::int32_t>()) QCOMPARE(v, -123456);

    HostArray right = HostArray::empty(s, DType::i32);
    Event pulled = pull_async(a, right, q2, {pushed});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    QVERIFY(!pulled.done());  // held back by the gate through the push
    gate.complete();
    pulled.wait();
    QVERIFY(same_bytes(right, in));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, pushed.complete());
  }

  // HostArrays handed to async transfers stay alive after the caller drops them.
  void async_keeps_host_alive_data() { devices_data(); }
  void async_keeps_host_alive() {
    const Device dev = test::fetch_device();
    const Shape s{3, 333, 77};
    Array a = Array::empty(s, DType::f32, dev);
    std::vector<float> expect;
    {
      Event gate = Event::user(dev);
      Queue q = Queue::create(dev);
      {
        HostArray h = HostArray::pinned(s, DType::f32, dev);
        const auto v = test::random_bits<float>(s.elements());
        std::memcpy(h.data(), v.data(), h.bytes());
        expect = v;
        push_async(h, a, q, {gate});  // event and HostArray dropped at once
      }
      gate.complete();
      q.finish();
    }
    const auto back = a.pull_as<float>();
    QVERIFY(std::memcmp(back.data(), expect.data(), back.size() * 4) == 0);
  }

  // Once an async transfer has been waited for, the arrays it kept alive go back to the pool
  // when the caller drops them, not at the device's next asynchronous call: label_statistics
  // waits for its five pulled columns, and on a 16M-row table their 384 MB stayed in use after
  // it returned until another transfer came (where a memory limit is set, later allocations
  // met it).
  void waited_transfers_release_arrays_data() { devices_data(); }
  void waited_transfers_release_arrays() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    dev.finish();  // anything earlier tests left retained
    const std::uint64_t before = memory_stats(dev).bytes_in_use;
    const Shape s{211, 173};
    {
      Array a = Array::create(s, DType::f32, dev);
      std::vector<float> out(s.elements());
      pull_async(a, out.data(), a.bytes()).wait();
    }
    QCOMPARE(memory_stats(dev).bytes_in_use, before);
    {
      Array b = Array::empty(s, DType::f32, dev);
      HostArray h = HostArray::empty(s, DType::f32);
      std::memset(h.data(), 0, h.bytes());
      Queue q = Queue::create(dev);
      Event pushed = push_async(h, b, q);
      pull_async(b, h, q, {pushed}).wait();
    }
    QCOMPARE(memory_stats(dev).bytes_in_use, before);
  }

  // A pool block handed to a new owner may still have its earlier owner's kernels queued on
  // the default queue; async work on another queue into the new array waits for them. The
  // default queue is held by a gated fill; a filter whose output is dropped at once leaves its
  // write queued behind it, and the next array of that size gets the block. A push, a fill or
  // a copy into it on a queue of the user's must then not overtake that write (before the fix
  // the write landed on top of the pushed pixels: test_core_stress_two_devices saw it).
  void handed_on_blocks_wait_for_earlier_owners_data() { devices_data(); }
  void handed_on_blocks_wait_for_earlier_owners() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    const Shape s{1000003};  // a size class no other array here has
    const HostArray in = host_random<std::uint8_t>(s);
    const Array src = Array::push(in, dev);
    // Two halves of the array, pushed as views of it on two queues: both wait (the first call
    // on one of them records the wait for the other too).
    const std::size_t half = s[0] / 2;
    HostArray low = HostArray::empty(Shape{half}, DType::u8);
    HostArray high = HostArray::empty(Shape{s[0] - half}, DType::u8);
    std::memcpy(low.data(), in.data(), half);
    std::memcpy(high.data(), in.data() + half, s[0] - half);
    for (const char* op : {"push_async", "fill_async", "copy_async", "views on two queues"}) {
      (void)run("add_scalar", src, {{"value", 1.0}});  // compiled before the gate
      dev.finish();
      trim(dev);
      Array blocker = Array::empty(Shape{64}, DType::u8, dev);
      Event gate = Event::user(dev);
      // A failed check returns early: the default queue is opened again all the same (an
      // OpenCL user event dropped incomplete would hold it, and the tests after, for ever).
      const auto open = qScopeGuard([&] {
        if (!gate.done()) gate.complete();
      });
      Event held = fill_async(blocker, std::uint8_t{0}, Queue{}, {gate});
      const detail::Memory* earlier = nullptr;
      {
        const Array dropped = run("add_scalar", src, {{"value", 1.0}}).array;  // queued, held
        earlier = detail::Access::impl(dropped).memory.get();
      }
      Array fresh = Array::empty(s, DType::u8, dev);
      QVERIFY2(detail::Access::impl(fresh).memory.get() == earlier,
               "the pool did not hand the dropped output's block on (the test needs it)");
      const Queue q = Queue::create(dev);
      Event done, other;
      HostArray want = in;
      if (std::string(op) == "push_async") {
        done = push_async(in, fresh, q);
      } else if (std::string(op) == "fill_async") {
        done = fill_async(fresh, std::uint8_t{0x5A}, q);
        want = HostArray::empty(s, DType::u8);
        std::memset(want.data(), 0x5A, want.bytes());
      } else if (std::string(op) == "copy_async") {
        done = copy_async(src, fresh, q);
      } else {
        Array first = fresh.view(Region{{0}, {half}});
        Array second = fresh.view(Region{{half}, {s[0] - half}});
        done = push_async(low, first, q);
        other = push_async(high, second, Queue::create(dev));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      QVERIFY2(!done.done() && (!other.valid() || !other.done()),
               (QByteArray(op) + " into a handed-on block ran ahead of the earlier owner's "
                                 "queued filter")
                   .constData());
      gate.complete();
      done.wait();
      other.wait();
      held.wait();
      dev.finish();
      QVERIFY2(
          same_bytes(fresh.pull(), want),
          (QByteArray(op) + ": the earlier owner's filter overwrote the new pixels").constData());
    }
    // A block the pool has not handed on since its owner used it off the default queue is not
    // held back: only the first use of a handed-on block waits.
    Array own = Array::empty(s, DType::u8, dev);
    const Queue q = Queue::create(dev);
    push_async(in, own, q).wait();
    Event gate = Event::user(dev);
    Array blocker = Array::empty(Shape{64}, DType::u8, dev);
    Event held = fill_async(blocker, std::uint8_t{0}, Queue{}, {gate});
    Event again = push_async(in, own, q);
    for (int i = 0; i < 500 && !again.done(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const bool ran = again.done();
    gate.complete();
    held.wait();
    QVERIFY2(ran, "a second push on the user's queue waited for the default queue");
  }

  // ---------------------------------------------------------------- pinned and staged
  void pinned_and_staged_data() { devices_data(); }
  void pinned_and_staged() {
    const Device dev = test::fetch_device();
    // ~5.3 MB: several 1 MB chunks and a ragged last one.
    const Shape s{3, 701, 631};
    for (int staged = 0; staged < 2; ++staged) {
      detail::ScopedConfig scoped_config;
      detail::config_for_testing().staging.off = !staged;
      HostArray in = host_random<std::uint32_t>(s);
      Array a = Array::empty(s, DType::u32, dev);
      a.write(in);  // pageable: staged (or plain)
      HostArray out = HostArray::empty(s, DType::u32);
      std::memset(out.data(), 0, out.bytes());
      a.read(out);
      QVERIFY(same_bytes(out, in));
      // pinned both ways
      HostArray p = empty_like(a);
      QVERIFY(p.is_pinned());
      QVERIFY(p.pinned_device() == dev);
      std::memset(p.data(), 0, p.bytes());
      a.read(p);
      QVERIFY(same_bytes(p, in));
      HostArray p2 = HostArray::pinned(s, DType::u32, dev);
      std::memcpy(p2.data(), host_random<std::uint32_t>(s).data(), p2.bytes());
      Array b = Array::push(p2, dev);
      QVERIFY(same_bytes(b.pull(), p2));
      QVERIFY(p2.clone().is_pinned());
    }
  }

  // Staged transfers at sizes around every threshold and piece boundary, with several
  // splits (threads, pieces in flight, piece size, a ring too small for all slots), byte for
  // byte against random data; padded arrays and regions of the same sizes alongside (they
  // take the pitched path, which must agree).
  void staged_sizes_data() { devices_data(); }
  void staged_sizes() {
    const Device dev = test::fetch_device();
    struct Split {
      const char *threads, *depth, *chunk_mb, *min_mb, *nt, *pieces, *kernel_mb, *slice_mb;
    };
    // Defaults (0.5 MB threshold, a thread per 64 kB, non-temporal copies by direction, pushes
    // up to 16 MB through the staging kernel where the backend has one); one thread and one
    // slot, memcpy, every push through DMA pieces; three threads on 0.3 MB pieces (not a
    // multiple of the slice alignment) in three slots, kernel slices of ~50 kB; sixteen
    // threads, eight slots of 1 MB, kernel slices of 12 kB (over 1024 from 12 MB on: those
    // pushes take DMA pieces); eight threads on 256 kB pieces through two slots (every slot
    // reused many times, slices of 32 kB), every push of up to 40 MB through the kernel.
    const Split splits[] = {
        {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
        {"1", "1", "0.25", "0.5", "0", nullptr, "0", nullptr},
        {"3", "3", "0.3", "1", nullptr, "1", nullptr, "0.05"},
        {"16", "8", "1", "1", nullptr, "2", nullptr, "0.0117"},
        {"8", "2", "0.25", "0.5", nullptr, "64", "40", nullptr}};
    constexpr std::size_t MB = std::size_t{1} << 20;
    const std::size_t sizes[] = {
        2 * MB - 1,  2 * MB,  2 * MB + 1,  (MB / 4) * 9 + 3, 5 * MB + 12345, 8 * MB - 64 * 1024 + 1,
        16 * MB - 1, 16 * MB, 16 * MB + 1, 33 * MB + 777};
    const char* const knobs[] = {"GPIX_STAGING_THREADS",   "GPIX_STAGING_DEPTH",
                                 "GPIX_STAGING_CHUNK_MB",  "GPIX_STAGING_MIN_MB",
                                 "GPIX_STAGING_NT",        "GPIX_STAGING_PIECES",
                                 "GPIX_STAGING_KERNEL_MB", "GPIX_STAGING_SLICE_MB"};
    for (const Split& sp : splits) {
      const char* values[] = {sp.threads, sp.depth,  sp.chunk_mb,  sp.min_mb,
                              sp.nt,      sp.pieces, sp.kernel_mb, sp.slice_mb};
      // The knobs as the environment spells them, parsed as the environment would be.
      detail::ScopedConfig scoped_config(detail::Config::from([&](const char* name) -> const char* {
        for (int k = 0; k < 8; ++k) {
          if (std::strcmp(name, knobs[k]) == 0) return values[k];
        }
        return std::getenv(name);
      }));
      for (std::size_t n : sizes) {
        const Shape s{n};
        HostArray in = host_random<std::uint8_t>(s);
        Array a = Array::empty(s, DType::u8, dev);
        a.fill(std::uint8_t{0xA5});  // poison: a piece never written shows
        a.write(in.data(), in.bytes());
        std::vector<std::uint8_t> out(n + 1, 0x5A);  // one guard byte past the end
        a.read(out.data(), n);
        QVERIFY2(std::memcmp(out.data(), in.data(), n) == 0,
                 (std::to_string(n) + " bytes, threads " + (sp.threads ? sp.threads : "default"))
                     .c_str());
        QCOMPARE(out[n], std::uint8_t{0x5A});
        // Host pointers off any alignment (the copies align their stores themselves).
        std::vector<std::uint8_t> odd(n + 8, 0x5A);
        std::memcpy(odd.data() + 3, in.data(), n);
        a.fill(std::uint8_t{0xA5});
        a.write(odd.data() + 3, n);
        std::fill(odd.begin(), odd.end(), std::uint8_t{0x5A});
        a.read(odd.data() + 5, n);
        QVERIFY(std::memcmp(odd.data() + 5, in.data(), n) == 0);
        QCOMPARE(odd[4], std::uint8_t{0x5A});
        QCOMPARE(odd[n + 5], std::uint8_t{0x5A});
        // The same bytes as a padded 2D array and through a region at an odd origin.
        const std::size_t w = 1021, h = n / w;
        const Shape s2{h, w};
        Array p = Array::padded(s2, Shape{h + 1, w + 3}, DType::u8, dev);
        p.fill(std::uint8_t{0xA5});
        p.write(in.data(), h * w);
        HostArray back = p.pull();
        QVERIFY(std::memcmp(back.data(), in.data(), h * w) == 0);
        HostArray reg = a.read_region({{n / 3}, {n - n / 3 - 1}});
        QVERIFY(std::memcmp(reg.data(), in.data() + n / 3, n - n / 3 - 1) == 0);
      }
    }
  }

  // A push and a pull of two threads at once (each direction has its staging ring, its copy
  // threads and a queue of its own): every byte arrives, a push still lands after work queued
  // before it on the default queue (a fill of the same array), and a pull still reads after
  // it. Pageable transfers and pinned ones of 16 MB and more (which take those queues too).
  void push_and_pull_at_once_data() { devices_data(); }
  void push_and_pull_at_once() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    constexpr std::size_t MB = std::size_t{1} << 20;
    for (std::size_t n : {3 * MB + 5, 17 * MB + 3}) {
      const Shape s{n};
      const HostArray in = host_random<std::uint8_t>(s);
      HostArray pinned = HostArray::pinned(s, DType::u8, dev);
      std::memcpy(pinned.data(), in.data(), n);
      Array up = Array::empty(s, DType::u8, dev);
      Array down = Array::empty(s, DType::u8, dev);
      down.write(in.data(), n);
      std::atomic<int> bad{0};
      std::thread pusher([&] {
        std::vector<std::uint8_t> back(n);
        for (int i = 0; i < 6; ++i) {
          up.fill(std::uint8_t{0xA5});  // queued first: the push lands after it
          if (i % 2) {
            up.write(pinned);
          } else {
            up.write(in.data(), n);
          }
          up.read(back.data(), n);
          if (std::memcmp(back.data(), in.data(), n) != 0) ++bad;
        }
      });
      std::vector<std::uint8_t> out(n);
      for (int i = 0; i < 6; ++i) {
        std::fill(out.begin(), out.end(), std::uint8_t{0x5A});
        down.read(out.data(), n);
        if (std::memcmp(out.data(), in.data(), n) != 0) ++bad;
      }
      pusher.join();
      QVERIFY2(bad.load() == 0, (std::to_string(n) + " bytes").c_str());
      // The push waits for work queued before it on the default queue, here a fill held back
      // by a user event: it must not land before the fill (which would then overwrite it).
      for (const bool use_pinned : {false, true}) {
        Array late = Array::empty(s, DType::u8, dev);
        Event gate = Event::user(dev);
        Event filled = fill_async(late, std::uint8_t{0xA5}, Queue{}, {gate});
        std::atomic<bool> pushed{false};
        std::thread t([&] {
          if (use_pinned) {
            late.write(pinned);
          } else {
            late.write(in.data(), n);
          }
          pushed = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const bool early = pushed.load();
        gate.complete();
        t.join();
        filled.wait();
        QVERIFY2(!early, "the push returned before the fill queued ahead of it ran");
        const HostArray back = late.pull();
        QVERIFY(std::memcmp(back.data(), in.data(), n) == 0);
      }
      // A pull waits likewise for the work that makes its bytes (here a fill held back by a
      // user event), into pageable and pinned memory (pulls of staged memory, and pinned ones
      // of 16 MB and more, run on the pull queue, apart from the default queue).
      for (const bool use_pinned : {false, true}) {
        Array src = Array::empty(s, DType::u8, dev);
        src.write(in.data(), n);
        HostArray into =
            use_pinned ? HostArray::pinned(s, DType::u8, dev) : HostArray(s, DType::u8);
        std::memset(into.data(), 0x5A, n);
        Event gate = Event::user(dev);
        Event filled = fill_async(src, std::uint8_t{0xA5}, Queue{}, {gate});
        std::atomic<bool> pulled{false};
        std::thread t([&] {
          src.read(into);
          pulled = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const bool early = pulled.load();
        gate.complete();
        t.join();
        filled.wait();
        QVERIFY2(!early, "the pull returned before the fill queued ahead of it ran");
        const auto* b = reinterpret_cast<const std::uint8_t*>(into.data());
        QVERIFY2(std::all_of(b, b + n, [](std::uint8_t v) { return v == 0xA5; }),
                 (std::to_string(n) + " bytes, pinned " + std::to_string(use_pinned)).c_str());
      }
    }
  }

  // detail::write_all_after (tiled runs push slab k + 1 so while slab k's filter runs): the
  // push waits for the event it is given, and not for work queued after that event (here a
  // fill of another array held back by a user event, which would hold it forever). Pageable
  // (staged) and pinned pushes of 16 MB and more; the bytes arrive whole.
  void push_after_event_data() { devices_data(); }
  void push_after_event() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    auto& impl = detail::Access::impl(dev);
    constexpr std::size_t MB = std::size_t{1} << 20;
    for (std::size_t n : {3 * MB + 5, 17 * MB + 3}) {
      const Shape s{n};
      const HostArray in = host_random<std::uint8_t>(s);
      HostArray pinned = HostArray::pinned(s, DType::u8, dev);
      std::memcpy(pinned.data(), in.data(), n);
      for (const bool use_pinned : {false, true}) {
        const QByteArray at =
            QByteArray::number(qulonglong(n)) + " bytes, pinned " + QByteArray::number(use_pinned);
        // Held back before the event: the push waits for the fill, which it must follow.
        {
          Array dst = Array::empty(s, DType::u8, dev);
          Event gate = Event::user(dev);
          Event filled = fill_async(dst, std::uint8_t{0xA5}, Queue{}, {gate});
          const auto before = impl.marker(impl.default_queue(), {});
          std::atomic<bool> pushed{false};
          std::thread t([&] {
            detail::write_all_after(detail::Access::impl(dst),
                                    use_pinned ? pinned.data() : in.data(), use_pinned, *before);
            pushed = true;
          });
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          const bool early = pushed.load();
          gate.complete();
          t.join();
          filled.wait();
          QVERIFY2(!early, "the push returned before the fill queued ahead of its event ran");
          const HostArray back = dst.pull();
          QVERIFY2(std::memcmp(back.data(), in.data(), n) == 0, at.constData());
        }
        // Held back after the event: the push goes ahead of it.
        {
          Array dst = Array::empty(s, DType::u8, dev);
          Array other = Array::empty(s, DType::u8, dev);
          const auto before = impl.marker(impl.default_queue(), {});
          Event gate = Event::user(dev);
          Event filled = fill_async(other, std::uint8_t{0xA5}, Queue{}, {gate});
          std::atomic<bool> pushed{false};
          std::thread t([&] {
            detail::write_all_after(detail::Access::impl(dst),
                                    use_pinned ? pinned.data() : in.data(), use_pinned, *before);
            pushed = true;
          });
          for (int i = 0; i < 1000 && !pushed.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          const bool done = pushed.load();
          gate.complete();
          t.join();
          filled.wait();
          QVERIFY2(done, ("the push waited for work queued after its event: " + at).constData());
          const HostArray back = dst.pull();
          QVERIFY2(std::memcmp(back.data(), in.data(), n) == 0, at.constData());
        }
      }
    }
  }

  // ---------------------------------------------------------------- mapping
  void mapping_data() { devices_data(); }
  void mapping() {
    const Device dev = test::fetch_device();
    const Shape s{13, 29};
    const auto v = test::random_values<double>(s.elements());
    std::vector<float> data(v.begin(), v.end());
    Array a = Array::create(s, DType::f32, dev);
    {
      Mapping m = a.map(MapMode::write);
      auto span = m.as<float>();
      QCOMPARE(span.size(), data.size());
      std::copy(data.begin(), data.end(), span.begin());
      QVERIFY_THROWS_EXCEPTION(UnsupportedDType, m.as<std::int32_t>());
      Mapping moved = std::move(m);  // the move carries the unmap
      QVERIFY(!m.valid());
      QVERIFY(moved.valid());
    }
    QVERIFY(a.pull_as<float>() == data);
    {
      Mapping m = a.map(MapMode::read_write);
      for (float& x : m.as<float>()) x = -x;
    }
    for (std::size_t i = 0; i < data.size(); ++i) QCOMPARE(a.pull_as<float>()[i], -data[i]);
    {
      const Mapping m = a.map(MapMode::read);
      QCOMPARE(m.as<float>()[5], -data[5]);
    }
    // A padded array maps its whole allocation, rows row_pitch() apart.
    Array p = Array::padded(s, Shape{15, 32}, DType::f32, dev);
    p.write(data.data(), data.size() * 4);
    {
      Mapping m = p.map(MapMode::read);
      QCOMPARE(m.bytes(), p.slice_pitch());
      const auto span = m.as<float>();
      for (std::size_t y = 0; y < s[0]; ++y)
        for (std::size_t x = 0; x < s[1]; ++x)
          QCOMPARE(span[y * p.row_pitch() / 4 + x], data[y * s[1] + x]);
    }
    if (can_image(dev, DType::f32)) {
      Array img = Array::empty_image(s, DType::f32, dev);
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, img.map(MapMode::read));
    }
    // A write-only mapping of a region view, or of a padded array, writes the whole
    // allocation back: the pixels around the view and the padding keep their values (CUDA
    // wrote a stale pinned block over them, OpenCL left them undefined).
    Array whole = Array::push(data, s, dev);
    Array box = whole.view(Region{{3, 5}, {6, 9}});
    {
      Mapping m = box.map(MapMode::write);
      auto span = m.as<float>();
      for (std::size_t y = 0; y < 6; ++y)
        for (std::size_t x = 0; x < 9; ++x) span[y * s[1] + x] = 1e6f;
    }
    const std::vector<float> after = whole.pull_as<float>();
    for (std::size_t y = 0; y < s[0]; ++y) {
      for (std::size_t x = 0; x < s[1]; ++x) {
        const bool inside = y >= 3 && y < 9 && x >= 5 && x < 14;
        QCOMPARE(after[y * s[1] + x], inside ? 1e6f : data[y * s[1] + x]);
      }
    }
  }

  // A size class never wraps past the largest size_t to a tiny block (an absurd request is
  // refused by the device at its own size).
  void size_classes() {
    constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
    for (std::size_t b :
         {std::size_t{1}, std::size_t{257}, std::size_t{1000}, kMax / 2, kMax - 100, kMax}) {
      const std::size_t c = detail::MemoryPool::size_class(b);
      QVERIFY2(c >= b, qPrintable(QString::number(b)));
      if (b <= kMax / 2) QVERIFY(c <= b + b / 4 + 256);
    }
  }

  // ---------------------------------------------------------------- regions
  void regions_data() {
    // One dtype of each size, and a float of each size.
    constexpr DType kTypes[] = {DType::u8, DType::i16, DType::f32, DType::f64, DType::u64};
    test::add_device_dtype_rows(kTypes);
  }
  void regions() {
    QFETCH(DType, dtype);
    const Device dev = test::fetch_device();
    if (dtype == DType::f64 && !dev.supports_fp64()) return;
    const std::vector<Layout> layouts =
        can_image(dev, dtype) ? std::vector{Layout::contiguous, Layout::padded, Layout::image}
                              : std::vector{Layout::contiguous, Layout::padded};
    const std::vector<std::pair<Shape, Shape>> pairs = {{Shape{1, 1}, Shape{3, 2}},
                                                        {Shape{17, 23}, Shape{9, 31}},
                                                        {Shape{5, 7, 9}, Shape{3, 11, 4}},
                                                        {Shape{1, 13, 1}, Shape{2, 2, 2}},
                                                        {Shape{19}, Shape{7}}};
    for (const auto& pair : pairs) {
      const Shape& ss = pair.first;  // not a structured binding: clang 14 cannot capture those
      const Shape& ds = pair.second;
      for (Layout sl : layouts) {
        for (Layout dl : layouts) {
          visit_dtype(dtype, [&](auto z) {
            using T = decltype(z);
            HostArray sh = host_random<T>(ss), dh = host_random<T>(ds);
            Array sa = make(sh, sl, dev), da = make(dh, dl, dev);
            for (int trial = 0; trial < 4; ++trial) {
              std::vector<std::size_t> so, se, dorg, de;
              random_box(ss, so, se);
              random_box(ds, dorg, de);
              std::vector<std::size_t> ext(se.size());
              for (std::size_t i = 0; i < ext.size(); ++i) ext[i] = std::min(se[i], de[i]);
              // read_region
              HostArray got = sa.read_region({so, ext});
              HostArray want(Shape(std::span<const std::size_t>(ext.data(), ext.size())), dtype);
              ref_copy(sh, so, want, std::vector<std::size_t>(ext.size(), 0), ext);
              QVERIFY(same_bytes(got, want));
              // copy_region between arrays of different shapes and layouts
              copy_region(sa, so, da, dorg, ext);
              ref_copy(sh, so, dh, dorg, ext);
              QVERIFY2(same_bytes(da.pull(), dh), "copy_region");
              // write_region
              HostArray patch =
                  host_random<T>(Shape(std::span<const std::size_t>(ext.data(), ext.size())));
              da.write_region({dorg, ext}, patch);
              ref_copy(patch, std::vector<std::size_t>(ext.size(), 0), dh, dorg, ext);
              QVERIFY2(same_bytes(da.pull(), dh), "write_region");
            }
          });
        }
      }
    }
    // Within one array, every layout: copy_region between boxes that overlap (a shift by one
    // plane, both ways) and copy_from between region views of other planes, apart and
    // overlapping. Each reads the source as it was. (copy_from between two views of one
    // allocation copied nothing before.)
    for (Layout l : layouts) {
      visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        const Shape s{6, 5, 7};
        HostArray h = host_random<T>(s);
        Array a = make(h, l, dev);
        const std::vector<std::size_t> all{5, 5, 7};
        copy_region(a, {0, 0, 0}, a, {1, 0, 0}, all);
        ref_copy(h.clone(), {0, 0, 0}, h, {1, 0, 0}, all);
        QVERIFY2(same_bytes(a.pull(), h), "copy_region one plane down");
        copy_region(a, {1, 0, 0}, a, {0, 0, 0}, all);
        ref_copy(h.clone(), {1, 0, 0}, h, {0, 0, 0}, all);
        QVERIFY2(same_bytes(a.pull(), h), "copy_region one plane up");
        const std::vector<std::size_t> three{3, 5, 7}, four{4, 5, 7};
        a.view({{0, 0, 0}, three}).copy_from(a.view({{3, 0, 0}, three}));
        ref_copy(h.clone(), {3, 0, 0}, h, {0, 0, 0}, three);
        QVERIFY2(same_bytes(a.pull(), h), "copy_from a view of other planes");
        a.view({{2, 0, 0}, four}).copy_from(a.view({{1, 0, 0}, four}));
        ref_copy(h.clone(), {1, 0, 0}, h, {2, 0, 0}, four);
        QVERIFY2(same_bytes(a.pull(), h), "copy_from an overlapping view");
        a.view({{1, 0, 0}, four}).copy_from(a.view({{1, 0, 0}, four}));  // itself
        QVERIFY2(same_bytes(a.pull(), h), "copy_from itself");
      });
    }
    // Typed errors, and nothing changes.
    Array a = Array::create(Shape{4, 6}, dtype, dev);
    const HostArray before = a.pull();
    try {
      (void)a.read_region({{2, 3}, {3, 1}});
      QFAIL("no exception");
    } catch (const OutOfRange& e) {
      QVERIFY2(std::string(e.what()).find("axis 0") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(OutOfRange, a.read_region({{0, 6}, {1, 1}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.read_region({{0}, {1}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.read_region({{0, 0}, {0, 1}}));
    QVERIFY_THROWS_EXCEPTION(OutOfRange,
                             a.write_region({{1, 1}, {2, 6}}, HostArray(Shape{2, 6}, dtype)));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             a.write_region({{1, 1}, {2, 2}}, HostArray(Shape{2, 3}, dtype)));
    Array b = Array::create(Shape{2, 2}, dtype, dev);
    QVERIFY_THROWS_EXCEPTION(OutOfRange, copy_region(a, {0, 0}, b, {1, 1}, {2, 2}));
    QVERIFY(same_bytes(a.pull(), before));
  }

  // ---------------------------------------------------------------- padding
  void padded_data() { regions_data(); }
  void padded() {
    QFETCH(DType, dtype);
    const Device dev = test::fetch_device();
    if (dtype == DType::f64 && !dev.supports_fp64()) return;
    for (const Shape& s : test::odd_shapes()) {
      visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        const Shape ps = padded_of(s);
        Array p = Array::padded(s, ps, dtype, dev);
        QCOMPARE(p.padded_shape(), ps);
        QCOMPARE(p.row_pitch(), ps.width() * sizeof(T));
        QCOMPARE(p.slice_pitch(), ps.width() * ps.height() * sizeof(T));
        QVERIFY(!p.is_contiguous());
        QCOMPARE(p.bytes(), s.elements() * sizeof(T));
        // Fill the padding with extremes so stats would see it if it read there.
        p.fill(std::numeric_limits<T>::max());
        auto data = test::random_values<T>(s.elements());
        for (auto& v : data) {
          if (v == std::numeric_limits<T>::max()) v = T(1);
        }
        p.write(data.data(), data.size() * sizeof(T));
        QVERIFY(p.pull_as<T>() == data);
        const Stats st = stats(p);
        Stats ref = stats(Array::push(data, s, dev));
        QCOMPARE(st.min, ref.min);
        QCOMPARE(st.max, ref.max);
        QCOMPARE(st.count, ref.count);
        QCOMPARE(st.sum, ref.sum);
        // copies in and out of padded layouts
        Array c = p.copy();
        QVERIFY(c.is_contiguous());
        QVERIFY(c.pull_as<T>() == data);
        Array p2 = Array::padded(s, padded_of(s), dtype, dev);
        p2.copy_from(p);
        QVERIFY(p2.pull_as<T>() == data);
        p2.zero();
        for (T v : p2.pull_as<T>()) QCOMPARE(v, T(0));
        p2.fill(T(3));
        for (T v : p2.pull_as<T>()) QCOMPARE(v, T(3));
      });
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array::padded(Shape{4, 4}, Shape{4, 3}, dtype, dev));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array::padded(Shape{4, 4}, Shape{4}, dtype, dev));
  }

  // ---------------------------------------------------------------- reshape
  void reshape_data() { devices_data(); }
  void reshape() {
    const Device dev = test::fetch_device();
    const auto data = test::random_values<std::int16_t>(3 * 5 * 7);
    Array a = Array::push(data, Shape{3, 5, 7}, dev);
    bool copied = true;
    Array v = a.reshape(Shape{15, 7}, &copied);
    QVERIFY(!copied);
    QVERIFY(v.is_view());
    QVERIFY(!a.is_view());
    QVERIFY(v.same_memory(a));
    QCOMPARE(v.shape(), (Shape{15, 7}));
    QVERIFY(v.pull_as<std::int16_t>() == data);
    v.fill(std::int16_t{9});  // writes through the view
    for (auto x : a.pull_as<std::int16_t>()) QCOMPARE(x, std::int16_t{9});
    a.write(data.data(), data.size() * 2);
    // padded: a copy, and it says so
    Array p = Array::padded(Shape{3, 5, 7}, Shape{4, 6, 8}, DType::i16, dev);
    p.copy_from(a);
    Array r = p.reshape(Shape{105}, &copied);
    QVERIFY(copied);
    QVERIFY(!r.is_view());
    QVERIFY(!r.same_memory(p));
    QVERIFY(r.pull_as<std::int16_t>() == data);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.reshape(Shape{104}));
  }

  // ---------------------------------------------------------------- pool
  void pool_data() { devices_data(); }
  void pool() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    trim(dev);
    const MemoryStats s0 = memory_stats(dev);
    QCOMPARE(s0.bytes_cached, 0u);
    const Shape s{123, 457};
    const auto data = test::random_values<float>(s.elements());
    {
      Array a = Array::push(data, s, dev);
      const MemoryStats s1 = memory_stats(dev);
      QCOMPARE(s1.allocations, s0.allocations + 1);
      QCOMPARE(s1.device_allocations, s0.device_allocations + 1);
      QVERIFY(s1.bytes_in_use >= s0.bytes_in_use + a.bytes());
      QVERIFY(s1.peak_bytes_in_use >= s1.bytes_in_use);
      // reset_peak_memory starts the peak again from what is in use now.
      { Array big = Array::empty(Shape{4 * s.elements()}, DType::f32, dev); }
      QVERIFY(memory_stats(dev).peak_bytes_in_use >= s1.bytes_in_use + 16 * s.elements());
      reset_peak_memory(dev);
      QCOMPARE(memory_stats(dev).peak_bytes_in_use, s1.bytes_in_use);
      { Array small = Array::empty(Shape{s.elements()}, DType::u8, dev); }
      const MemoryStats s1b = memory_stats(dev);
      QVERIFY(s1b.peak_bytes_in_use >= s1.bytes_in_use + s.elements() &&
              s1b.peak_bytes_in_use < s1.bytes_in_use + 2 * s.elements());
    }
    const MemoryStats s2 = memory_stats(dev);
    QCOMPARE(s2.bytes_in_use, s0.bytes_in_use);
    QVERIFY(s2.bytes_cached >= s.elements() * 4);
    {
      // Same size again: the cached block, no new device allocation. Its old contents are
      // there (empty() does not clear), and create() must clear them.
      Array b = Array::empty(s, DType::f32, dev);
      const MemoryStats s3 = memory_stats(dev);
      QCOMPARE(s3.cache_hits, s2.cache_hits + 1);
      QCOMPARE(s3.device_allocations, s2.device_allocations);
      QCOMPARE(s3.bytes_cached, s2.bytes_cached - (s3.bytes_in_use - s2.bytes_in_use));
    }
    {
      Array c = Array::create(s, DType::f32, dev);
      for (float x : c.pull_as<float>()) QCOMPARE(x, 0.0f);
    }
    trim(dev);
    QCOMPARE(memory_stats(dev).bytes_cached, 0u);
    const MemoryReport r = memory_report(dev);
    QCOMPARE(r.gpix.bytes_in_use, memory_stats(dev).bytes_in_use);
    if (!r.device_known) QVERIFY(!r.note.empty());
    QVERIFY(r.device_total > 0);
  }

  // Allocate past the limit until OutOfMemory, free, keep working; nothing already allocated
  // is corrupted. Bounded by a gpix memory limit (PoCL's memory is the host's).
  void out_of_memory_data() { devices_data(); }
  void out_of_memory() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    trim(dev);
    const std::uint64_t limit = memory_stats(dev).bytes_in_use + 48u * 1024 * 1024;
    set_memory_limit(dev, limit);
    std::vector<Array> held;
    std::vector<std::vector<std::uint32_t>> contents;
    const Shape s{1024, 1031};  // ~4.1 MB
    bool hit = false;
    for (int i = 0; i < 100 && !hit; ++i) {
      try {
        contents.push_back(test::random_values<std::uint32_t>(s.elements()));
        held.push_back(Array::push(contents.back(), s, dev));
      } catch (const OutOfMemory& e) {
        contents.pop_back();
        hit = true;
        const std::string m = e.what();
        QVERIFY2(m.find("in use") != std::string::npos && m.find("limit") != std::string::npos,
                 e.what());
        QVERIFY(e.requested_bytes() >= 4u * 1024 * 1031);
      }
    }
    QVERIFY(hit);
    QVERIFY(held.size() >= 8);
    // Repeatedly: still out of memory, nothing broken.
    for (int i = 0; i < 3; ++i)
      QVERIFY_THROWS_EXCEPTION(OutOfMemory, Array::empty(s, DType::u32, dev));
    // Free half, allocate again: the freed blocks come back.
    for (std::size_t i = 0; i < held.size(); i += 2) held[i] = Array();
    Array again = Array::create(s, DType::u32, dev);
    QCOMPARE(stats(again).max, Scalar(std::uint32_t{0}));
    for (std::size_t i = 1; i < held.size(); i += 2)
      QVERIFY(held[i].pull_as<std::uint32_t>() == contents[i]);
    set_memory_limit(dev, 0);
    // The device's own limit: larger than its largest allocation.
    const std::uint64_t too_big = dev.info().max_allocation + 1;
    try {
      Array::empty(Shape{too_big}, DType::u8, dev);
      QFAIL("no exception");
    } catch (const OutOfMemory& e) {
      QVERIFY2(std::string(e.what()).find("largest single allocation") != std::string::npos,
               e.what());
    }
    for (std::size_t i = 1; i < held.size(); i += 2)
      QVERIFY(held[i].pull_as<std::uint32_t>() == contents[i]);
  }

  // ---------------------------------------------------------------- images
  void images_data() { test::add_device_dtype_rows(); }
  void images() {
    QFETCH(int, device);
    QFETCH(DType, dtype);
    const Device dev = test::device_at(device);
    if (!dev.info().images) {
      QVERIFY_THROWS_EXCEPTION(UnsupportedFeature, Array::empty_image(Shape{4, 4}, dtype, dev));
      return;
    }
    const bool mapped = dtype != DType::u64 && dtype != DType::i64 && dtype != DType::f64;
    if (!mapped) {
      try {
        Array::empty_image(Shape{4, 4}, dtype, dev);
        QFAIL("no exception");
      } catch (const UnsupportedDType& e) {
        QVERIFY2(std::string(e.what()).find("u8") != std::string::npos, e.what());
      }
      return;
    }
    if (!can_image(dev, dtype)) QSKIP("the device has no one-channel image of this dtype");
    auto& r = test::rng();
    for (const Shape& s : {Shape{1, 1}, Shape{13}, Shape{17, 23}, Shape{1, 9}, Shape{5, 7, 9},
                           Shape{1, 1, 3}, Shape{6, 1, 4}}) {
      visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        HostArray h = host_random<T>(s);
        if constexpr (std::is_floating_point_v<T>)
          h = HostArray::from(test::random_values<T>(s.elements()), s);
        Array img = Array::empty_image(s, dtype, dev);
        QCOMPARE(img.kind(), MemoryKind::image);
        img.write(h);
        QVERIFY(same_bytes(img.pull(), h));  // bit-exact round trip
        Array buf = img.to_buffer();
        QVERIFY(same_bytes(buf.pull(), h));
        QVERIFY(same_bytes(buf.to_image().pull(), h));
        // Sampling at random points, inside and outside (clamp to edge).
        const int dims = s.ndim() == 3 ? 3 : 2;
        const std::size_t ext[3] = {s.width(), s.height(), s.depth()};
        const std::size_t n = 97;
        for (int mode = 0; mode < 3; ++mode) {
          const bool linear = mode == 2;
          const bool normalized = mode == 1;
          if (linear && dtype != DType::f32) {
            QVERIFY_THROWS_EXCEPTION(
                UnsupportedDType,
                resample(img,
                         Array::create(Shape{1, static_cast<std::size_t>(dims)}, DType::f32, dev),
                         Sampler{Sampler::Filter::linear, Sampler::Coordinates::pixel}));
            continue;
          }
          std::vector<float> coords(n * static_cast<std::size_t>(dims));
          std::vector<double> want(n);
          for (std::size_t i = 0; i < n; ++i) {
            std::size_t idx[3];
            double lin_w[3][2];
            std::size_t lin_i[3][2];
            for (int a = 0; a < dims; ++a) {
              const auto e = static_cast<double>(ext[a]);
              // Away from pixel borders for nearest (rounding there is implementation's).
              double c = std::floor(static_cast<double>(r() % (ext[a] + 4)) - 2.0) + 0.1 +
                         0.8 * static_cast<double>(r() % 1000) / 1000.0;
              coords[i * static_cast<std::size_t>(dims) + static_cast<std::size_t>(a)] =
                  static_cast<float>(normalized ? c / e : c);
              idx[a] = static_cast<std::size_t>(std::clamp(std::floor(c), 0.0, e - 1));
              const double u = c - 0.5, f = std::floor(u);
              lin_w[a][1] = u - f;
              lin_w[a][0] = 1 - lin_w[a][1];
              lin_i[a][0] = static_cast<std::size_t>(std::clamp(f, 0.0, e - 1));
              lin_i[a][1] = static_cast<std::size_t>(std::clamp(f + 1, 0.0, e - 1));
            }
            const auto px = h.as<T>();
            auto at = [&](std::size_t x, std::size_t y, std::size_t zz) {
              return static_cast<double>(px[(zz * ext[1] + y) * ext[0] + x]);
            };
            if (!linear) {
              want[i] = at(idx[0], idx[1], dims == 3 ? idx[2] : 0);
            } else {
              double acc = 0;
              for (int c3 = 0; c3 < (dims == 3 ? 2 : 1); ++c3)
                for (int c2 = 0; c2 < 2; ++c2)
                  for (int c1 = 0; c1 < 2; ++c1)
                    acc += lin_w[0][c1] * lin_w[1][c2] * (dims == 3 ? lin_w[2][c3] : 1.0) *
                           at(lin_i[0][c1], lin_i[1][c2], dims == 3 ? lin_i[2][c3] : 0);
              want[i] = acc;
            }
          }
          Array ca = Array::push(coords, Shape{n, static_cast<std::size_t>(dims)}, dev);
          Sampler smp{linear ? Sampler::Filter::linear : Sampler::Filter::nearest,
                      normalized ? Sampler::Coordinates::normalized : Sampler::Coordinates::pixel};
          const auto got = resample(img, ca, smp).template pull_as<T>();
          for (std::size_t i = 0; i < n; ++i) {
            // GPUs interpolate with 8-9 bit fixed-point weights: 1% of the data's range.
            const double tol = linear ? 20.0 : 0.0;
            if (std::abs(static_cast<double>(got[i]) - want[i]) > tol) {
              QFAIL(qPrintable(QString("mode %1 shape %2 point %3: got %4 want %5")
                                   .arg(mode)
                                   .arg(QString::fromStdString(s.str()))
                                   .arg(i)
                                   .arg(static_cast<double>(got[i]))
                                   .arg(want[i])));
            }
          }
        }
        // stats() of an image reads it through a buffer copy.
        QCOMPARE(stats(img).count, static_cast<std::uint64_t>(s.elements()));
        img.fill(T(5));
        for (T v : img.template pull_as<T>()) QCOMPARE(v, T(5));
      });
    }
    Array img = Array::empty_image(Shape{4, 4}, dtype, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             resample(img, Array::create(Shape{4, 3}, DType::f32, dev)));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             resample(Array::create(Shape{4, 4}, dtype, dev),
                                      Array::create(Shape{4, 2}, DType::f32, dev)));
  }

  // ---------------------------------------------------------------- devices
  void cross_device() {
    const auto& devs = test::test_devices();
    if (devs.size() < 2)
      qInfo("one device: copies to itself only (ctest runs a two-device PoCL pass)");
    const Shape s{5, 301, 233};  // ~1.4 MB of u32: more than one 1 MB staging chunk
    for (const Device& from : devs) {
      for (const Device& to : devs) {
        HostArray h = host_random<std::uint32_t>(s);
        for (int layout = 0; layout < 2; ++layout) {
          Array a = layout ? Array::padded(s, Shape{6, 302, 256}, DType::u32, from)
                           : Array::empty(s, DType::u32, from);
          a.write(h);
          Array b = layout ? Array::empty(s, DType::u32, to)
                           : Array::padded(s, Shape{5, 305, 240}, DType::u32, to);
          b.copy_from(a);
          QVERIFY(same_bytes(b.pull(), h));
          Array c = Array::empty(s, DType::u32, to);
          Event e = copy_async(a, c, Queue::create(to));
          e.wait();
          QVERIFY(same_bytes(c.pull(), h));
          // a region between the devices
          HostArray want = c.pull();
          copy_region(a, {1, 7, 3}, c, {0, 100, 200}, {4, 33, 33});
          ref_copy(h, {1, 7, 3}, want, {0, 100, 200}, {4, 33, 33});
          QVERIFY(same_bytes(c.pull(), want));
        }
      }
    }
  }

  // ---------------------------------------------------------------- SVM
  void shared_virtual_memory_data() { devices_data(); }
  void shared_virtual_memory() {
    const Device dev = test::fetch_device();
    QCOMPARE(supports_svm(dev), dev.info().svm);
    if (!dev.info().svm) {
      try {
        SharedBuffer::allocate(64, dev);
        QFAIL("no exception");
      } catch (const UnsupportedFeature& e) {
        QCOMPARE(e.code(), std::string("GPIX_NO_SVM"));
      }
      return;
    }
    test::shared_buffer_round_trip(dev);
    if (QTest::currentTestFailed()) return;
    SharedBuffer b = SharedBuffer::allocate(33 * 17 * 4, dev);
    Array wrong = Array::empty(Shape{3}, DType::i32, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, b.copy_to(wrong));
  }
};

QTEST_APPLESS_MAIN(TestMemory)
#include "test_memory.moc"
