// libFuzzer target: the public API as a caller drives it. Each input picks a catalog filter,
// inputs of random shape (1 to 3 dimensions, extents 1-9), dtype and layout (contiguous,
// padded, region view), and parameters inside and outside the descriptors' ranges, then
// runs it on the default device. The contract: a result of the declared kind, or a
// gpix::Error; never another exception, a crash or a sanitizer report.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gpix/gpix.h"

namespace {

gpix::Array make_input(FuzzedDataProvider& in, const gpix::Shape& shape, gpix::DType t) {
  gpix::HostArray h = gpix::HostArray::empty(shape, t);
  const std::vector<std::uint8_t> bytes = in.ConsumeBytes<std::uint8_t>(h.bytes());
  std::fill(h.data(), h.data() + h.bytes(), std::byte{0});
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<std::uint8_t*>(h.data()));
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 1: {  // a padded array: rows and planes longer than the image
      std::vector<std::size_t> padded(shape.dims().begin(), shape.dims().end());
      for (auto& d : padded) d += in.ConsumeIntegralInRange<std::size_t>(0, 3);
      gpix::Array a =
          gpix::Array::padded(shape, gpix::Shape{std::span<const std::size_t>(padded)}, t);
      a.write(h);
      return a;
    }
    case 2: {  // a region view of a larger array
      std::vector<std::size_t> big(shape.dims().begin(), shape.dims().end()), origin;
      for (auto& d : big) {
        const auto o = in.ConsumeIntegralInRange<std::size_t>(0, 2);
        origin.push_back(o);
        d += o + in.ConsumeIntegralInRange<std::size_t>(0, 2);
      }
      gpix::Array whole = gpix::Array::create(gpix::Shape{std::span<const std::size_t>(big)}, t);
      gpix::Array v = whole.view(
          gpix::Region{origin, std::vector<std::size_t>(shape.dims().begin(), shape.dims().end())});
      v.write(h);
      return v;
    }
    default:
      return gpix::Array::push(h);
  }
}

}  // namespace

// ASan keeps freed blocks in a quarantine (256 MB by default) to catch uses after free; PoCL's
// LLVM frees hundreds of megabytes compiling each kernel variant, so the quarantine stayed full,
// resident under libFuzzer's 2 GB limit beside whatever the next input allocates. 64 MB still
// holds the blocks of many inputs. ASAN_OPTIONS overrides it.
extern "C" const char* __asan_default_options() {
  return "quarantine_size_mb=64";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Parameters inside their ranges may ask for gigabytes (resample by 1e4 per axis); gpix's own
  // memory limit turns that into its typed OutOfMemory, the contract, before the request
  // reaches the fuzzer's 2 GB RSS limit (which stopped the first long run: an "oom" that was
  // no bug). The limit bounds device memory (the host's on PoCL); an input's host copies come
  // on top, up to about three times as much (label_statistics: the pulled columns and the
  // 40-byte rows of its table), so 128 MB keeps the largest input to about half a gigabyte
  // under ASan (docs/RELIABILITY.md); sizes beyond it reach no other code.
  // The same for compiled programs: every new dtype, radius bucket or entry is one, and each
  // stays in memory up to GPIX_PROGRAM_CACHE_ENTRIES (256 by default, several MB each on PoCL
  // under ASan); 32 keeps the fuzzer's RSS for its inputs (the variable is read once, on first
  // use, so it is set before).
  static const bool limited = [] {
    setenv("GPIX_PROGRAM_CACHE_ENTRIES", "32", 0);
    gpix::set_memory_limit(gpix::default_device(), std::uint64_t{128} << 20);
    return true;
  }();
  (void)limited;
  FuzzedDataProvider in(data, size);
  const auto& all = gpix::filters();
  const gpix::FilterInfo& f = all[in.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
  const int ndim = in.ConsumeIntegralInRange(1, 3);
  std::vector<std::size_t> dims;
  for (int i = 0; i < ndim; ++i) dims.push_back(in.ConsumeIntegralInRange<std::size_t>(1, 9));
  const gpix::Shape shape{std::span<const std::size_t>(dims)};
  const auto& dtypes = gpix::kAllDTypes;
  gpix::Params params;
  for (const gpix::ParamSpec& p : f.params) {
    if (in.ConsumeBool()) continue;  // the default
    if (p.type == gpix::ParamType::choice) {
      params[p.name] =
          in.ConsumeBool() && !p.choices.empty()
              ? p.choices[in.ConsumeIntegralInRange<std::size_t>(0, p.choices.size() - 1)]
              : in.ConsumeRandomLengthString(12);
    } else if (in.ConsumeBool()) {  // inside the range, as the GUI offers it
      params[p.name] = p.min + (p.max - p.min) * in.ConsumeProbability<double>();
    } else {  // anything: NaN, infinities, huge, negative
      params[p.name] = in.ConsumeFloatingPoint<double>();
    }
  }
  try {
    std::vector<gpix::Array> inputs;
    for (std::size_t i = 0; i < f.inputs.size(); ++i) {
      const gpix::DType t = dtypes[in.ConsumeIntegralInRange<std::size_t>(0, dtypes.size() - 1)];
      inputs.push_back(make_input(in, shape, t));
    }
    const gpix::Result r = gpix::run(f.name, inputs, params);
    if (!r.is_table()) (void)r.array.pull();
  } catch (const gpix::Error&) {
    // A refusal with a typed error is the expected outcome for bad parameters.
  }
  // The pool keeps freed blocks by size class for reuse, up to the memory limit; inputs of
  // random sizes rarely reuse them, and on PoCL they are host memory: each input starts empty.
  gpix::trim(gpix::default_device());
  return 0;
}
