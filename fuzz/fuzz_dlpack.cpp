// libFuzzer target: DLPack import (gpix/dlpack.h) of tensors with random metadata: the number
// of dimensions, extents (zero, negative, huge), strides (none, compact, or anything), dtype
// code, bits and lanes, byte offset, device type and id, a null shape or data pointer; imported
// by host_from_dlpack (copy and wrap) and array_from_dlpack on the default device.
// The contract (gpix/dlpack.h): what gpix takes comes in with exactly the producer's bytes;
// anything else is a gpix::Error; the deleter runs exactly once either way (for a wrap, when
// the last HostArray sharing the pixels dies). A broken contract aborts (a finding).
//
// The harness gives every tensor whose extents it can hold the memory they claim (up to 1 MB),
// since a DLPack producer's pointer is trusted for what its metadata says; a tensor claiming
// more than that, with extents whose byte count still fits 64 bits, is skipped (it would be
// the harness lying, not gpix failing). Claims that overflow get a small buffer: gpix must
// refuse them before reading.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpix/dlpack.h"
#include "gpix/gpix.h"

namespace {

struct Producer {
  int deleted = 0;
};

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz_dlpack: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int ndim = in.ConsumeIntegralInRange<int>(-1, 5);
  std::vector<std::int64_t> shape(static_cast<std::size_t>(ndim > 0 ? ndim : 0));
  for (auto& e : shape) {
    switch (in.ConsumeIntegralInRange(0, 9)) {
      case 0:
        e = in.ConsumeIntegralInRange<std::int64_t>(-3, 0);
        break;
      case 1:
        e = in.ConsumeIntegral<std::int64_t>();
        break;
      default:
        e = in.ConsumeIntegralInRange<std::int64_t>(1, 12);
    }
  }
  DLDataType dtype{};
  dtype.code = in.ConsumeIntegralInRange<std::uint8_t>(0, 7);
  static const std::uint8_t kBits[] = {8, 16, 32, 64, 1, 128, 0, 24};
  dtype.bits = in.ConsumeBool() ? kBits[in.ConsumeIntegralInRange(0, 3)]
                                : kBits[in.ConsumeIntegralInRange(0, 7)];
  dtype.lanes = in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeIntegral<std::uint16_t>() : 1;

  // The bytes the metadata claims, where every extent is positive and nothing overflows.
  bool valid_extents = ndim >= 1;
  std::uint64_t count = 1;
  for (const std::int64_t e : shape) {
    if (e <= 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(e), &count)) {
      valid_extents = false;
      break;
    }
  }
  const std::uint64_t element = dtype.bits / 8 > 0 ? dtype.bits / 8 : 1;
  std::uint64_t claimed = 0;
  if (valid_extents && __builtin_mul_overflow(count, element, &claimed)) valid_extents = false;
  const std::uint64_t offset = in.ConsumeIntegralInRange<std::uint64_t>(0, 40);
  if (valid_extents && claimed > (std::uint64_t{1} << 20)) return 0;  // the harness would lie

  std::vector<std::int64_t> strides(shape.size());
  const int stride_kind = in.ConsumeIntegralInRange(0, 3);
  std::int64_t step = 1;
  for (std::size_t i = strides.size(); i-- > 0;) {
    strides[i] = stride_kind == 2 ? in.ConsumeIntegralInRange<std::int64_t>(-4, 40) : step;
    if (shape[i] > 0 && shape[i] < 4096) step *= shape[i];
  }
  if (stride_kind == 3 && !strides.empty()) {
    strides[in.ConsumeIntegralInRange<std::size_t>(0, strides.size() - 1)] +=
        in.ConsumeIntegralInRange<std::int64_t>(-2, 2);
  }

  // The memory: what the metadata claims (plus the offset), or a few bytes for claims gpix
  // must refuse; 16-byte aligned, so that the offset alone decides the alignment.
  const std::size_t bytes = static_cast<std::size_t>((valid_extents ? claimed : 16) + offset);
  std::vector<std::uint64_t> storage(bytes / 8 + 2);
  auto* base = reinterpret_cast<std::uint8_t*>(storage.data());
  const std::vector<std::uint8_t> fill = in.ConsumeBytes<std::uint8_t>(bytes);
  if (!fill.empty()) std::memcpy(base, fill.data(), fill.size());

  static const DLDeviceType kDevices[] = {kDLCPU, kDLCUDAHost, kDLCUDA, kDLOpenCL, kDLROCM};
  Producer producer;
  DLManagedTensor m{};
  m.manager_ctx = &producer;
  m.deleter = [](DLManagedTensor* self) { ++static_cast<Producer*>(self->manager_ctx)->deleted; };
  DLTensor& t = m.dl_tensor;
  t.data = in.ConsumeIntegralInRange(0, 15) == 0 ? nullptr : base;
  t.device = {kDevices[in.ConsumeIntegralInRange(0, 4)], in.ConsumeIntegralInRange(0, 2)};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = in.ConsumeIntegralInRange(0, 15) == 0 ? nullptr : shape.data();
  t.strides = stride_kind == 0 ? nullptr : strides.data();
  t.byte_offset = offset;
  const std::uint8_t* first = base + offset;

  const int mode = in.ConsumeIntegralInRange(0, 2);
  try {
    if (mode == 2) {
      const gpix::Array a = gpix::array_from_dlpack(&m);
      if (producer.deleted != 1) broken("array_from_dlpack: the deleter did not run once");
      const gpix::HostArray h = a.pull();
      if (h.bytes() != claimed || std::memcmp(h.data(), first, h.bytes()) != 0)
        broken("array_from_dlpack: the pixels differ from the producer's");
    } else {
      const auto how = mode == 0 ? gpix::DlpackImport::copy : gpix::DlpackImport::wrap;
      {
        const gpix::HostArray h = gpix::host_from_dlpack(&m, how);
        if (producer.deleted != (mode == 0 ? 1 : 0))
          broken("host_from_dlpack: the deleter ran at the wrong time");
        if (h.bytes() != claimed || std::memcmp(h.data(), first, h.bytes()) != 0)
          broken("host_from_dlpack: the pixels differ from the producer's");
        if (mode == 1 && reinterpret_cast<const std::uint8_t*>(h.data()) != first)
          broken("host_from_dlpack: a wrap copied the pixels");
      }
      if (producer.deleted != 1) broken("host_from_dlpack: the deleter did not run once");
    }
  } catch (const gpix::Error&) {
    // Refused with a typed error, the contract for what gpix does not take.
    if (producer.deleted != 1) broken("a refused import did not run the deleter once");
  }
  return 0;
}
