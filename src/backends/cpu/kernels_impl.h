#pragma once
// The single source of our non-GEMM kernels. Each kernels_<isa>.cc includes this file and is
// compiled with that instruction set's flags; W is the vector width in floats (4, 8 or 16).
// Everything here has internal linkage (anonymous namespace) and calls no library templates,
// so that code built for AVX-512 can never be merged by the linker into another ISA's table.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backends/cpu/kernels.h"

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports inside every caller: a known false positive of those headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mcinfer::cpu {
namespace {

// GCC's vector extensions; the size must be a literal, hence one pair of types per width.
typedef float F4 __attribute__((vector_size(16)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F16 __attribute__((vector_size(64)));
typedef std::int32_t I4 __attribute__((vector_size(16)));
typedef std::int32_t I8 __attribute__((vector_size(32)));
typedef std::int32_t I16 __attribute__((vector_size(64)));
typedef std::uint32_t U4 __attribute__((vector_size(16)));
typedef std::uint32_t U8 __attribute__((vector_size(32)));
typedef std::uint32_t U16 __attribute__((vector_size(64)));
typedef std::uint16_t H4 __attribute__((vector_size(8)));
typedef std::uint16_t H8 __attribute__((vector_size(16)));
typedef std::uint16_t H16 __attribute__((vector_size(32)));

template <int W>
struct VectorTypes;
template <>
struct VectorTypes<4> {
  using F = F4;
  using I = I4;
  using U = U4;
  using H = H4;
};
template <>
struct VectorTypes<8> {
  using F = F8;
  using I = I8;
  using U = U8;
  using H = H8;
};
template <>
struct VectorTypes<16> {
  using F = F16;
  using I = I16;
  using U = U16;
  using H = H16;
};

template <int W>
struct Simd {
  using F = typename VectorTypes<W>::F;
  using I = typename VectorTypes<W>::I;
  // Same-size vector casts reinterpret the bits.
  static I bits(F x) { return (I)x; }
  static F floats(I x) { return (F)x; }

  static F load(const float* p) {
    F v;
    std::memcpy(&v, p, sizeof(F));
    return v;
  }
  static void store(float* p, F v) { std::memcpy(p, &v, sizeof(F)); }
  // W bf16 values widened to f32 (exact: a bf16 is the upper half of its float).
  static F load_bf16(const Bf16* p) {
    using U = typename VectorTypes<W>::U;
    using H = typename VectorTypes<W>::H;
    H h;
    std::memcpy(&h, p, sizeof(H));
    return (F)(__builtin_convertvector(h, U) << 16);
  }
  static F load_bf16_partial(const Bf16* p, std::int64_t n) {
    Bf16 tmp[W] = {};
    for (std::int64_t i = 0; i < n; ++i) tmp[i] = p[i];
    return load_bf16(tmp);
  }
  // Stores the first n ≤ W lanes as bf16, rounded to nearest even on the bit pattern: add 0x7FFF
  // plus the lowest kept bit, drop the low half. A NaN keeps its sign and gets a quiet bit, so
  // that rounding cannot turn it into infinity.
  static void store_bf16(Bf16* p, F v, std::int64_t n) {
    using U = typename VectorTypes<W>::U;
    using H = typename VectorTypes<W>::H;
    const U u = (U)v;
    const U rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const U nan = (u >> 16) | 0x40u;
    const U is_nan = (U)((u & 0x7FFFFFFFu) > 0x7F800000u);  // all ones or zero per lane
    const H h = __builtin_convertvector((nan & is_nan) | (rounded & ~is_nan), H);
    std::memcpy(p, &h, static_cast<std::size_t>(n) * sizeof(Bf16));
  }
  // Loads n < W floats, the rest zero.
  static F load_partial(const float* p, std::int64_t n) {
    float tmp[W] = {};
    for (std::int64_t i = 0; i < n; ++i) tmp[i] = p[i];
    return load(tmp);
  }
  static void store_partial(float* p, F v, std::int64_t n) {
    float tmp[W];
    store(tmp, v);
    for (std::int64_t i = 0; i < n; ++i) p[i] = tmp[i];
  }
  // x − 0 is x for every x (x + 0 is not, for x = −0), so this folds to a plain broadcast.
  static F splat(float x) { return x - F{}; }
  static float sum(F v) {
    float s = 0.f;
    for (int i = 0; i < W; ++i) s += v[i];
    return s;
  }
  static float max(F v) {
    float m = v[0];
    for (int i = 1; i < W; ++i) m = v[i] > m ? v[i] : m;
    return m;
  }
  // a > b ? a : b (and a < b ? a : b), NaN in a giving b: what (v)maxps computes. GCC 12 writes
  // the vector select as a compare and a blend, two instructions on the activations' chains.
  static F vmax(F a, F b) {
    if constexpr (W == 16) return (F)_mm512_max_ps((__m512)a, (__m512)b);
    if constexpr (W == 8) return (F)_mm256_max_ps((__m256)a, (__m256)b);
    if constexpr (W == 4) return (F)_mm_max_ps((__m128)a, (__m128)b);
  }
  static F vmin(F a, F b) {
    if constexpr (W == 16) return (F)_mm512_min_ps((__m512)a, (__m512)b);
    if constexpr (W == 8) return (F)_mm256_min_ps((__m256)a, (__m256)b);
    if constexpr (W == 4) return (F)_mm_min_ps((__m128)a, (__m128)b);
  }
  static F abs(F x) { return floats(bits(x) & 0x7FFFFFFF); }
  // Copies the sign of `s` onto |x|.
  static F copysign(F x, F s) { return floats((bits(x) & 0x7FFFFFFF) | (bits(s) & INT32_MIN)); }

  // e^x with relative error ~1e-7 (range reduction to [-ln2/2, ln2/2], Cephes-style polynomial).
  static F exp(F x) {
    x = vmin(vmax(x, splat(-87.3f)), splat(88.0f));  // keeps 2^n finite and normal
    const F magic = splat(12582912.0f);              // 1.5 * 2^23: adding it rounds to an integer
    F t = x * 1.44269504088896341f + magic;
    F n = t - magic;
    F r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    F p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    I n_int = bits(t) - bits(magic);
    return p * floats((n_int + 127) << 23);
  }
  // erf(x) = c·P(c²)/Q(c²) with c = x clamped to ±4.1, the result clamped to ±1. P and Q (degrees
  // 6 and 4 in c²) are our own fit to erf on [0, 3.9] (tools/fit_erf.py): error < 4e-7 in float
  // arithmetic, against 5.3e-7 for the Abramowitz-Stegun 7.1.26 form it replaced, at half the
  // operations (no exponential). Past 3.9, where erf rounds to 1 in float, the fit climbs above 1
  // (by 2e-6 at 4.1, far more than rounding can take back), so the clamps give ±1 exactly and
  // GELU(x) is exactly 0 for large negative x, whatever the rounding of the steps before.
  static F erf(F x) {
    const F c = vmin(vmax(x, splat(-4.1f)), splat(4.1f));
    const F z = c * c;
    F p = splat(2.03291530e-8f);
    p = p * z - 1.96511194e-6f;
    p = p * z + 1.38600176e-4f;
    p = p * z + 3.52234620e-3f;
    p = p * z + 4.99470372e-2f;
    p = p * z + 1.95409802e-1f;
    p = p * z + 1.12837907f;
    F q = splat(9.16591288e-4f);
    q = q * z + 1.39650059e-2f;
    q = q * z + 1.13110225e-1f;
    q = q * z + 5.06508749e-1f;
    q = q * z + 1.0f;
    return vmin(vmax(c * p / q, splat(-1.0f)), splat(1.0f));
  }
  static F tanh(F x) {
    F a = vmin(abs(x), splat(10.0f));  // beyond 10, tanh is 1.0f and 1 - 2/(e+1) rounds to it
    F e = exp(a * 2.0f);
    F y = 1.0f - 2.0f / (e + 1.0f);
    return copysign(y, x);
  }
  static F activate(F x, Activation act) {
    switch (act) {
      case Activation::kNone:
        return x;
      case Activation::kGeluErf:
        return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
      case Activation::kGeluTanh: {
        F inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + tanh(inner));
      }
      case Activation::kRelu:
        return vmax(x, F{});
      case Activation::kTanh:
        return tanh(x);
      case Activation::kSilu:
        return x / (1.0f + exp(F{} - x));
    }
    return x;
  }
};

template <int W>
void bias_activation(float* y, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                     const float* bias, Activation act) {
  using S = Simd<W>;
  using F = typename S::F;
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = y + r * ld;
    std::int64_t c = 0;
    for (; c + W <= cols; c += W) {
      F v = S::load(row + c);
      if (bias) v += S::load(bias + c);
      S::store(row + c, S::activate(v, act));
    }
    if (c < cols) {
      F v = S::load_partial(row + c, cols - c);
      if (bias) v += S::load_partial(bias + c, cols - c);
      S::store_partial(row + c, S::activate(v, act), cols - c);
    }
  }
}

// The residual y in f32, or in bf16 (a bf16 GEMM's output, as autocast leaves it).
template <int W>
typename Simd<W>::F load_residual(const float* p) {
  return Simd<W>::load(p);
}
template <int W>
typename Simd<W>::F load_residual(const Bf16* p) {
  return Simd<W>::load_bf16(p);
}
template <int W>
typename Simd<W>::F load_residual_partial(const float* p, std::int64_t n) {
  return Simd<W>::load_partial(p, n);
}
template <int W>
typename Simd<W>::F load_residual_partial(const Bf16* p, std::int64_t n) {
  return Simd<W>::load_bf16_partial(p, n);
}

template <int W, typename Y>
void residual_layer_norm_rows(float* x, const Y* y, const float* bias, std::int64_t rows,
                              std::int64_t cols, const float* gamma, const float* beta, float eps,
                              Bf16* x_bf16) {
  using S = Simd<W>;
  using F = typename S::F;
  const std::int64_t full = cols / W * W;
  const std::int64_t tail = cols - full;
  for (std::int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * cols;
    const Y* yr = y ? y + r * cols : nullptr;
    // Pass 1: x += y + bias, and the sum for the mean.
    F acc = F{};
    for (std::int64_t c = 0; c < full; c += W) {
      F v = S::load(xr + c);
      if (yr) v += load_residual<W>(yr + c);
      if (bias) v += S::load(bias + c);
      S::store(xr + c, v);
      acc += v;
    }
    if (tail) {
      F v = S::load_partial(xr + full, tail);
      if (yr) v += load_residual_partial<W>(yr + full, tail);
      if (bias) v += S::load_partial(bias + full, tail);
      S::store_partial(xr + full, v, tail);
      acc += v;
    }
    const float mean = S::sum(acc) / static_cast<float>(cols);
    // Pass 2: variance around the mean (two passes: no cancellation for large means).
    F m = S::splat(mean);
    F var_acc = F{};
    for (std::int64_t c = 0; c < full; c += W) {
      F d = S::load(xr + c) - m;
      var_acc += d * d;
    }
    if (tail) {
      F d = S::load_partial(xr + full, tail) - m;
      float tmp[W];
      S::store(tmp, d * d);
      for (std::int64_t i = 0; i < tail; ++i) var_acc[i] += tmp[i];
    }
    const float var = S::sum(var_acc) / static_cast<float>(cols);
    const float inv = 1.0f / __builtin_sqrtf(var + eps);
    F vinv = S::splat(inv);
    Bf16* br = x_bf16 ? x_bf16 + r * cols : nullptr;
    for (std::int64_t c = 0; c < full; c += W) {
      F v = (S::load(xr + c) - m) * vinv * S::load(gamma + c) + S::load(beta + c);
      S::store(xr + c, v);
      if (br) S::store_bf16(br + c, v, W);
    }
    if (tail) {
      F v = (S::load_partial(xr + full, tail) - m) * vinv * S::load_partial(gamma + full, tail) +
            S::load_partial(beta + full, tail);
      S::store_partial(xr + full, v, tail);
      if (br) S::store_bf16(br + full, v, tail);
    }
  }
}

template <int W>
void residual_layer_norm(float* x, const float* y, const float* bias, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps,
                         Bf16* x_bf16) {
  residual_layer_norm_rows<W>(x, y, bias, rows, cols, gamma, beta, eps, x_bf16);
}

template <int W>
void residual_bf16_layer_norm(float* x, const Bf16* y, std::int64_t rows, std::int64_t cols,
                              const float* gamma, const float* beta, float eps, Bf16* x_bf16) {
  residual_layer_norm_rows<W>(x, y, nullptr, rows, cols, gamma, beta, eps, x_bf16);
}

// The largest of row[:cols].
template <int W>
float row_max(const float* row, std::int64_t cols) {
  using S = Simd<W>;
  using F = typename S::F;
  const std::int64_t full = cols / W * W;
  F vmax = S::splat(-3.0e38f);
  for (std::int64_t c = 0; c < full; c += W) vmax = S::vmax(vmax, S::load(row + c));
  float mx = S::max(vmax);
  for (std::int64_t c = full; c < cols; ++c) mx = row[c] > mx ? row[c] : mx;
  return mx;
}

// row[:cols] = exp((row[:cols] − mx) * scale), returning their sum.
template <int W>
float exp_below(float* row, std::int64_t cols, float scale, float mx) {
  using S = Simd<W>;
  using F = typename S::F;
  const std::int64_t full = cols / W * W;
  const std::int64_t tail = cols - full;
  F shift = S::splat(mx * scale);
  F acc = F{};
  for (std::int64_t c = 0; c < full; c += W) {
    F e = S::exp(S::load(row + c) * scale - shift);
    S::store(row + c, e);
    acc += e;
  }
  float total = S::sum(acc);
  if (tail) {
    F e = S::exp(S::load_partial(row + full, tail) * scale - shift);
    float tmp[W];
    S::store(tmp, e);
    for (std::int64_t i = 0; i < tail; ++i) total += tmp[i];
    S::store_partial(row + full, e, tail);
  }
  return total;
}

// row[:cols] = exp(row[:cols] * scale − max), returning their sum (softmax before dividing).
template <int W>
float exp_shifted_row(float* row, std::int64_t cols, float scale) {
  return exp_below<W>(row, cols, scale, row_max<W>(row, cols));
}

// One chunk of keys of a row whose softmax is accumulated chunk by chunk (KernelTable).
template <int W>
float online_softmax_row(float* s, std::int64_t cols, float scale, float* max, float* sum) {
  const float chunk = row_max<W>(s, cols);
  const float previous = *max;
  const float now = chunk > previous ? chunk : previous;
  // Before the first chunk the running max is −inf: nothing earlier to rescale. (The builtin,
  // not std::exp: an inline library function compiled here could be merged into other ISAs.)
  const float factor =
      previous == -__builtin_inff() ? 0.0f : __builtin_expf((previous - now) * scale);
  *sum = *sum * factor + exp_below<W>(s, cols, scale, now);
  *max = now;
  return factor;
}

// row[:cols] *= factor.
template <int W>
void scale_row(float* row, std::int64_t cols, float factor) {
  using S = Simd<W>;
  const std::int64_t full = cols / W * W;
  const typename S::F f = S::splat(factor);
  for (std::int64_t c = 0; c < full; c += W) S::store(row + c, S::load(row + c) * f);
  if (cols > full)
    S::store_partial(row + full, S::load_partial(row + full, cols - full) * f, cols - full);
}

template <int W>
void softmax(float* s, std::int64_t rows, std::int64_t cols, std::int64_t ld, float scale) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = s + r * ld;
    scale_row<W>(row, cols, 1.0f / exp_shifted_row<W>(row, cols, scale));
  }
}

