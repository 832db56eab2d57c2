/* gpix kernel dialect: one kernel source compiles as OpenCL C 1.2 and as CUDA C++ (NVRTC).
 *
 * Write kernels with these names only:
 *   GPIX_KERNEL void name(GPIX_GLOBAL T* out, ...)    entry point
 *   GPIX_FUNC                                         helper function qualifier
 *   GPIX_GLOBAL / GPIX_CONST_GLOBAL / GPIX_LOCAL      pointer address spaces
 *   GPIX_LOCAL_ARRAY(type, name, n)                   work-group shared array, fixed size
 *   gpix_global_id(d), gpix_local_id(d), gpix_group_id(d), gpix_local_size(d),
 *   gpix_num_groups(d), gpix_global_size(d)           work-item indices (d = 0, 1, 2 = x, y, z)
 *   gpix_barrier()                                    work-group barrier on local memory
 *   gpix_u8 gpix_i8 gpix_u16 gpix_i16 gpix_u32 gpix_i32 gpix_u64 gpix_i64 gpix_f32 gpix_f64
 *   gpix_index                                        64-bit unsigned index type
 *   GPIX_INF_F32, GPIX_INF_F64, GPIX_NAN_F32, GPIX_NAN_F64
 *   GPIX_LOWEST(T), GPIX_HIGHEST(T)                   limits of a gpix type name
 *   gpix_isnan(x)
 *   GPIX_IMAGE2D(name), GPIX_IMAGE3D(name)            a sampled image parameter (one logical
 *                                                     argument: KernelArg::image on the host)
 *   gpix_read_image2d(T, name, x, y)                  one pixel of type T (u8 i8 u16 i16 u32
 *   gpix_read_image3d(T, name, x, y, z)               i32 f32) at float coordinates through
 *                                                     the image's sampler (OpenCL read_image*,
 *                                                     CUDA tex2D/tex3D on a texture object)
 *   gpix_atomic_{add,min,max,or}_u32(p, v), gpix_atomic_cmpxchg_u32(p, cmp, v)
 *                                                     32-bit atomics on global or local
 *                                                     memory (core in OpenCL 1.2); each
 *                                                     returns the old value
 *   gpix_atomic_{add,min,max}_u64(p, v), gpix_atomic_cmpxchg_u64(p, cmp, v)
 *                                                     64-bit atomics on global memory, only
 *                                                     with GPIX_ATOMIC64 defined (an
 *                                                     OpenCL device without
 *                                                     cl_khr_int64_{base,extended}_atomics
 *                                                     fails to compile with a clear #error)
 *   gpix_atomic_add_f32(p, v), gpix_atomic_add_f64(p, v)
 *                                                     float adds on global memory (p points
 *                                                     to the float's bits), defined only where
 *                                                     GPIX_HAS_FLOAT_ATOMIC_ADD is (CUDA,
 *                                                     NVIDIA's OpenCL); the f64 one with
 *                                                     GPIX_NEED_FP64. Elsewhere a
 *                                                     compare-and-swap loop stands in
 *   gpix_as_u32(float), gpix_as_f32(u32), gpix_as_u64(double), gpix_as_f64(u64)
 *                                                     bit casts
 *   gpix_div_round(CT, a, d)                          a / d for gpix_i32 or gpix_i64 a and
 *                                                     d > 0, rounded half to even, exactly
 *   gpix_mean_div(T, CT, s, d)                        a box mean's s / d, exact into 8- and
 *                                                     16-bit integers from float32 sums
 *   gpix_round_quotient_f32(s, d, q)                  the integer nearest s / d from an
 *                                                     estimate q within one of it
 *   gpix_mul_add_unfused_f64(a, b, c), gpix_div_rn_f64(a, b)
 *                                                     a * b + c, the product rounded first
 *                                                     (never fused), and a / b, rounded to
 *                                                     nearest; with GPIX_NEED_FP64
 *   GPIX_FLAT_IN(v, T, src, n), GPIX_FLAT_OUT(r, T, dst, n), GPIX_FLAT_N
 *                                                     flat passes of FLAT_K indices per
 *                                                     work-item (FLAT_V4: four elements an
 *                                                     index); see their definition
 *   gpix_v4(T)                                        four-element vector of an 8-, 16- or
 *                                                     32-bit gpix type T (uchar4 ... float4;
 *                                                     members .x .y .z .w), for loads and
 *                                                     stores of 4 * sizeof(T) aligned data
 *   gpix_has_v4(T)                                    1 where gpix_v4(T) exists, else 0
 *   GPIX_GRID_EACH(T, in, n, STEP)                    STEP(v) for every element v of
 *                                                     in[0..n), grid-stride with several
 *                                                     loads in flight; see its definition
 *   GPIX_UNROLL                                       before a loop of constant trip count:
 *                                                     unroll it (a #pragma line inside a
 *                                                     kernel's body would keep the kernel in
 *                                                     every one-entry program of its file)
 * Sizes and strides are kernel arguments, never compile-time constants, so a new image shape
 * reuses the compiled program. */
#ifndef GPIX_DIALECT_H
#define GPIX_DIALECT_H

#define GPIX_UNROLL _Pragma("unroll")

