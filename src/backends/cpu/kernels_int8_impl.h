#pragma once
// The int8 part of the single kernel source (included by kernels_impl.h, compiled per ISA with
// it): per-row activation quantization and the epilogue of an int8 GEMM. Same rules as
// kernels_impl.h: internal linkage, no library templates.
//
// Quantization is symmetric per row (per token): scale = max|x| / 127, q = round(x / scale) in
// [-127, 127]. A per-token scale follows each token's own range; a per-tensor one (ONNX Runtime's
// dynamic quantization) lets a single outlier token coarsen every other token of the batch.

namespace mcinfer::cpu {
namespace {

typedef std::int8_t C4 __attribute__((vector_size(4)));
typedef std::int8_t C8 __attribute__((vector_size(8)));
typedef std::int8_t C16 __attribute__((vector_size(16)));

template <int W>
struct ByteVector;
template <>
struct ByteVector<4> {
  using C = C4;
};
template <>
struct ByteVector<8> {
  using C = C8;
};
template <>
struct ByteVector<16> {
  using C = C16;
};

template <int W>
struct Int8Simd {
  using S = Simd<W>;
  using F = typename S::F;
  using I = typename S::I;
  using C = typename ByteVector<W>::C;

  // Round to nearest even (|v| ≤ 127 here, far below 2^22 where adding 1.5·2^23 stays exact).
  static C to_bytes(F v) {
    const F magic = S::splat(12582912.0f);
    const F rounded = (v + magic) - magic;
    return __builtin_convertvector(__builtin_convertvector(rounded, I), C);
  }
  static void store(std::int8_t* q, F v, std::int64_t n) {
    const C c = to_bytes(v);
    std::memcpy(q, &c, static_cast<std::size_t>(n));
  }
  static F load_acc(const std::int32_t* p) {
    I v;
    std::memcpy(&v, p, sizeof(I));
    return __builtin_convertvector(v, F);
  }
  static F load_acc_partial(const std::int32_t* p, std::int64_t n) {
    std::int32_t tmp[W] = {};
    for (std::int64_t i = 0; i < n; ++i) tmp[i] = p[i];
    return load_acc(tmp);
  }
};

template <int W>
typename Simd<W>::F load_any(const float* p, std::int64_t n) {
  return n == W ? Simd<W>::load(p) : Simd<W>::load_partial(p, n);
}
template <int W>
typename Simd<W>::F load_any(const Bf16* p, std::int64_t n) {
  return n == W ? Simd<W>::load_bf16(p) : Simd<W>::load_bf16_partial(p, n);
}

// x[c] · mul[c] (mul may be null: 1).
template <int W, typename X>
typename Simd<W>::F load_scaled(const X* x, const float* mul, std::int64_t c, std::int64_t n) {
  const typename Simd<W>::F v = load_any<W>(x + c, n);
  return mul ? v * load_any<W>(mul + c, n) : v;
}

// One row of x (f32 or bf16), each column multiplied by mul (null: 1) → q[:cols] and *scale.
template <int W, typename X>
void quantize_row(const X* x, std::int64_t cols, const float* mul, std::int8_t* q, float* scale) {
  using S = Simd<W>;
  using F = typename S::F;
  F amax = F{};
  for (std::int64_t c = 0; c < cols; c += W) {
    const std::int64_t n = cols - c < W ? cols - c : W;
    amax = S::vmax(amax, S::abs(load_scaled<W>(x, mul, c, n)));
  }
  const float m = S::max(amax);
  if (m == 0.0f) {  // an all-zero row
    std::memset(q, 0, static_cast<std::size_t>(cols));
    *scale = 0.0f;
    return;
  }
  *scale = m / 127.0f;
  const F inv = S::splat(127.0f / m);
  const F hi = S::splat(127.0f), lo = S::splat(-127.0f);
  for (std::int64_t c = 0; c < cols; c += W) {
    const std::int64_t n = cols - c < W ? cols - c : W;
    Int8Simd<W>::store(q + c, S::vmin(S::vmax(load_scaled<W>(x, mul, c, n) * inv, lo), hi), n);
  }
}

template <int W>
void quantize_rows(const float* x, std::int64_t rows, std::int64_t cols, const float* mul,
                   std::int8_t* q, float* scales) {
  for (std::int64_t r = 0; r < rows; ++r)
    quantize_row<W>(x + r * cols, cols, mul, q + r * cols, scales + r);
}

template <int W>
void quantize_bf16_rows(const Bf16* x, std::int64_t rows, std::int64_t cols, const float* mul,
                        std::int8_t* q, float* scales) {
  for (std::int64_t r = 0; r < rows; ++r)
    quantize_row<W>(x + r * cols, cols, mul, q + r * cols, scales + r);
}

// out[r, :] = act(acc[r, :] · row_scales[r] · col_scales + bias), written as out.type says.
// The scaled sums go to f32 in place of the row's s32 sums (same size; the row is in L1), the
// activation runs over the row (activate_row), then the row is stored or quantized.
template <int W>
void int8_epilogue(std::int32_t* acc, std::int64_t rows, std::int64_t cols, const float* row_scales,
                   const float* col_scales, const float* bias, Activation act, Int8Output out) {
  using S = Simd<W>;
  using F = typename S::F;
  using Q = Int8Simd<W>;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int32_t* a = acc + r * cols;
    const F rs = S::splat(row_scales[r]);
    // Straight into an f32 output's row; else into the s32 row's place.
    float* row = out.type == Int8Output::kF32 ? out.f32 + r * cols : reinterpret_cast<float*>(a);
    for (std::int64_t c = 0; c < cols; c += W) {
      const std::int64_t n = cols - c < W ? cols - c : W;
      F v = (n == W ? Q::load_acc(a + c) : Q::load_acc_partial(a + c, n)) * rs *
            load_any<W>(col_scales + c, n);
      if (bias) v += load_any<W>(bias + c, n);
      if (n == W) {
        S::store(row + c, v);
      } else {
        S::store_partial(row + c, v, n);
      }
    }
    activate_row<W>(row, cols, act);
    switch (out.type) {
      case Int8Output::kF32:
        break;
      case Int8Output::kBf16:
        to_bf16<W>(row, out.bf16 + r * cols, cols);
        break;
      case Int8Output::kS8:
        quantize_row<W>(row, cols, out.s8_multiplier, out.s8 + r * cols, out.s8_scales + r);
        break;
    }
  }
}

}  // namespace
}  // namespace mcinfer::cpu
