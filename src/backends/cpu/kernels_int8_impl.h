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

// q[:cols] = x[:cols] · mul / scale rounded, with *scale = m / 127 from the row's max|x · mul| = m
// (the caller's); an all-zero row (m = 0) gets scale 0. Whole vectors are stored by a copy of
// constant size: a copy of variable size is a call to memcpy per vector (the quantization pass
// took 17 cycles per 16 values on AMD Zen 4; 5 without the calls and with one-instruction min/max).
template <int W, typename X>
void store_quantized_row(const X* x, std::int64_t cols, const float* mul, float m, std::int8_t* q,
                         float* scale) {
  using S = Simd<W>;
  using F = typename S::F;
  if (m == 0.0f) {
    std::memset(q, 0, static_cast<std::size_t>(cols));
    *scale = 0.0f;
    return;
  }
  *scale = m / 127.0f;
  const F inv = S::splat(127.0f / m);
  const F hi = S::splat(127.0f), lo = S::splat(-127.0f);
  std::int64_t c = 0;
  for (; c + W <= cols; c += W)
    Int8Simd<W>::store(q + c, S::vmin(S::vmax(load_scaled<W>(x, mul, c, W) * inv, lo), hi), W);
  if (c < cols) {
    const std::int64_t n = cols - c;
    Int8Simd<W>::store(q + c, S::vmin(S::vmax(load_scaled<W>(x, mul, c, n) * inv, lo), hi), n);
  }
}

// One row of x (f32 or bf16), each column multiplied by mul (null: 1) → q[:cols] and *scale.
template <int W, typename X>
void quantize_row(const X* x, std::int64_t cols, const float* mul, std::int8_t* q, float* scale) {
  using S = Simd<W>;
  typename S::F amax{};
  std::int64_t c = 0;
  for (; c + W <= cols; c += W) amax = S::vmax(amax, S::abs(load_scaled<W>(x, mul, c, W)));
  if (c < cols) amax = S::vmax(amax, S::abs(load_scaled<W>(x, mul, c, cols - c)));
  store_quantized_row<W>(x, cols, mul, S::max(amax), q, scale);
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

// One int8 GEMM output row, in one pass: act(acc · row_scale · col_scales + bias) → f32 or bf16
// straight to the output, or (s8) multiplied by the next GEMM's s8_multiplier into the s32 row's
// own place (same size, in L1), with the row's max|v| for the quantization pass that follows.
// Four vectors per step: an activation is a chain of ~20 dependent operations, and a step of one
// vector left the CPU waiting on it. Separate passes (scale, activation, max, quantization, each
// over the row) cost 0.98 ns per element for GELU → s8 on AMD Zen 4 ([128, 1536]).
template <int W, Activation kAct, Int8Output::Type kType>
struct Int8EpilogueRow {
  using S = Simd<W>;
  using F = typename S::F;
  const float* col_scales;
  const float* bias;
  const float* mul;  // kS8: the next GEMM's input smoothing, or null

  F value(const std::int32_t* a, F rs, std::int64_t c, std::int64_t n) const {
    F v = (n == W ? Int8Simd<W>::load_acc(a + c) : Int8Simd<W>::load_acc_partial(a + c, n)) * rs *
          load_any<W>(col_scales + c, n);
    if (bias) v += load_any<W>(bias + c, n);
    return S::activate(v, kAct);
  }
  // Writes v (n lanes) for column c; kS8 also folds |v| into amax.
  void emit(F v, std::int64_t c, std::int64_t n, float* f32, Bf16* bf16, F& amax) const {
    if constexpr (kType == Int8Output::kBf16) {
      S::store_bf16(bf16 + c, v, n);
      return;
    }
    if constexpr (kType == Int8Output::kS8) {
      if (mul) v *= load_any<W>(mul + c, n);
      amax = S::vmax(amax, S::abs(v));
    }
    if (n == W) {
      S::store(f32 + c, v);
    } else {
      S::store_partial(f32 + c, v, n);
    }
  }
  // Returns max|v| over the row (kS8; 0 otherwise).
  float run(const std::int32_t* a, std::int64_t cols, float row_scale, float* f32,
            Bf16* bf16) const {
    const F rs = S::splat(row_scale);
    F amax{};
    std::int64_t c = 0;
    for (; c + 4 * W <= cols; c += 4 * W) {
      const F v0 = value(a, rs, c, W), v1 = value(a, rs, c + W, W);
      const F v2 = value(a, rs, c + 2 * W, W), v3 = value(a, rs, c + 3 * W, W);
      emit(v0, c, W, f32, bf16, amax);
      emit(v1, c + W, W, f32, bf16, amax);
      emit(v2, c + 2 * W, W, f32, bf16, amax);
      emit(v3, c + 3 * W, W, f32, bf16, amax);
    }
    for (; c + W <= cols; c += W) emit(value(a, rs, c, W), c, W, f32, bf16, amax);
    if (c < cols) emit(value(a, rs, c, cols - c), c, cols - c, f32, bf16, amax);
    return S::max(amax);
  }
};

template <int W, Activation kAct, Int8Output::Type kType>
void int8_epilogue_rows(std::int32_t* acc, std::int64_t rows, std::int64_t cols,
                        const float* row_scales, const float* col_scales, const float* bias,
                        const Int8Output& out) {
  const Int8EpilogueRow<W, kAct, kType> row{col_scales, bias, out.s8_multiplier};
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int32_t* a = acc + r * cols;
    if constexpr (kType == Int8Output::kF32) {
      row.run(a, cols, row_scales[r], out.f32 + r * cols, nullptr);
    } else if constexpr (kType == Int8Output::kBf16) {
      row.run(a, cols, row_scales[r], nullptr, out.bf16 + r * cols);
    } else {
      // Each f32 value lands where its own s32 sum was read, after the read.
      float* f32 = reinterpret_cast<float*>(a);
      const float m = row.run(a, cols, row_scales[r], f32, nullptr);
      store_quantized_row<W>(f32, cols, nullptr, m, out.s8 + r * cols, out.s8_scales + r);
    }
  }
}