#if defined(__OPENCL_VERSION__)
/* ---------------------------------------------------------------- OpenCL C 1.2 */
#if defined(GPIX_NEED_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define GPIX_KERNEL __kernel
#define GPIX_FUNC static inline
#define GPIX_GLOBAL __global
#define GPIX_CONST_GLOBAL __global const
#define GPIX_LOCAL __local
#define GPIX_LOCAL_ARRAY(type, name, n) __local type name[n]
#define gpix_global_id(d) ((gpix_index)get_global_id(d))
#define gpix_local_id(d) ((gpix_index)get_local_id(d))
#define gpix_group_id(d) ((gpix_index)get_group_id(d))
#define gpix_local_size(d) ((gpix_index)get_local_size(d))
#define gpix_num_groups(d) ((gpix_index)get_num_groups(d))
#define gpix_global_size(d) ((gpix_index)get_global_size(d))
#define gpix__grid_group(d) ((gpix_index)get_group_id(d))
#define gpix__grid_groups(d) ((gpix_index)get_num_groups(d))
#define gpix_barrier() barrier(CLK_LOCAL_MEM_FENCE)
typedef uchar gpix_u8;
typedef char gpix_i8;
typedef ushort gpix_u16;
typedef short gpix_i16;
typedef uint gpix_u32;
typedef int gpix_i32;
typedef ulong gpix_u64;
typedef long gpix_i64;
typedef float gpix_f32;
#if defined(GPIX_NEED_FP64)
typedef double gpix_f64;
#endif
typedef ulong gpix_index;
#define GPIX_INF_F32 INFINITY
#define GPIX_NAN_F32 NAN
/* An image parameter is the image and its sampler (two native arguments). */
#define GPIX_IMAGE2D(name) __read_only image2d_t name, sampler_t name##_sampler
#define GPIX_IMAGE3D(name) __read_only image3d_t name, sampler_t name##_sampler
#define GPIX_IMGREAD_gpix_u8 read_imageui
#define GPIX_IMGREAD_gpix_u16 read_imageui
#define GPIX_IMGREAD_gpix_u32 read_imageui
#define GPIX_IMGREAD_gpix_i8 read_imagei
#define GPIX_IMGREAD_gpix_i16 read_imagei
#define GPIX_IMGREAD_gpix_i32 read_imagei
#define GPIX_IMGREAD_gpix_f32 read_imagef
/* (The coordinate parameters are not called x: .x below is the vector component.) */
#define gpix_read_image2d(T, img, cx, cy) \
  ((T)GPIX_CAT(GPIX_IMGREAD_, T)(img, img##_sampler, (float2)((cx), (cy))).x)
#define gpix_read_image3d(T, img, cx, cy, cz) \
  ((T)GPIX_CAT(GPIX_IMGREAD_, T)(img, img##_sampler, (float4)((cx), (cy), (cz), 0.0f)).x)
#define GPIX_INF_F64 ((double)INFINITY)
#define GPIX_NAN_F64 ((double)NAN)
#define gpix_atomic_add_u32(p, v) atomic_add((p), (gpix_u32)(v))
#define gpix_atomic_min_u32(p, v) atomic_min((p), (gpix_u32)(v))
#define gpix_atomic_max_u32(p, v) atomic_max((p), (gpix_u32)(v))
#define gpix_atomic_or_u32(p, v) atomic_or((p), (gpix_u32)(v))
#define gpix_atomic_cmpxchg_u32(p, c, v) atomic_cmpxchg((p), (gpix_u32)(c), (gpix_u32)(v))
#if defined(GPIX_ATOMIC64)
#if !defined(cl_khr_int64_base_atomics) || !defined(cl_khr_int64_extended_atomics)
#error \
    "gpix: this operation needs 64-bit atomics (cl_khr_int64_base_atomics and cl_khr_int64_extended_atomics), which this OpenCL device lacks; use a CUDA device or another OpenCL device"
#endif
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#define gpix_atomic_add_u64(p, v) atom_add((p), (gpix_u64)(v))
#define gpix_atomic_min_u64(p, v) atom_min((p), (gpix_u64)(v))
#define gpix_atomic_max_u64(p, v) atom_max((p), (gpix_u64)(v))
#define gpix_atomic_cmpxchg_u64(p, c, v) atom_cmpxchg((p), (gpix_u64)(c), (gpix_u64)(v))
#endif
#define gpix_as_u32(x) as_uint(x)
#define gpix_as_f32(x) as_float(x)
#define gpix_as_u64(x) as_ulong(x)
#define gpix_as_f64(x) as_double(x)
/* NVIDIA's OpenCL (its cl_nv_pragma_unroll defined; the host passes GPIX_NV_SM, the compute
 * capability as major * 10 + minor) has no float atomic add in OpenCL C 1.2 but takes inline
 * PTX. A float64 compare-and-swap loop there took 42 ms for label_statistics of a 256^3 blob
 * image whose one large region every work-group meets, 0.4 ms with these (H200,
 * bench/RESULTS.md 2026-11-28). PTX's float64 add needs sm_60: older cards keep the loop for
 * both (GPIX_HAS_FLOAT_ATOMIC_ADD covers the pair). p holds a global address. */
#if defined(cl_nv_pragma_unroll) && defined(GPIX_NV_SM) && GPIX_NV_SM >= 60
#define GPIX_HAS_FLOAT_ATOMIC_ADD 1
#define gpix_atomic_add_f32(p, v) \
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p), "f"((float)(v)) : "memory")
#if defined(GPIX_NEED_FP64)
#define gpix_atomic_add_f64(p, v) \
  asm volatile("red.global.add.f64 [%0], %1;" ::"l"(p), "d"((double)(v)) : "memory")
#endif
#endif

#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
/* ---------------------------------------------------------------- CUDA C++ (NVRTC) */
#define GPIX_KERNEL extern "C" __global__
#define GPIX_FUNC static __device__ __forceinline__
#define GPIX_GLOBAL
#define GPIX_CONST_GLOBAL const
#define GPIX_LOCAL
#define GPIX_LOCAL_ARRAY(type, name, n) __shared__ type name[n]
typedef unsigned long long gpix_index;
__device__ __forceinline__ gpix_index gpix__dim(const uint3& v, int d) {
  return d == 0 ? v.x : (d == 1 ? v.y : v.z);
}
__device__ __forceinline__ gpix_index gpix__dim(const dim3& v, int d) {
  return d == 0 ? v.x : (d == 1 ? v.y : v.z);
}
#define gpix_local_id(d) gpix__dim(threadIdx, d)
#define gpix_group_id(d) gpix__dim(blockIdx, d)
#define gpix_local_size(d) gpix__dim(blockDim, d)
#define gpix_num_groups(d) gpix__dim(gridDim, d)
#define gpix_global_id(d) (gpix_group_id(d) * gpix_local_size(d) + gpix_local_id(d))
#define gpix_global_size(d) (gpix_num_groups(d) * gpix_local_size(d))
#define gpix__grid_group(d) gpix__dim(blockIdx, d)
#define gpix__grid_groups(d) gpix__dim(gridDim, d)
#define gpix_barrier() __syncthreads()
typedef unsigned char gpix_u8;
typedef signed char gpix_i8;
typedef unsigned short gpix_u16;
typedef short gpix_i16;
typedef unsigned int gpix_u32;
typedef int gpix_i32;
typedef unsigned long long gpix_u64;
typedef long long gpix_i64;
typedef float gpix_f32;
typedef double gpix_f64;
/* An image parameter is a texture object made from the array and the sampler. */
#define GPIX_IMAGE2D(name) cudaTextureObject_t name
#define GPIX_IMAGE3D(name) cudaTextureObject_t name
#define gpix_read_image2d(T, img, x, y) tex2D<T>((img), (x), (y))
#define gpix_read_image3d(T, img, x, y, z) tex3D<T>((img), (x), (y), (z))
#define GPIX_INF_F32 __int_as_float(0x7f800000)
#define GPIX_NAN_F32 __int_as_float(0x7fc00000)
#define GPIX_INF_F64 __longlong_as_double(0x7ff0000000000000LL)
#define GPIX_NAN_F64 __longlong_as_double(0x7ff8000000000000LL)
#define gpix_atomic_add_u32(p, v) atomicAdd((unsigned int*)(p), (unsigned int)(v))
#define gpix_atomic_min_u32(p, v) atomicMin((unsigned int*)(p), (unsigned int)(v))
#define gpix_atomic_max_u32(p, v) atomicMax((unsigned int*)(p), (unsigned int)(v))
#define gpix_atomic_or_u32(p, v) atomicOr((unsigned int*)(p), (unsigned int)(v))
#define gpix_atomic_cmpxchg_u32(p, c, v) \
  atomicCAS((unsigned int*)(p), (unsigned int)(c), (unsigned int)(v))
#if defined(GPIX_ATOMIC64)
#define gpix_atomic_add_u64(p, v) atomicAdd((unsigned long long*)(p), (unsigned long long)(v))
#define gpix_atomic_min_u64(p, v) atomicMin((unsigned long long*)(p), (unsigned long long)(v))
#define gpix_atomic_max_u64(p, v) atomicMax((unsigned long long*)(p), (unsigned long long)(v))
#define gpix_atomic_cmpxchg_u64(p, c, v) \
  atomicCAS((unsigned long long*)(p), (unsigned long long)(c), (unsigned long long)(v))
#endif
/* Native float atomics (no retry loop: a compare-and-swap loop on one contended address
 * retries its competitors, a red.add does not). */
#define GPIX_HAS_FLOAT_ATOMIC_ADD 1
#define gpix_atomic_add_f32(p, v) atomicAdd((float*)(p), (float)(v))
#if defined(GPIX_NEED_FP64)
#define gpix_atomic_add_f64(p, v) atomicAdd((double*)(p), (double)(v))
#endif
#define gpix_as_u32(x) __float_as_uint(x)
#define gpix_as_f32(x) __uint_as_float(x)
#define gpix_as_u64(x) ((gpix_u64)__double_as_longlong(x))
#define gpix_as_f64(x) __longlong_as_double((long long)(x))

#else
#error "gpix kernels compile as OpenCL C or as CUDA C++ under NVRTC"
#endif

/* ---------------------------------------------------------------- both */
/* A swapped grid. CUDA launches at most 65535 work-groups on y and z (2^31 - 1 on x): a tall
 * 2D image's one-row-a-group pass, or a deep volume's, has more. The host then launches the
 * grid with that axis (GPIX_GRID_SWAP: 1 or 2) and axis 0 trading places, and these ids undo
 * the trade, so that a kernel sees the grid it asked for; the work-group's own shape (local
 * sizes and ids) stays as it is. Only such launches carry the define (filters/launch.cpp):
 * one more program per kernel that needs it, never one per image shape. */
#if defined(GPIX_GRID_SWAP)
#undef gpix_group_id
#undef gpix_num_groups
#undef gpix_global_id
#undef gpix_global_size
#define gpix__swapped(d) ((d) == 0 ? GPIX_GRID_SWAP : ((d) == GPIX_GRID_SWAP ? 0 : (d)))
#define gpix_group_id(d) gpix__grid_group(gpix__swapped(d))
#define gpix_num_groups(d) gpix__grid_groups(gpix__swapped(d))
#define gpix_global_id(d) (gpix_group_id(d) * gpix_local_size(d) + gpix_local_id(d))
#define gpix_global_size(d) (gpix_num_groups(d) * gpix_local_size(d))
#endif
#define gpix_isnan(x) ((x) != (x))
#define GPIX_LOWEST_gpix_u8 ((gpix_u8)0)
#define GPIX_HIGHEST_gpix_u8 ((gpix_u8)255)
#define GPIX_LOWEST_gpix_i8 ((gpix_i8)(-128))
#define GPIX_HIGHEST_gpix_i8 ((gpix_i8)127)
#define GPIX_LOWEST_gpix_u16 ((gpix_u16)0)
#define GPIX_HIGHEST_gpix_u16 ((gpix_u16)65535)
#define GPIX_LOWEST_gpix_i16 ((gpix_i16)(-32768))
#define GPIX_HIGHEST_gpix_i16 ((gpix_i16)32767)
#define GPIX_LOWEST_gpix_u32 ((gpix_u32)0)
#define GPIX_HIGHEST_gpix_u32 ((gpix_u32)0xffffffffu)
#define GPIX_LOWEST_gpix_i32 ((gpix_i32)(-2147483647 - 1))
#define GPIX_HIGHEST_gpix_i32 ((gpix_i32)2147483647)
#define GPIX_LOWEST_gpix_u64 ((gpix_u64)0)
#define GPIX_HIGHEST_gpix_u64 ((gpix_u64)0xffffffffffffffffull)
#define GPIX_LOWEST_gpix_i64 ((gpix_i64)(-9223372036854775807ll - 1))
#define GPIX_HIGHEST_gpix_i64 ((gpix_i64)9223372036854775807ll)
#define GPIX_LOWEST_gpix_f32 (-GPIX_INF_F32)
#define GPIX_HIGHEST_gpix_f32 GPIX_INF_F32
#define GPIX_LOWEST_gpix_f64 (-GPIX_INF_F64)
#define GPIX_HIGHEST_gpix_f64 GPIX_INF_F64
#define GPIX_CAT_(a, b) a##b
#define GPIX_CAT(a, b) GPIX_CAT_(a, b)
#define GPIX_LOWEST(T) GPIX_CAT(GPIX_LOWEST_, T)
#define GPIX_HIGHEST(T) GPIX_CAT(GPIX_HIGHEST_, T)
/* The vector type names are the same in OpenCL C and CUDA (64-bit ones are not: CUDA 13
 * deprecates its 4-element 64-bit vectors). */
#define GPIX_V4_gpix_u8 uchar4
#define GPIX_V4_gpix_i8 char4
#define GPIX_V4_gpix_u16 ushort4
#define GPIX_V4_gpix_i16 short4
#define GPIX_V4_gpix_u32 uint4
#define GPIX_V4_gpix_i32 int4
#define GPIX_V4_gpix_f32 float4
#define gpix_v4(T) GPIX_CAT(GPIX_V4_, T)
/* gpix_has_v4(T): 1 where gpix_v4(T) exists, else 0 (usable in #if). */
#define GPIX_HAS_V4_gpix_u8 1
#define GPIX_HAS_V4_gpix_i8 1
#define GPIX_HAS_V4_gpix_u16 1
#define GPIX_HAS_V4_gpix_i16 1
#define GPIX_HAS_V4_gpix_u32 1
#define GPIX_HAS_V4_gpix_i32 1
#define GPIX_HAS_V4_gpix_f32 1
#define gpix_has_v4(T) GPIX_CAT(GPIX_HAS_V4_, T)

/* ---------------------------------------------------------------- conversions
 * gpix_sat_<t>(x) converts a float or double x to type t: integers round half to even and
 * saturate to the type's range, NaN becomes 0; floats convert as C does.
 * gpix_clampd / gpix_clampf clamp. */
#if defined(__OPENCL_VERSION__)
#define gpix_rint(x) rint(x)
#else
#define gpix_rint(x) rint(x)
#endif
#define GPIX_SAT_INT(T, LO, HI)                                              \
  GPIX_FUNC T gpix_sat_##T##_f(float x) {                                    \
    if (x != x) return (T)0;                                                 \
    x = gpix_rint(x);                                                        \
    return x <= (float)(LO) ? (T)(LO) : (x >= (float)(HI) ? (T)(HI) : (T)x); \
  }
GPIX_SAT_INT(gpix_u8, 0, 255)
GPIX_SAT_INT(gpix_i8, -128, 127)
GPIX_SAT_INT(gpix_u16, 0, 65535)
GPIX_SAT_INT(gpix_i16, -32768, 32767)
#undef GPIX_SAT_INT
/* float32 into 32- and 64-bit integers: programs whose compute type is float32 with such a
 * T_OUT (the order filters', which need no float64, neighbourhood.cpp's order_defines) compile
 * them; their integer kernels never call them. 2^31, 2^32, 2^63 and 2^64 are exact floats. */
#define GPIX_SAT_WIDE_F(T, LO, HI)                                                          \
  GPIX_FUNC T gpix_sat_##T##_f(float x) {                                                   \
    if (x != x) return (T)0;                                                                \
    x = gpix_rint(x);                                                                       \
    return x < (LO) ? GPIX_LOWEST(T) : (x >= (HI) ? GPIX_HIGHEST(T) : (T)x);                \
  }
