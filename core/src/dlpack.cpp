#include "gpix/dlpack.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "detail.h"
#include "gpix/error.h"
#include "programs.h"

namespace gpix {
namespace {

using detail::Access;

// Calls the tensor's deleter when it goes out of scope, unless ownership was passed on.
class Owned {
 public:
  explicit Owned(DLManagedTensor* t) : t_(t) {}
  ~Owned() { reset(); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  DLManagedTensor* get() const noexcept { return t_; }
  DLManagedTensor* release() noexcept { return std::exchange(t_, nullptr); }
  void reset() noexcept {
    if (t_ && t_->deleter) t_->deleter(t_);
    t_ = nullptr;
  }

 private:
  DLManagedTensor* t_;
};

// What an exported tensor owns: the tensor itself, its shape and strides, and a reference to
// the pixels.
struct Export {
  DLManagedTensor tensor{};
  std::int64_t shape[3]{};
  std::int64_t strides[3]{};
  std::shared_ptr<detail::ArrayImpl> array;
  HostArray host;
};

// strides (in elements, z y x order as the shape) default to compact row-major.
DLManagedTensor* make_export(std::unique_ptr<Export> e, void* data, DLDevice dev, const Shape& s,
                             DType t, const std::int64_t* strides = nullptr,
                             std::uint64_t byte_offset = 0) {
  DLTensor& d = e->tensor.dl_tensor;
  d.data = data;
  d.device = dev;
  d.ndim = s.ndim();
  d.dtype = to_dlpack_dtype(t);
  std::int64_t stride = 1;
  for (int i = s.ndim() - 1; i >= 0; --i) {
    e->shape[i] = static_cast<std::int64_t>(s[i]);
    e->strides[i] = strides ? strides[i] : stride;
    stride *= e->shape[i];
  }
  d.shape = e->shape;
  d.strides = e->strides;
  d.byte_offset = byte_offset;
  e->tensor.manager_ctx = e.get();
  e->tensor.deleter = [](DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
  return &e.release()->tensor;
}

std::string describe(const DLDataType& t) {
  static const char* codes[] = {"int", "uint", "float", "opaque handle", "bfloat", "complex"};
  const std::string code = t.code < 6 ? codes[t.code] : "type code " + std::to_string(t.code);
  std::string s = code + std::to_string(t.bits);
  if (t.lanes != 1) s += " x" + std::to_string(t.lanes) + " lanes";
  return s;
}

// Checks the tensor and returns its shape, dtype and first pixel. Throws; the caller's Owned
// calls the deleter.
struct Layout {
  Shape shape;
  DType dtype;
  std::byte* data;
};

Layout check(const DLManagedTensor* m) {
  const DLTensor& t = m->dl_tensor;
  if (t.ndim < 1 || t.ndim > 3) {
    throw InvalidArgument("the DLPack tensor has " + std::to_string(t.ndim) +
                          " dimensions; gpix arrays have 1 to 3 (reshape or slice it first)");
  }
  if (!t.shape) throw InvalidArgument("the DLPack tensor has no shape array");
  std::vector<std::size_t> dims;
  std::string shape_text;
  for (int i = 0; i < t.ndim; ++i) {
    shape_text += (i ? " x " : "") + std::to_string(t.shape[i]);
    dims.push_back(t.shape[i] > 0 ? static_cast<std::size_t>(t.shape[i]) : 0);
  }
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] <= 0)
      throw InvalidArgument("the DLPack tensor of shape " + shape_text +
                            " is empty; gpix arrays have no empty axis");
  }
  const auto dtype = from_dlpack_dtype(t.dtype);
  if (!dtype) {
    throw UnsupportedDType(
        "the DLPack tensor holds " + describe(t.dtype) + " elements; gpix takes " + dtype_names() +
        " with one lane (convert bool, float16, bfloat16 and complex tensors first)");
  }
  // Extents a producer's metadata may claim but no memory holds: refused before the strides'
  // products below (signed 64-bit) could overflow (fuzz_dlpack: 5348261237081915970 x 7, UB).
  std::uint64_t elements = 1;
  for (const std::size_t d : dims) {
    if (__builtin_mul_overflow(elements, static_cast<std::uint64_t>(d), &elements) ||
        elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) /
                       size_of(*dtype)) {
      throw InvalidArgument("the DLPack tensor of shape " + shape_text + " holds more " +
                            describe(t.dtype) + " elements than 64-bit memory can address");
    }
  }
  if (t.strides) {
    std::int64_t expect = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expect) {
        std::string st;
        for (int j = 0; j < t.ndim; ++j) st += (j ? ", " : "") + std::to_string(t.strides[j]);
        throw InvalidArgument(
            "the DLPack tensor of shape " + shape_text + " has strides (" + st +
            ") elements, not compact row-major; make it contiguous first (e.g. .contiguous())");
      }
      expect *= t.shape[i];
    }
  }
  if (!t.data) throw InvalidArgument("the DLPack tensor has a null data pointer");
  return {Shape(std::span<const std::size_t>(dims)), *dtype,
          static_cast<std::byte*>(t.data) + t.byte_offset};
}

bool host_device(DLDeviceType d) {
  return d == kDLCPU || d == kDLCUDAHost;
}

std::string device_text(const DLDevice& d) {
  return "device type " + std::to_string(static_cast<int>(d.device_type)) + " id " +
         std::to_string(d.device_id);
}

}  // namespace