// A run-time choice as a compile-time constant: fn(Constant<V>{}) for the case `value` names.
template <auto V>
struct Constant {
  static constexpr auto value = V;
};

template <typename Fn>
void with_activation(Activation act, Fn&& fn) {
  switch (act) {
    case Activation::kNone:
      return fn(Constant<Activation::kNone>{});
    case Activation::kGeluErf:
      return fn(Constant<Activation::kGeluErf>{});
    case Activation::kGeluTanh:
      return fn(Constant<Activation::kGeluTanh>{});
    case Activation::kRelu:
      return fn(Constant<Activation::kRelu>{});
    case Activation::kTanh:
      return fn(Constant<Activation::kTanh>{});
    case Activation::kSilu:
      return fn(Constant<Activation::kSilu>{});
  }
}

template <typename Fn>
void with_output_type(Int8Output::Type type, Fn&& fn) {
  switch (type) {
    case Int8Output::kF32:
      return fn(Constant<Int8Output::kF32>{});
    case Int8Output::kBf16:
      return fn(Constant<Int8Output::kBf16>{});
    case Int8Output::kS8:
      return fn(Constant<Int8Output::kS8>{});
  }
}

// out[r, :] = act(acc[r, :] · row_scales[r] · col_scales + bias), written as out.type says.
template <int W>
void int8_epilogue(std::int32_t* acc, std::int64_t rows, std::int64_t cols, const float* row_scales,
                   const float* col_scales, const float* bias, Activation act, Int8Output out) {
  with_activation(act, [&](auto a) {
    with_output_type(out.type, [&](auto type) {
      int8_epilogue_rows<W, decltype(a)::value, decltype(type)::value>(acc, rows, cols, row_scales,
                                                                       col_scales, bias, out);
    });
  });
}

}  // namespace
}  // namespace mcinfer::cpu