GPIX_SAT_WIDE_F(gpix_u32, 0.0f, 4294967296.0f)
GPIX_SAT_WIDE_F(gpix_i32, -2147483648.0f, 2147483648.0f)
GPIX_SAT_WIDE_F(gpix_u64, 0.0f, 18446744073709551616.0f)
GPIX_SAT_WIDE_F(gpix_i64, -9223372036854775808.0f, 9223372036854775808.0f)
#undef GPIX_SAT_WIDE_F
#if defined(GPIX_NEED_FP64) || !defined(__OPENCL_VERSION__)
#define GPIX_SAT_INT_D(T, LO, HI)                                              \
  GPIX_FUNC T gpix_sat_##T##_d(double x) {                                     \
    if (x != x) return (T)0;                                                   \
    x = gpix_rint(x);                                                          \
    return x <= (double)(LO) ? (T)(LO) : (x >= (double)(HI) ? (T)(HI) : (T)x); \
  }
GPIX_SAT_INT_D(gpix_u8, 0, 255)
GPIX_SAT_INT_D(gpix_i8, -128, 127)
GPIX_SAT_INT_D(gpix_u16, 0, 65535)
GPIX_SAT_INT_D(gpix_i16, -32768, 32767)
GPIX_SAT_INT_D(gpix_u32, 0, 4294967295.0)
GPIX_SAT_INT_D(gpix_i32, -2147483648.0, 2147483647.0)
#undef GPIX_SAT_INT_D
/* 2^64 and 2^63 are exact doubles; the largest doubles below them convert exactly. */
GPIX_FUNC gpix_u64 gpix_sat_gpix_u64_d(double x) {
  if (x != x) return (gpix_u64)0;
  x = gpix_rint(x);
  return x <= 0.0 ? (gpix_u64)0
                  : (x >= 18446744073709551616.0 ? GPIX_HIGHEST_gpix_u64 : (gpix_u64)x);
}
GPIX_FUNC gpix_i64 gpix_sat_gpix_i64_d(double x) {
  if (x != x) return (gpix_i64)0;
  x = gpix_rint(x);
  return x < -9223372036854775808.0
             ? GPIX_LOWEST_gpix_i64
             : (x >= 9223372036854775808.0 ? GPIX_HIGHEST_gpix_i64 : (gpix_i64)x);
}
GPIX_FUNC gpix_f32 gpix_sat_gpix_f32_d(double x) {
  return (gpix_f32)x;
}
GPIX_FUNC gpix_f64 gpix_sat_gpix_f64_d(double x) {
  return x;
}
GPIX_FUNC gpix_f64 gpix_sat_gpix_f64_f(float x) {
  return (gpix_f64)x;
}
/* a * b + c with the product rounded before the add, and a / b rounded to nearest, as a host
 * without fused multiply-adds (and numpy) computes them: for values that the host's and the
 * device's code must give to the bit. CUDA's round-to-nearest intrinsics are never fused. On
 * NVIDIA's OpenCL, histogram.kernel's edges through a volatile product came out one bit off
 * numpy's in places (test_filters_geometry, H200, bench/RESULTS.md 2026-12-04), though a probe
 * of the expression alone matched; PTX with explicit rounding, which ptxas never contracts,
 * leaves nothing to the compiler there. Other OpenCL compilers get the contract pragma and a
 * volatile product (PoCL: numpy's edges to the bit). */