template <int W>
void embedding_sum(float* out, std::int64_t tokens, std::int64_t cols, const float* word,
                   const std::int32_t* ids, const float* position, const std::int32_t* positions,
                   const float* type, const std::int32_t* types) {
  using S = Simd<W>;
  using F = typename S::F;
  const std::int64_t full = cols / W * W;
  for (std::int64_t t = 0; t < tokens; ++t) {
    const float* w = word + static_cast<std::int64_t>(ids[t]) * cols;
    const float* p = position ? position + static_cast<std::int64_t>(positions[t]) * cols : nullptr;
    const float* ty = type ? type + static_cast<std::int64_t>(types[t]) * cols : nullptr;
    float* o = out + t * cols;
    for (std::int64_t c = 0; c < full; c += W) {
      F v = S::load(w + c);
      if (p) v += S::load(p + c);
      if (ty) v += S::load(ty + c);
      S::store(o + c, v);
    }
    for (std::int64_t c = full; c < cols; ++c) o[c] = w[c] + (p ? p[c] : 0.f) + (ty ? ty[c] : 0.f);
  }
}

// out[r, :n] = Σ_k a[r, k] · b[k, :n] for R rows of `a` at once (row-major, leading dimensions
// lda, ldb, ldo): R × 2 vectors of accumulators in registers, one FMA per element of `a`. Both
// attention products are this shape: scores = Q·Kᵀ (with K transposed so keys are contiguous)
// and out = P·V.
template <int W, int R>
void small_matmul(const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                  std::int64_t k, std::int64_t n, float* out, std::int64_t ldo) {
  using S = Simd<W>;
  using F = typename S::F;
  std::int64_t c = 0;
  for (; c + 2 * W <= n; c += 2 * W) {
    F acc[R][2] = {};
    for (std::int64_t j = 0; j < k; ++j) {
      const F b0 = S::load(b + j * ldb + c);
      const F b1 = S::load(b + j * ldb + c + W);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const F av = S::splat(a[r * lda + j]);
        acc[r][0] += av * b0;
        acc[r][1] += av * b1;
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      S::store(out + r * ldo + c, acc[r][0]);
      S::store(out + r * ldo + c + W, acc[r][1]);
    }
  }
  for (; c < n; c += W) {
    const std::int64_t m = n - c < W ? n - c : W;
    F acc[R] = {};
    for (std::int64_t j = 0; j < k; ++j) {
      const F b0 = m == W ? S::load(b + j * ldb + c) : S::load_partial(b + j * ldb + c, m);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r] += S::splat(a[r * lda + j]) * b0;
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      if (m == W) {
        S::store(out + r * ldo + c, acc[r]);
      } else {
        S::store_partial(out + r * ldo + c, acc[r], m);
      }
    }
  }
}