DLDataType to_dlpack_dtype(DType t) {
  DLDataType d{};
  d.code = static_cast<std::uint8_t>(is_float(t) ? kDLFloat : (is_signed(t) ? kDLInt : kDLUInt));
  d.bits = static_cast<std::uint8_t>(size_of(t) * 8);
  d.lanes = 1;
  return d;
}

std::optional<DType> from_dlpack_dtype(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  for (DType d : kAllDTypes) {
    const DLDataType x = to_dlpack_dtype(d);
    if (x.code == t.code && x.bits == t.bits) return d;
  }
  return std::nullopt;
}

DLManagedTensor* to_dlpack(const Array& array) {
  auto& impl = Access::impl(array);
  const Device dev = array.device();
  if (dev.backend() != Backend::cuda) {
    throw InvalidArgument("the array lives on the OpenCL device '" + dev.name() +
                          "', whose buffers other frameworks cannot address; export array.pull() "
                          "(a HostArray) instead, or use a CUDA device");
  }
  if (impl.kind == MemoryKind::image) {
    throw InvalidArgument(
        "a CUDA array (image object) has no linear address to export; export "
        "array.to_buffer() instead");
  }
  const std::uint64_t ptr = impl.memory->native_pointer();
  const int ordinal = impl.device->native_ordinal();
  if (ptr == 0 || ordinal < 0) {
    throw DeviceError("the CUDA backend gave no device pointer for the array on '" + dev.name() +
                      "'");
  }
  // The consumer reads the memory on its own stream, which does not wait for gpix's
  // (non-blocking) one: kernels that write the array may still be queued. They finish first.
  dev.finish();
  auto e = std::make_unique<Export>();
  e->array = Access::shared(array);
  DLDevice d{kDLCUDA, ordinal};
  // Padded arrays and region views export their pitches as strides (consumers such as
  // PyTorch and CuPy take strided tensors) and their first pixel as the byte offset.
  const auto row = static_cast<std::int64_t>(impl.padded.width());
  const std::int64_t all[3] = {row * static_cast<std::int64_t>(impl.padded.height()), row, 1};
  return make_export(std::move(e), reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)), d,
                     array.shape(), array.dtype(), all + (3 - array.ndim()), impl.first_byte());
}

DLManagedTensor* to_dlpack(const HostArray& host) {
  if (!host.valid()) throw InvalidArgument("to_dlpack() was given an empty HostArray");
  auto e = std::make_unique<Export>();
  e->host = host;
  DLDevice d{kDLCPU, 0};
  return make_export(std::move(e), const_cast<std::byte*>(host.data()), d, host.shape(),
                     host.dtype());
}

HostArray host_from_dlpack(DLManagedTensor* tensor, DlpackImport mode) {
  if (!tensor) throw InvalidArgument("host_from_dlpack() was given a null tensor");
  Owned owned(tensor);
  if (!host_device(tensor->dl_tensor.device.device_type)) {
    throw InvalidArgument("host_from_dlpack() takes kDLCPU tensors; this one is on " +
                          device_text(tensor->dl_tensor.device) +
                          "; use array_from_dlpack() with a CUDA device");
  }
  const Layout l = check(tensor);
  if (mode == DlpackImport::copy) {
    HostArray h = HostArray::empty(l.shape, l.dtype);
    std::memcpy(h.data(), l.data, h.bytes());
    return h;  // owned's destructor calls the deleter
  }
  // Zero-copy: the deleter runs when the last HostArray sharing the pixels dies.
  std::shared_ptr<void> keep(owned.get(), [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  owned.release();
  return HostArray::wrap(l.data, l.shape, l.dtype,
                         std::move(keep));  // a throw here runs keep's deleter
}

Array array_from_dlpack(DLManagedTensor* tensor, const Device& device) {
  if (!tensor) throw InvalidArgument("array_from_dlpack() was given a null tensor");
  Owned owned(tensor);
  const DLDevice where = tensor->dl_tensor.device;
  if (host_device(where.device_type)) {
    const Layout l = check(tensor);
    Array a = Array::empty(l.shape, l.dtype, device);
    a.write(l.data, a.bytes());
    return a;
  }
  if (where.device_type != kDLCUDA) {
    throw InvalidArgument(
        "array_from_dlpack() takes kDLCPU, kDLCUDAHost and kDLCUDA tensors; this one is on " +
        device_text(where));
  }
  const Layout l = check(tensor);
  auto& dev = Access::impl(device);
  if (device.backend() != Backend::cuda || dev.native_ordinal() != where.device_id) {
    throw InvalidArgument("the DLPack tensor lives on CUDA device " +
                          std::to_string(where.device_id) + " but '" + device.label() +
                          "' was asked for; pass the CUDA device with that ordinal");
  }
  detail::require_dtype(device, l.dtype, "a DLPack tensor");
  const std::size_t bytes = l.shape.elements() * size_of(l.dtype);
  DLManagedTensor* raw = owned.get();
  auto mem =
      dev.adopt(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(l.data)), bytes, [raw] {
        if (raw->deleter) raw->deleter(raw);
      });
  owned.release();  // mem's release callback owns it now
  return Access::array(std::make_shared<detail::ArrayImpl>(Access::shared(device), std::move(mem),
                                                           l.shape, l.dtype));
}

}  // namespace gpix