#if defined(__OPENCL_VERSION__) && defined(cl_nv_pragma_unroll)
GPIX_FUNC gpix_f64 gpix_mul_add_unfused_f64(gpix_f64 a, gpix_f64 b, gpix_f64 c) {
  gpix_f64 p, s;
  asm("mul.rn.f64 %0, %1, %2;" : "=d"(p) : "d"(a), "d"(b));
  asm("add.rn.f64 %0, %1, %2;" : "=d"(s) : "d"(p), "d"(c));
  return s;
}
GPIX_FUNC gpix_f64 gpix_div_rn_f64(gpix_f64 a, gpix_f64 b) {
  gpix_f64 q;
  asm("div.rn.f64 %0, %1, %2;" : "=d"(q) : "d"(a), "d"(b));
  return q;
}
#elif defined(__OPENCL_VERSION__)
GPIX_FUNC gpix_f64 gpix_mul_add_unfused_f64(gpix_f64 a, gpix_f64 b, gpix_f64 c) {
#pragma OPENCL FP_CONTRACT OFF
  volatile gpix_f64 p = a * b;
  return p + c;
}
/* OpenCL's double division is correctly rounded. */
GPIX_FUNC gpix_f64 gpix_div_rn_f64(gpix_f64 a, gpix_f64 b) {
  return a / b;
}
#else
GPIX_FUNC gpix_f64 gpix_mul_add_unfused_f64(gpix_f64 a, gpix_f64 b, gpix_f64 c) {
  return __dadd_rn(__dmul_rn(a, b), c);
}
GPIX_FUNC gpix_f64 gpix_div_rn_f64(gpix_f64 a, gpix_f64 b) {
  return __ddiv_rn(a, b);
}
#endif
#endif
GPIX_FUNC gpix_f32 gpix_sat_gpix_f32_f(float x) {
  return x;
}
/* gpix_sat(T, CT, x): convert x of compute type CT (gpix_f32 or gpix_f64) to T. */
#define GPIX_SAT_SUFFIX_gpix_f32 _f
#define GPIX_SAT_SUFFIX_gpix_f64 _d
#define gpix_sat(T, CT, x) GPIX_CAT(GPIX_CAT(gpix_sat_, T), GPIX_CAT(GPIX_SAT_SUFFIX_, CT))(x)