template <int W>
void attention_head(const float* q, const float* k, const float* v, std::int64_t ld, float* out,
                    std::int64_t ld_out, std::int64_t len, std::int64_t d, float scale,
                    float* scratch) {
  const std::int64_t padded = (len + 15) / 16 * 16;
  float* kt = scratch;                // [d, padded]: keys transposed, zero past len
  float* scores = kt + padded * d;    // [len, padded]
  float* vc = scores + len * padded;  // [len, d]: values contiguous (rows of qkv are far apart,
                                      // and at that stride they fight over the same cache sets)
  // Key by key, so that each key row (far from the next in qkv) is read once, whole.
  for (std::int64_t j = 0; j < len; ++j) {
    const float* key = k + j * ld;
    for (std::int64_t c = 0; c < d; ++c) kt[c * padded + j] = key[c];
    std::memcpy(vc + j * d, v + j * ld, sizeof(float) * d);
  }
  for (std::int64_t c = 0; c < d; ++c) {
    for (std::int64_t j = len; j < padded; ++j) kt[c * padded + j] = 0.0f;
  }
  // Rows per register block: 2 × kRows accumulators plus the loads fit the register file.
  constexpr int kRows = W == 16 ? 8 : 4;
  std::int64_t i = 0;
  for (; i + kRows <= len; i += kRows) {
    small_matmul<W, kRows>(q + i * ld, ld, kt, padded, d, padded, scores + i * padded, padded);
  }
  for (; i < len; ++i) {
    small_matmul<W, 1>(q + i * ld, ld, kt, padded, d, padded, scores + i * padded, padded);
  }
  // Softmax without its division: the d-wide output rows are divided instead of the len-wide
  // probability rows, which saves a pass over the scores.
  float* sums = vc + len * d;  // [len]
  for (std::int64_t r = 0; r < len; ++r)
    sums[r] = exp_shifted_row<W>(scores + r * padded, len, scale);
  i = 0;
  for (; i + kRows <= len; i += kRows) {
    small_matmul<W, kRows>(scores + i * padded, padded, vc, d, len, d, out + i * ld_out, ld_out);
  }
  for (; i < len; ++i) {
    small_matmul<W, 1>(scores + i * padded, padded, vc, d, len, d, out + i * ld_out, ld_out);
  }
  for (std::int64_t r = 0; r < len; ++r) scale_row<W>(out + r * ld_out, d, 1.0f / sums[r]);
}