/* gpix_div_round(CT, a, d): a / d rounded to the nearest integer, half to even, for an integer
 * CT (gpix_i32 or gpix_i64) and d > 0: exact where a float quotient is not (the box means of
 * 8- and 16-bit images over windows past float32's exact range, neighbourhood.cpp's
 * int_sum_type). A float32 quotient truncated is within one or two of a / d where |a / d| is
 * below 2^16 (a mean of such images); the remainder corrects it, then rounds. d == 1 (a pass
 * that is not the last) returns a as it is. */
#define GPIX_DIV_ROUND(CT)                                         \
  GPIX_FUNC CT gpix_div_round_##CT(CT a, CT d) {                   \
    if (d == 1) return a;                                          \
    CT q = (CT)((gpix_f32)a / (gpix_f32)d);                        \
    CT r = a - q * d;                                              \
    while (r < 0) {                                                \
      q -= 1;                                                      \
      r += d;                                                      \
    }                                                              \
    while (r >= d) {                                               \
      q += 1;                                                      \
      r -= d;                                                      \
    }                                                              \
    return 2 * r > d || (2 * r == d && (q & 1) != 0) ? q + 1 : q; \
  }
GPIX_DIV_ROUND(gpix_i32)
GPIX_DIV_ROUND(gpix_i64)
#undef GPIX_DIV_ROUND
#define gpix_div_round(CT, a, d) GPIX_CAT(gpix_div_round_, CT)(a, d)

/* gpix_round_quotient_f32(s, d, q): the integer nearest s / d, half to even, for float32 s
 * and d > 0 holding integers below 2^24, from an estimate q (an integer within one of it):
 * the remainder s - q d is exact in float32 and decides. */
GPIX_FUNC gpix_f32 gpix_round_quotient_f32(gpix_f32 s, gpix_f32 d, gpix_f32 q) {
  const gpix_f32 r2 = 2.0f * (s - q * d);
  const int odd = (((gpix_i32)q) & 1) != 0;
  if (r2 > d || (r2 == d && odd)) q += 1.0f;
  if (r2 < -d || (r2 == -d && odd)) q -= 1.0f;
  return q;
}
/* gpix_mean_div(T, CT, s, d): the last step of a box mean, s / d. Into an integer T from
 * float32 sums of 8- and 16-bit values (integers below 2^24: neighbourhood.cpp's int_sum_type
 * keeps them there) the rounded quotient is exact only where the division is correctly
 * rounded: CUDA's is (NVRTC's -prec-div=true, its default, which gpix keeps); OpenCL 1.2 allows
 * float32 division 2.5 ulp, which near 65535 is 0.01, more than a window of 51 keeps a mean
 * from a half, so there rint(s / d) is only the estimate of gpix_round_quotient_f32.
 * Otherwise (a float T, float64 sums) s / d. */
#if defined(__OPENCL_VERSION__)
#define gpix_mean_div(T, CT, s, d)                                                             \
  (((T)0.5f == (T)0 && sizeof(CT) == 4)                                                        \
       ? (CT)gpix_round_quotient_f32((gpix_f32)(s), (gpix_f32)(d),                             \
                                     gpix_rint((gpix_f32)(s) / (gpix_f32)(d)))                 \
       : (s) / (d))
#else
#define gpix_mean_div(T, CT, s, d) ((s) / (d))
#endif

/* ---------------------------------------------------------------- ordered keys
 * The medians sort keys (gpix_key_t(T)): integers as they are, floats as their bits turned
 * into signed integers of the same order (the magnitude bits of negative values flipped). A
 * compare-and-swap is then two integer min/max instructions, where a float one that keeps NaN
 * costs a compare and two selects (the radius-1 medians spend most of their time there), and
 * every value has a place: NaN sorts above +inf (a NaN with the sign bit set below -inf) and
 * -0 just below +0. gpix_key(T, v) makes a key of a T, gpix_unkey(T, k) gives the value back. */
#define GPIX_KT_gpix_u8 gpix_u8
#define GPIX_KT_gpix_i8 gpix_i8
#define GPIX_KT_gpix_u16 gpix_u16
#define GPIX_KT_gpix_i16 gpix_i16
#define GPIX_KT_gpix_u32 gpix_u32
#define GPIX_KT_gpix_i32 gpix_i32
#define GPIX_KT_gpix_u64 gpix_u64
#define GPIX_KT_gpix_i64 gpix_i64
#define GPIX_KT_gpix_f32 gpix_i32
#define GPIX_KT_gpix_f64 gpix_i64
#define GPIX_KEY_INT(v) (v)
#define GPIX_KEY_gpix_u8 GPIX_KEY_INT
#define GPIX_KEY_gpix_i8 GPIX_KEY_INT
#define GPIX_KEY_gpix_u16 GPIX_KEY_INT
#define GPIX_KEY_gpix_i16 GPIX_KEY_INT
#define GPIX_KEY_gpix_u32 GPIX_KEY_INT
#define GPIX_KEY_gpix_i32 GPIX_KEY_INT
#define GPIX_KEY_gpix_u64 GPIX_KEY_INT
#define GPIX_KEY_gpix_i64 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_u8 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_i8 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_u16 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_i16 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_u32 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_i32 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_u64 GPIX_KEY_INT
#define GPIX_UNKEY_gpix_i64 GPIX_KEY_INT
/* Flipping the low 31 (63) bits when the sign bit is set is its own inverse. */
#define GPIX_FLIP32(b) ((b) ^ ((gpix_u32)((gpix_i32)(b) >> 31) >> 1))
#define GPIX_FLIP64(b) ((b) ^ ((gpix_u64)((gpix_i64)(b) >> 63) >> 1))
#define GPIX_KEY_gpix_f32(v) ((gpix_i32)GPIX_FLIP32(gpix_as_u32(v)))
#define GPIX_UNKEY_gpix_f32(k) gpix_as_f32(GPIX_FLIP32((gpix_u32)(k)))
#define GPIX_KEY_gpix_f64(v) ((gpix_i64)GPIX_FLIP64(gpix_as_u64(v)))
#define GPIX_UNKEY_gpix_f64(k) gpix_as_f64(GPIX_FLIP64((gpix_u64)(k)))
#define gpix_key_t(T) GPIX_CAT(GPIX_KT_, T)
#define gpix_key(T, v) GPIX_CAT(GPIX_KEY_, T)(v)
#define gpix_unkey(T, k) GPIX_CAT(GPIX_UNKEY_, T)(k)

/* ---------------------------------------------------------------- minimum and maximum keys
 * The box minimum and maximum (separable.kernel, tiled.kernel, neighbourhood.kernel's r1
 * kernels) compare keys as well, in the order of IEEE 754-2019's minimum and maximum: a NaN
 * in the window makes the result NaN (whatever its sign and payload), -0 is below +0,
 * integers compare as they are. Comparing the floats themselves left the result to the
 * order in which a kernel visits the window: the separable passes never let a NaN in (an
 * all-NaN window gave +inf), the r1 kernels kept one that came first. A NaN becomes the
 * lowest key for minima and the highest for maxima (the medians' keys put the bit patterns of
 * NaN there already, apart from their sign), so every visiting order gives the same bits; it
 * comes back as the canonical quiet NaN.
 *   gpix_min_key(T, v), gpix_max_key(T, v)      the key (type gpix_key_t(T)) of a T
 *   gpix_min_value(T, k), gpix_max_value(T, k)  the T of a key
 *   GPIX_MIN_KEY_INIT(T), GPIX_MAX_KEY_INIT(T)  above (below) every key: a reduction's start */