template <int W>
void to_bf16(const float* x, Bf16* y, std::int64_t n) {
  using S = Simd<W>;
  std::int64_t i = 0;
  for (; i + W <= n; i += W) S::store_bf16(y + i, S::load(x + i), W);
  if (i < n) S::store_bf16(y + i, S::load_partial(x + i, n - i), n - i);
}

// One pass after the exponentials: scaling and rounding together (a separate to_bf16 pass over
// the f32 row cost 0.8% of a bf16 bert-base batch).
template <int W>
void softmax_to_bf16(float* s, Bf16* p, std::int64_t cols, std::int64_t padded, float scale) {
  using S = Simd<W>;
  const typename S::F f = S::splat(1.0f / exp_shifted_row<W>(s, cols, scale));
  std::int64_t c = 0;
  for (; c + W <= cols; c += W) S::store_bf16(p + c, S::load(s + c) * f, W);
  if (c < cols) S::store_bf16(p + c, S::load_partial(s + c, cols - c) * f, cols - c);
  std::memset(p + cols, 0, static_cast<std::size_t>(padded - cols) * sizeof(Bf16));
}

}  // namespace
}  // namespace mcinfer::cpu

#include "backends/cpu/kernels_int8_impl.h"

namespace mcinfer::cpu {
namespace {

template <int W>
void residual_layer_norm_s8(float* x, const float* y, std::int64_t rows, std::int64_t cols,
                            const float* gamma, const float* beta, float eps, const float* mul,
                            std::int8_t* q, float* scales) {
  for (std::int64_t r = 0; r < rows; ++r) {
    residual_layer_norm_rows<W>(x + r * cols, y ? y + r * cols : nullptr, nullptr, 1, cols, gamma,
                                beta, eps, nullptr);
    quantize_row<W>(x + r * cols, cols, mul, q + r * cols, scales + r);
  }
}

template <int W>
KernelTable make_kernel_table(Isa isa) {
  return KernelTable{isa,
                     &bias_activation<W>,
                     &residual_layer_norm<W>,
                     &softmax<W>,
                     &embedding_sum<W>,
                     &attention_head<W>,
                     &to_bf16<W>,
                     &softmax_to_bf16<W>,
                     &residual_bf16_layer_norm<W>,
                     &quantize_rows<W>,
                     &quantize_bf16_rows<W>,
                     &int8_epilogue<W>,
                     &residual_layer_norm_s8<W>,
                     &online_softmax_row<W>};
}

}  // namespace
}  // namespace mcinfer::cpu