#define GPIX_MMC_gpix_u8 INT
#define GPIX_MMC_gpix_i8 INT
#define GPIX_MMC_gpix_u16 INT
#define GPIX_MMC_gpix_i16 INT
#define GPIX_MMC_gpix_u32 INT
#define GPIX_MMC_gpix_i32 INT
#define GPIX_MMC_gpix_u64 INT
#define GPIX_MMC_gpix_i64 INT
#define GPIX_MMC_gpix_f32 F32
#define GPIX_MMC_gpix_f64 F64
#define GPIX_I32_MIN (-(gpix_i32)0x7fffffff - 1)
#define GPIX_I32_MAX ((gpix_i32)0x7fffffff)
#define GPIX_I64_MIN (-(gpix_i64)0x7fffffffffffffff - 1)
#define GPIX_I64_MAX ((gpix_i64)0x7fffffffffffffff)
#define GPIX_MINKEY_INT(T, v) (v)
#define GPIX_MAXKEY_INT(T, v) (v)
#define GPIX_MINVAL_INT(T, k) (k)
#define GPIX_MAXVAL_INT(T, k) (k)
#define GPIX_MININIT_INT(T) GPIX_HIGHEST(T)
#define GPIX_MAXINIT_INT(T) GPIX_LOWEST(T)
#define GPIX_MINKEY_F32(T, v) (gpix_isnan(v) ? GPIX_I32_MIN : GPIX_KEY_gpix_f32(v))
#define GPIX_MAXKEY_F32(T, v) (gpix_isnan(v) ? GPIX_I32_MAX : GPIX_KEY_gpix_f32(v))
/* The canonical quiet NaN by its bits: OpenCL's NAN is 0x7fffffff on PoCL, 0x7fc00000 elsewhere. */
#define GPIX_QNAN_F32 gpix_as_f32((gpix_u32)0x7fc00000u)
#define GPIX_QNAN_F64 gpix_as_f64((gpix_u64)0x7ff8000000000000ul)
#define GPIX_MINVAL_F32(T, k) ((k) == GPIX_I32_MIN ? GPIX_QNAN_F32 : GPIX_UNKEY_gpix_f32(k))
#define GPIX_MAXVAL_F32(T, k) ((k) == GPIX_I32_MAX ? GPIX_QNAN_F32 : GPIX_UNKEY_gpix_f32(k))
#define GPIX_MININIT_F32(T) GPIX_I32_MAX
#define GPIX_MAXINIT_F32(T) GPIX_I32_MIN
#define GPIX_MINKEY_F64(T, v) (gpix_isnan(v) ? GPIX_I64_MIN : GPIX_KEY_gpix_f64(v))
#define GPIX_MAXKEY_F64(T, v) (gpix_isnan(v) ? GPIX_I64_MAX : GPIX_KEY_gpix_f64(v))
#define GPIX_MINVAL_F64(T, k) ((k) == GPIX_I64_MIN ? GPIX_QNAN_F64 : GPIX_UNKEY_gpix_f64(k))
#define GPIX_MAXVAL_F64(T, k) ((k) == GPIX_I64_MAX ? GPIX_QNAN_F64 : GPIX_UNKEY_gpix_f64(k))
#define GPIX_MININIT_F64(T) GPIX_I64_MAX
#define GPIX_MAXINIT_F64(T) GPIX_I64_MIN
#define GPIX_MM(what, T) GPIX_CAT(what, GPIX_CAT(GPIX_MMC_, T))
#define gpix_min_key(T, v) GPIX_MM(GPIX_MINKEY_, T)(T, v)
#define gpix_max_key(T, v) GPIX_MM(GPIX_MAXKEY_, T)(T, v)
#define gpix_min_value(T, k) GPIX_MM(GPIX_MINVAL_, T)(T, k)
#define gpix_max_value(T, k) GPIX_MM(GPIX_MAXVAL_, T)(T, k)
#define GPIX_MIN_KEY_INIT(T) GPIX_MM(GPIX_MININIT_, T)(T)
#define GPIX_MAX_KEY_INIT(T) GPIX_MM(GPIX_MAXINIT_, T)(T)

/* GPIX_GRID_EACH(T, in, n, STEP): STEP(v) (a macro's name) for each T v of in[0..n) that this
 * work-item takes, a grid apart. The loads of eight elements (four of 4 or 8 bytes) are issued
 * before their steps, so that many bytes are in flight per work-item: one element at a time
 * left the histograms latency-bound (ncu: warps waiting on memory with 86-89 % occupancy;
 * a uint16 histogram at 3.5x the copy of its image, bench/RESULTS.md, 2026-11-29), as it had
 * the statistics (stats.kernel's stats_partial, whose measured split this follows). */
#define GPIX_GRID_EACH_K_(T, in, n, STEP, K)                                                   \
  for (; ge_i_ + ((K)-1) * ge_stride_ < (n); ge_i_ += (K) * ge_stride_) {                      \
    T ge_v_[K];                                                                                \
    GPIX_UNROLL for (int ge_k_ = 0; ge_k_ < (K); ++ge_k_) ge_v_[ge_k_] =                       \
        (in)[ge_i_ + (gpix_index)ge_k_ * ge_stride_];                                          \
    GPIX_UNROLL for (int ge_k_ = 0; ge_k_ < (K); ++ge_k_) STEP(ge_v_[ge_k_])                   \
  }
#define GPIX_GRID_EACH(T, in, n, STEP)                                                         \
  {                                                                                            \
    const gpix_index ge_stride_ = gpix_global_size(0);                                         \
    gpix_index ge_i_ = gpix_global_id(0);                                                      \
    if (sizeof(T) <= 2) GPIX_GRID_EACH_K_(T, in, n, STEP, 8)                                   \
    GPIX_GRID_EACH_K_(T, in, n, STEP, 4)                                                       \
    for (; ge_i_ < (n); ge_i_ += ge_stride_) STEP((in)[ge_i_])                                 \
  }

/* Flat passes over n elements where a work-item takes FLAT_K indices (a define the host sets
 * with the grid, filters/launch.h's add_flat_define()), a work-group's size apart: a warp's
 * loads of one index stay contiguous, and each work-item keeps FLAT_K loads in flight. One
 * element per work-item left 8- and 16-bit pointwise filters at 2.4-4.8x the copy of the same
 * array (bench/RESULTS.md, 2026-11-28): too few bytes in flight per SM to cover DRAM's
 * latency. With FLAT_V4 (1- and 2-byte inputs, every buffer aligned to its four-element
 * vector, n >= 4; the host checks) an index is four elements, loaded and stored as gpix_v4 vectors:
 * 16 single-byte loads a work-item still ran at 2x the copy on an H200, four uchar4 loads at
 * 1.08x. A kernel body:
 *   GPIX_FLAT_IN(v, T, src, n)      T v[GPIX_FLAT_N]: the work-item's elements of src (0 past n)
 *   T_OUT r[GPIX_FLAT_N]; GPIX_UNROLL for (int e = 0; e < GPIX_FLAT_N; ++e) r[e] = f(v[e]);
 *   GPIX_FLAT_OUT(r, T_OUT, dst, n)  stores those inside [0, n)
 * Elements past n are computed on zeros and never stored. */
#if defined(FLAT_V4) && FLAT_V4
#define GPIX_FLAT_W 4
#else
#define GPIX_FLAT_W 1
#endif
#define GPIX_FLAT_N ((FLAT_K) * GPIX_FLAT_W)
#define gpix_flat_index(k)                                                       \
  (gpix_group_id(0) * gpix_local_size(0) * (gpix_index)(FLAT_K) +                \
   (gpix_index)(k) * gpix_local_size(0) + gpix_local_id(0))
#if GPIX_FLAT_W == 4
/* Straight-line loads: every work-item loads a whole vector for each k (vector 0 where its
 * own runs past n; the host asks n >= 4), and only then redoes the indices that run past n
 * element by element. Loads inside an if/else, each unpacked in its branch, waited for one
 * another: binary_logic on two uint8 masks ran at 2.9x the copy so (bench/RESULTS.md). */
#define GPIX_FLAT_IN(v, T, src, n)                                                      \
  T v[GPIX_FLAT_N];                                                                     \
  GPIX_UNROLL for (int v##_k = 0; v##_k < (FLAT_K); ++v##_k) {                          \
    const gpix_index v##_e = 4 * gpix_flat_index(v##_k);                                \
    const gpix_v4(T) v##_q =                                                            \
        ((GPIX_CONST_GLOBAL gpix_v4(T)*)(src))[v##_e + 3 < (n) ? v##_e / 4 : 0];        \
    v[4 * v##_k] = v##_q.x;                                                             \
    v[4 * v##_k + 1] = v##_q.y;                                                         \
    v[4 * v##_k + 2] = v##_q.z;                                                         \
    v[4 * v##_k + 3] = v##_q.w;                                                         \
  }                                                                                     \
  GPIX_UNROLL for (int v##_k = 0; v##_k < (FLAT_K); ++v##_k) {                          \
    const gpix_index v##_e = 4 * gpix_flat_index(v##_k);                                \
    if (v##_e + 3 >= (n)) {                                                             \
      GPIX_UNROLL for (int v##_c = 0; v##_c < 4; ++v##_c) v[4 * v##_k + v##_c] =        \
          v##_e + v##_c < (n) ? (src)[v##_e + v##_c] : (T)0;                            \
    }                                                                                   \
  }
#define GPIX_FLAT_OUT(r, T, dst, n)                                                     \
  GPIX_UNROLL for (int r##_k = 0; r##_k < (FLAT_K); ++r##_k) {                          \
    const gpix_index r##_e = 4 * gpix_flat_index(r##_k);                                \
    if (r##_e + 3 < (n)) {                                                              \
      gpix_v4(T) r##_q;                                                                 \
      r##_q.x = r[4 * r##_k];                                                           \
      r##_q.y = r[4 * r##_k + 1];                                                       \
      r##_q.z = r[4 * r##_k + 2];                                                       \
      r##_q.w = r[4 * r##_k + 3];                                                       \
      ((GPIX_GLOBAL gpix_v4(T)*)(dst))[r##_e / 4] = r##_q;                              \
    } else {                                                                            \
      GPIX_UNROLL for (int r##_c = 0; r##_c < 4; ++r##_c) {                             \
        if (r##_e + r##_c < (n)) (dst)[r##_e + r##_c] = r[4 * r##_k + r##_c];           \
      }                                                                                 \
    }                                                                                   \
  }
#else
#define GPIX_FLAT_IN(v, T, src, n)                              \
  T v[GPIX_FLAT_N];                                             \
  GPIX_UNROLL for (int v##_k = 0; v##_k < (FLAT_K); ++v##_k) {  \
    const gpix_index v##_i = gpix_flat_index(v##_k);            \
    v[v##_k] = v##_i < (n) ? (src)[v##_i] : (T)0;               \
  }
#define GPIX_FLAT_OUT(r, T, dst, n)                             \
  GPIX_UNROLL for (int r##_k = 0; r##_k < (FLAT_K); ++r##_k) {  \
    const gpix_index r##_i = gpix_flat_index(r##_k);            \
    if (r##_i < (n)) (dst)[r##_i] = r[r##_k];                   \
  }
#endif

#endif /* GPIX_DIALECT_H */
