#include "backends/cpu/attention_fused.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports inside every caller: a known false positive of those headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace mcinfer::cpu {
namespace {

// Linux: a process must ask before it may use the AMX tile data registers.
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtileData = 18;

constexpr std::int64_t kMaxHead = 128;

bool cpu_has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // F, DQ, BW, VL
  if ((b & avx512) != avx512) return false;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5))) return false;  // AVX512_BF16
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0xE6u) == 0xE6u;  // the OS saves SSE, AVX and the three AVX-512 states
}

bool cpu_has_amx_bf16() {
  if (!cpu_has_avx512_bf16()) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  __get_cpuid_count(7, 0, &a, &b, &c, &d);
  if (!(d & (1u << 24)) || !(d & (1u << 22))) return false;  // AMX-TILE, AMX-BF16
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & (3u << 17)) == (3u << 17);  // the OS saves TILECFG and TILEDATA
}

// Palette 1, the eight tiles all 16 rows × 64 bytes: 16 × 16 f32, or 16 × 32 bf16.
// Tiles 0-3 accumulate a block of the context, 4 a block of scores, 5 holds A, 6 and 7 B.
struct alignas(64) TileConfig {
  std::uint8_t palette_id;
  std::uint8_t start_row;
  std::uint8_t reserved[14];
  std::uint16_t colsb[16];
  std::uint8_t rows[16];
};

void configure_tiles() {
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }
std::int64_t aligned(std::int64_t bytes) { return round_up(bytes, 64); }

// The packed sequence, for L = len rounded up to 32 (whole tiles along the keys):
//   q  [heads, L, d]      bf16, rows past len zero
//   kt [heads, d/2, L]    bf16 pairs (k[j, 2c], k[j, 2c+1]): Kᵀ as B tiles take it
//   vv [heads, L/2, d]    bf16 pairs (v[j, n], v[j+1, n]): V as B tiles take it
// Keys past len are zero in kt and vv: they score 0 (ignored by the softmax, which stops at
// len) and meet probability 0 against value 0, never a stale NaN.
struct Packed {
  Bf16* q;
  std::uint32_t* kt;
  std::uint32_t* vv;
  std::int64_t lp32, d;

  Packed(void* base, std::int64_t len, std::int64_t hidden, std::int64_t heads)
      : lp32(round_up(len, 32)), d(hidden / heads) {
    char* at = static_cast<char*>(base);
    q = reinterpret_cast<Bf16*>(at);
    at += aligned(lp32 * hidden * 2);
    kt = reinterpret_cast<std::uint32_t*>(at);
    at += aligned(lp32 * hidden * 2);
    vv = reinterpret_cast<std::uint32_t*>(at);
  }
  static std::int64_t bytes(std::int64_t len, std::int64_t hidden) {
    return 3 * aligned(round_up(len, 32) * hidden * 2);
  }
  Bf16* q_head(std::int64_t h) const { return q + h * lp32 * d; }
  std::uint32_t* kt_head(std::int64_t h) const { return kt + h * (d / 2) * lp32; }
  std::uint32_t* vv_head(std::int64_t h) const { return vv + h * (lp32 / 2) * d; }
};

// Scratch of one block of 16 queries: scores [16, L] f32, probabilities [16, L] bf16,
// context [16, d] f32.
struct Block {
  float* s;
  Bf16* p;
  float* o;
  Block(void* base, std::int64_t lp32) {
    char* at = static_cast<char*>(base);
    s = reinterpret_cast<float*>(at);
    at += aligned(16 * lp32 * 4);
    p = reinterpret_cast<Bf16*>(at);
    at += aligned(16 * lp32 * 2);
    o = reinterpret_cast<float*>(at);
  }
  static std::int64_t bytes(std::int64_t lp32, std::int64_t d) {
    return aligned(16 * lp32 * 4) + aligned(16 * lp32 * 2) + aligned(16 * d * 4);
  }
};

// Interleaves 32 bf16 of a with 32 of b: a0 b0 a1 b1 … (lo: the first 16 of each, hi: the rest).
struct Interleave {
  __m512i lo, hi;
  Interleave() {
    alignas(64) std::uint16_t lo_index[32], hi_index[32];
    for (int i = 0; i < 16; ++i) {
      lo_index[2 * i] = static_cast<std::uint16_t>(i);
      lo_index[2 * i + 1] = static_cast<std::uint16_t>(32 + i);
      hi_index[2 * i] = static_cast<std::uint16_t>(16 + i);
      hi_index[2 * i + 1] = static_cast<std::uint16_t>(48 + i);
    }
    lo = _mm512_load_si512(lo_index);
    hi = _mm512_load_si512(hi_index);
  }
};

// 2^t: t = n + f with n an integer and |f| ≤ 1/2, 2^f by its Taylor series to degree 6
// (relative error < 2e-7), times 2^n by vscalefps, which also takes very negative n to 0 without
// the clamps of the portable exp. Half the instructions of the kernel table's exp: the
// exponentials were a quarter of this kernel's time.
__m512 exp2_ps(__m512 t) {
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.5403530e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504109e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022651e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// Horizontal max or sum by halving (GCC 12's _mm512_reduce_* trip -Wmaybe-uninitialized).
template <typename Op>
float reduce(__m512 v, Op op) {
  v = op(v, _mm512_shuffle_f32x4(v, v, 0x4E));
  v = op(v, _mm512_shuffle_f32x4(v, v, 0xB1));
  v = op(v, _mm512_permute_ps(v, 0x4E));
  v = op(v, _mm512_permute_ps(v, 0xB1));
  return _mm512_cvtss_f32(v);
}
float reduce_max(__m512 v) {
  return reduce(v, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); });
}
float reduce_add(__m512 v) {
  return reduce(v, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
}

__mmask16 tail_mask(std::int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// 16 floats rounded to bf16 (nearest even, NaN kept) by vcvtneps2bf16.
void store_bf16(Bf16* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(v));
}

// s[j] += bias[j] · inv_scale for j < len (attention.h's add_score_bias, kept local: an inline
// function shared with a TU built for other ISAs could be merged into this one's copy).
void add_bias(float* s, const float* bias, std::int64_t len, float inv_scale) {
  for (std::int64_t j = 0; j < len; ++j) s[j] += bias[j] * inv_scale;
}

// p[:cols] = bf16(softmax(s[:cols] · scale)), p[cols:padded] = 0; s is overwritten.
void softmax_row(float* s, Bf16* p, std::int64_t cols, std::int64_t padded, float scale) {
  const std::int64_t full = cols / 16 * 16;
  const __mmask16 tail = tail_mask(cols - full);
  __m512 vmax = _mm512_set1_ps(-__builtin_inff());
  for (std::int64_t c = 0; c < full; c += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + c));
  if (tail) vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(vmax, tail, s + full));
  // exp((x − max)·scale) = 2^(x·k − max·k) with k = scale·log2(e).
  const float k = scale * 1.4426950408889634f;
  const __m512 vk = _mm512_set1_ps(k), shift = _mm512_set1_ps(-reduce_max(vmax) * k);
  __m512 sum = _mm512_setzero_ps();
  for (std::int64_t c = 0; c < full; c += 16) {
    const __m512 e = exp2_ps(_mm512_fmadd_ps(_mm512_loadu_ps(s + c), vk, shift));
    _mm512_storeu_ps(s + c, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail) {
    const __m512 e = exp2_ps(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, s + full), vk, shift));
    _mm512_mask_storeu_ps(s + full, tail, e);
    sum = _mm512_mask_add_ps(sum, tail, sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / reduce_add(sum));
  for (std::int64_t c = 0; c < full; c += 16)
    store_bf16(p + c, _mm512_mul_ps(_mm512_loadu_ps(s + c), inv));
  if (tail) {
    const __m256bh v =
        _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, s + full), inv));
    _mm256_mask_storeu_epi16(p + full, tail, (__m256i)v);
  }
  std::memset(p + cols, 0, static_cast<std::size_t>(padded - cols) * sizeof(Bf16));
}

// Transposes 16 rows of 16 32-bit words in place: 32-bit and 64-bit unpacks transpose the 4 × 4
// blocks inside each 128-bit lane, two rounds of lane shuffles move the blocks.
void transpose_16x16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[g][k]: rows 4g … 4g+3 of in-lane column k, in every lane.
  __m512i u[4][4];
  for (int g = 0; g < 4; ++g) {
    u[g][0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[g][1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[g][2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[g][3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    const __m512i a = _mm512_shuffle_i32x4(u[0][k], u[1][k], 0x44);
    const __m512i b = _mm512_shuffle_i32x4(u[0][k], u[1][k], 0xEE);
    const __m512i c = _mm512_shuffle_i32x4(u[2][k], u[3][k], 0x44);
    const __m512i e = _mm512_shuffle_i32x4(u[2][k], u[3][k], 0xEE);
    r[k] = _mm512_shuffle_i32x4(a, c, 0x88);       // lane 0: column k
    r[4 + k] = _mm512_shuffle_i32x4(a, c, 0xDD);   // lane 1: column 4 + k
    r[8 + k] = _mm512_shuffle_i32x4(b, e, 0x88);   // lane 2
    r[12 + k] = _mm512_shuffle_i32x4(b, e, 0xDD);  // lane 3
  }
}

// c[16, 16·b : 16·b + 16] for b < NB = Σ over `steps` of a[16, 32 values] · B tile: A's rows at
// a (row stride a_stride bytes, 32 values further each step), B's at b + 16·b words (row stride
// b_stride bytes, b_step words further each step), c's row stride c_stride bytes.
template <int NB>
void tile_products(const Bf16* a, std::int64_t a_stride, const std::uint32_t* b,
                   std::int64_t b_stride, std::int64_t b_step, std::int64_t steps, float* c,
                   std::int64_t c_stride) {
  _tile_zero(0);
  if constexpr (NB > 1) _tile_zero(1);
  if constexpr (NB > 2) _tile_zero(2);
  if constexpr (NB > 3) _tile_zero(3);
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::uint32_t* bk = b + k * b_step;
    _tile_loadd(5, a + 32 * k, a_stride);
    _tile_loadd(6, bk, b_stride);
    _tile_dpbf16ps(0, 5, 6);
    if constexpr (NB > 1) {
      _tile_loadd(7, bk + 16, b_stride);
      _tile_dpbf16ps(1, 5, 7);
    }
    if constexpr (NB > 2) {
      _tile_loadd(6, bk + 32, b_stride);
      _tile_dpbf16ps(2, 5, 6);
    }
    if constexpr (NB > 3) {
      _tile_loadd(7, bk + 48, b_stride);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c, c_stride);
  if constexpr (NB > 1) _tile_stored(1, c + 16, c_stride);
  if constexpr (NB > 2) _tile_stored(2, c + 32, c_stride);
  if constexpr (NB > 3) _tile_stored(3, c + 48, c_stride);
}

// The same over `blocks` output blocks of 16 columns, four accumulators at a time.
void tile_products(std::int64_t blocks, const Bf16* a, std::int64_t a_stride,
                   const std::uint32_t* b, std::int64_t b_stride, std::int64_t b_step,
                   std::int64_t steps, float* c, std::int64_t c_stride) {
  for (std::int64_t n = 0; n < blocks; n += 4) {
    const std::uint32_t* bn = b + 16 * n;
    float* cn = c + 16 * n;
    switch (blocks - n < 4 ? blocks - n : 4) {
      case 1:
        tile_products<1>(a, a_stride, bn, b_stride, b_step, steps, cn, c_stride);
        break;
      case 2:
        tile_products<2>(a, a_stride, bn, b_stride, b_step, steps, cn, c_stride);
        break;
      case 3:
        tile_products<3>(a, a_stride, bn, b_stride, b_step, steps, cn, c_stride);
        break;
      default:
        tile_products<4>(a, a_stride, bn, b_stride, b_step, steps, cn, c_stride);
    }
  }
}

// One row of an 8 × 32 block of f32 sums, named rather than an array: GCC 12 keeps arrays of
// accumulators in memory around each dot-product instruction (seen in its output for VPDPBUSD).
struct PairRow {
  __m512 v0, v1;
};

__attribute__((always_inline)) inline void pair_step(PairRow& sums, __m512bh b0, __m512bh b1,
                                                     const std::uint32_t* a) {
  std::uint32_t pair;
  std::memcpy(&pair, a, sizeof pair);
  const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
  sums.v0 = _mm512_dpbf16_ps(sums.v0, x, b0);
  sums.v1 = _mm512_dpbf16_ps(sums.v1, x, b1);
}

__attribute__((always_inline)) inline void store_row(const PairRow& sums, float* c) {
  _mm512_storeu_ps(c, sums.v0);
  _mm512_storeu_ps(c + 16, sums.v1);
}

// c[r, 0:32] = Σ_s a[r][s] · b[s·b_step + 0:32] for the 8 rows a[r] (row r of c at c + r·ldc),
// where each a[r][s] and each b word is a pair of bf16 and a product adds both pairs' products.
void pair_products(const std::uint32_t* const a[8], const std::uint32_t* b, std::int64_t b_step,
                   std::int64_t steps, float* c, std::int64_t ldc) {
  const __m512 zero = _mm512_setzero_ps();
  PairRow s0{zero, zero}, s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  const std::uint32_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
  const std::uint32_t *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
  for (std::int64_t s = 0; s < steps; ++s, b += b_step) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
    pair_step(s0, b0, b1, a0 + s);
    pair_step(s1, b0, b1, a1 + s);
    pair_step(s2, b0, b1, a2 + s);
    pair_step(s3, b0, b1, a3 + s);
    pair_step(s4, b0, b1, a4 + s);
    pair_step(s5, b0, b1, a5 + s);
    pair_step(s6, b0, b1, a6 + s);
    pair_step(s7, b0, b1, a7 + s);
  }
  store_row(s0, c);
  store_row(s1, c + ldc);
  store_row(s2, c + 2 * ldc);
  store_row(s3, c + 3 * ldc);
  store_row(s4, c + 4 * ldc);
  store_row(s5, c + 5 * ldc);
  store_row(s6, c + 6 * ldc);
  store_row(s7, c + 7 * ldc);
}

// 16 bf16 widened to f32.
__m512 widen(const Bf16* p) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// dst = x (one head's d values) rotated by one position's angles: (x_c, x_{c+half}) →
// (x_c·cos − x_{c+half}·sin, x_{c+half}·cos + x_c·sin), products and sums rounded as torch's
// q·cos + rotate_half(q)·sin, then to bf16. half is a multiple of 16.
void rotate_head(const Bf16* x, Bf16* dst, const float* cos, const float* sin, std::int64_t half) {
  for (std::int64_t c = 0; c < half; c += 16) {
    const __m512 a = widen(x + c), b = widen(x + half + c);
    const __m512 co = _mm512_loadu_ps(cos + c), si = _mm512_loadu_ps(sin + c);
    store_bf16(dst + c, _mm512_sub_ps(_mm512_mul_ps(a, co), _mm512_mul_ps(b, si)));
    store_bf16(dst + half + c, _mm512_add_ps(_mm512_mul_ps(b, co), _mm512_mul_ps(a, si)));
  }
}

// One chunk of keys of a row whose softmax is accumulated chunk by chunk: s[lo, hi) holds the
// row's raw scores of the keys it sees; p[lo, hi) = bf16(exp((s − m) · scale)) with m the new
// running maximum, p elsewhere in [0, padded) = 0; *max, *sum updated; returns the factor the
// row's earlier context is multiplied by (0 before the first chunk).
float online_row(float* s, Bf16* p, std::int64_t lo, std::int64_t hi, std::int64_t padded,
                 float scale, float* max, float* sum) {
  __m512 vmax = _mm512_set1_ps(-__builtin_inff());
  for (std::int64_t c = lo; c < hi; c += 16) {
    const __mmask16 mask = hi - c >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(hi - c);
    vmax = _mm512_mask_max_ps(vmax, mask, vmax, _mm512_maskz_loadu_ps(mask, s + c));
  }
  const float previous = *max;
  const float chunk = reduce_max(vmax);
  const float now = chunk > previous ? chunk : previous;
  // exp((x − now)·scale) = 2^(x·k − now·k) with k = scale·log2(e).
  const float k = scale * 1.4426950408889634f;
  const __m512 vk = _mm512_set1_ps(k), shift = _mm512_set1_ps(-now * k);
  __m512 total = _mm512_setzero_ps();
  for (std::int64_t c = lo; c < hi; c += 16) {
    const __mmask16 mask = hi - c >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(hi - c);
    const __m512 e = exp2_ps(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, s + c), vk, shift));
    total = _mm512_mask_add_ps(total, mask, total, e);
    _mm256_mask_storeu_epi16(p + c, mask, (__m256i)_mm512_cvtneps_pbh(e));
  }
  std::memset(p, 0, static_cast<std::size_t>(lo) * sizeof(Bf16));
  std::memset(p + hi, 0, static_cast<std::size_t>(padded - hi) * sizeof(Bf16));
  const float factor = previous == -__builtin_inff() ? 0.0f : __builtin_exp2f((previous - now) * k);
  *sum = *sum * factor + reduce_add(total);
  *max = now;
  return factor;
}

// c[8, d] = P · V for a block of 8 queries: P's rows at p (row stride ld_p bf16, `pairs` pairs
// of keys; rows past `rows` repeat the last real row's, their sums unused), V as pairs at vv.
void context_products(const Bf16* p, std::int64_t ld_p, std::int64_t rows, const std::uint32_t* vv,
                      std::int64_t d, std::int64_t pairs, float* c) {
  const std::uint32_t* pa[8];
  for (std::int64_t r = 0; r < 8; ++r)
    pa[r] = reinterpret_cast<const std::uint32_t*>(p + (r < rows ? r : rows - 1) * ld_p);
  for (std::int64_t n0 = 0; n0 < d; n0 += 32) pair_products(pa, vv + n0, d, pairs, c + n0, d);
}

// DeBERTa's p2c products of one head: p2c[j, t] = k_j · query[lowest + t] for every key j
// (rows rounded up to 8, the last key repeated) and t < reach rounded up to 32.
void relative_p2c(const FusedRelative& r, std::int64_t len, std::int64_t d, float* p2c,
                  std::int64_t ld) {
  for (std::int64_t j0 = 0; j0 < len; j0 += 8) {
    const std::uint32_t* ka[8];
    for (std::int64_t k = 0; k < 8; ++k) {
      const std::int64_t j = j0 + k < len ? j0 + k : len - 1;
      ka[k] = reinterpret_cast<const std::uint32_t*>(r.keys + j * r.ld_keys);
    }
    for (std::int64_t t0 = 0; t0 < r.reach; t0 += 32)
      pair_products(ka, r.query_pairs + r.lowest + t0, r.pair_stride, d / 2, p2c + j0 * ld + t0,
                    ld);
  }
}

// s[j] += c2p[t] + p2c[j, t] for j < len with t = index[i − j] − lowest (query i's row of the
// scores; c2p its row of the block's c2p products, either table null when absent).
void add_relative_row(float* s, std::int64_t i, std::int64_t len, const FusedRelative& r,
                      const float* c2p, const float* p2c, std::int64_t ld) {
  const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i lowest = _mm512_set1_epi32(static_cast<int>(r.lowest));
  const __m512i stride = _mm512_set1_epi32(static_cast<int>(ld));
  const __m512i query = _mm512_set1_epi32(static_cast<int>(i));
  for (std::int64_t j = 0; j < len; j += 16) {
    const __mmask16 mask = len - j >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(len - j);
    const __m512i keys = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(j)), lanes);
    // t = index[i − j] − lowest for the 16 keys.
    const __m512i t =
        _mm512_sub_epi32(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask,
                                                     _mm512_sub_epi32(query, keys), r.index, 4),
                         lowest);
    __m512 add = _mm512_setzero_ps();
    if (c2p) add = _mm512_mask_i32gather_ps(add, mask, t, c2p, 4);
    if (p2c) {
      const __m512i at = _mm512_add_epi32(_mm512_mullo_epi32(keys, stride), t);
      add = _mm512_add_ps(add, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, at, p2c, 4));
    }
    _mm512_mask_storeu_ps(s + j, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, s + j), add));
  }
}

}  // namespace

std::int64_t fused_relative_bytes(std::int64_t max_len, std::int64_t reach) {
  const std::int64_t ld = round_up(reach < 1 ? 1 : reach, 32);
  return aligned((round_up(max_len < 1 ? 1 : max_len, 8) + 8) * ld * 4);
}

bool dot_attention_usable(std::int64_t d) {
  static const bool available = cpu_has_avx512_bf16();
  return available && d > 0 && d % 32 == 0 && d <= kMaxHead;
}

bool amx_attention_usable(std::int64_t d) {
  static const bool available =
      cpu_has_amx_bf16() && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
  return available && d > 0 && d % 32 == 0 && d <= kMaxHead;
}

std::int64_t fused_packed_bytes(std::int64_t max_len, std::int64_t hidden) {
  return Packed::bytes(max_len < 1 ? 1 : max_len, hidden);
}

std::int64_t fused_block_bytes(std::int64_t max_len, std::int64_t d) {
  return Block::bytes(round_up(max_len < 1 ? 1 : max_len, 32), d);
}

void amx_release_tiles() { _tile_release(); }

void fused_pack_sequence(const Bf16* qkv, std::int64_t ld, std::int64_t len, std::int64_t hidden,
                         std::int64_t heads, void* packed, const PackRotation* rotation) {
  const Packed m(packed, len, hidden, heads);
  const std::int64_t d = m.d;
  const Interleave order;
  const __m512i zero = _mm512_setzero_si512();
  alignas(64) Bf16 rotated_keys[16 * kMaxHead];
  // Groups of 16 rows, in order (the hardware prefetcher follows); rows past len read as 0.
  for (std::int64_t j0 = 0; j0 < m.lp32; j0 += 16) {
    const Bf16* rows[16];
    for (int r = 0; r < 16; ++r) rows[r] = j0 + r < len ? qkv + (j0 + r) * ld : nullptr;
    for (std::int64_t h = 0; h < heads; ++h) {
      Bf16* q = m.q_head(h) + j0 * d;
      // Each row's keys of head h: in qkv, or rotated into rotated_keys.
      const Bf16* keys[16];
      for (int r = 0; r < 16; ++r) {
        keys[r] = rows[r] ? rows[r] + hidden + h * d : nullptr;
        if (rows[r] && rotation) {
          const std::int64_t at = rotation->positions[j0 + r] * rotation->half;
          rotate_head(rows[r] + h * d, q + r * d, rotation->cos + at, rotation->sin + at, d / 2);
          rotate_head(keys[r], rotated_keys + r * d, rotation->cos + at, rotation->sin + at, d / 2);
          keys[r] = rotated_keys + r * d;
          continue;
        }
        for (std::int64_t c = 0; c < d; c += 32)
          _mm512_storeu_si512(q + r * d + c,
                              rows[r] ? _mm512_loadu_si512(rows[r] + h * d + c) : zero);
      }
      // Kᵀ: 16 keys × 16 pairs, transposed as 32-bit words.
      for (std::int64_t c0 = 0; c0 < d; c0 += 32) {
        __m512i block[16];
        for (int r = 0; r < 16; ++r) block[r] = keys[r] ? _mm512_loadu_si512(keys[r] + c0) : zero;
        transpose_16x16(block);
        std::uint32_t* kt = m.kt_head(h) + (c0 / 2) * m.lp32 + j0;
        for (int c = 0; c < 16; ++c) _mm512_storeu_si512(kt + c * m.lp32, block[c]);
      }
    }
    for (int r = 0; r < 16; r += 2) {
      const Bf16* v0 = rows[r] ? rows[r] + 2 * hidden : nullptr;
      const Bf16* v1 = rows[r + 1] ? rows[r + 1] + 2 * hidden : nullptr;
      for (std::int64_t n = 0; n < hidden; n += 32) {
        const __m512i a = v0 ? _mm512_loadu_si512(v0 + n) : zero;
        const __m512i b = v1 ? _mm512_loadu_si512(v1 + n) : zero;
        std::uint32_t* dst = m.vv_head(n / d) + ((j0 + r) / 2) * d + n % d;
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(a, order.lo, b));
        _mm512_storeu_si512(dst + 16, _mm512_permutex2var_epi16(a, order.hi, b));
      }
    }
  }
}

void amx_attention_head(const void* packed, std::int64_t len, std::int64_t hidden,
                        std::int64_t heads, std::int64_t h, float scale, const float* bias,
                        const KernelTable& kernels, void* block, Bf16* out, std::int64_t ld_out) {
  if (len <= 0) return;
  const Packed m(const_cast<void*>(packed), len, hidden, heads);
  const std::int64_t d = m.d, lp32 = m.lp32;
  const Block b(block, lp32);
  const Bf16* q = m.q_head(h);
  const std::uint32_t* kt = m.kt_head(h);
  const std::uint32_t* vv = m.vv_head(h);
  // The library's kernels load their own tile configurations between our calls.
  configure_tiles();
  const std::int64_t key_blocks = (len + 15) / 16;
  for (std::int64_t i0 = 0; i0 < len; i0 += 16) {
    const std::int64_t rows = len - i0 < 16 ? len - i0 : 16;
    // Scores [16, keys]: A = the block's queries, B = Kᵀ, d / 32 steps.
    tile_products(key_blocks, q + i0 * d, d * 2, kt, lp32 * 4, 16 * lp32, d / 32, b.s, lp32 * 4);
    // P's rows past `rows` keep stale values: a row of a tile product depends only on the same
    // row of A, and those context rows are never written out.
    for (std::int64_t r = 0; r < rows; ++r) {
      if (bias) add_bias(b.s + r * lp32, bias - (i0 + r), len, 1.0f / scale);
      softmax_row(b.s + r * lp32, b.p + r * lp32, len, lp32, scale);
    }
    // Context [16, d]: A = P, B = V, lp32 / 32 steps.
    tile_products(d / 16, b.p, lp32 * 2, vv, d * 4, 16 * d, lp32 / 32, b.o, d * 4);
    for (std::int64_t r = 0; r < rows; ++r) {
      Bf16* dst = out + (i0 + r) * ld_out + h * d;
      for (std::int64_t c = 0; c < d; c += 16)
        store_bf16(dst + c, _mm512_loadu_ps(b.o + r * d + c));
    }
  }
}

void dot_attention_head(const void* packed, std::int64_t len, std::int64_t hidden,
                        std::int64_t heads, std::int64_t h, float scale, const float* bias,
                        void* block, Bf16* out, std::int64_t ld_out,
                        const FusedRelative* relative) {
  if (len <= 0) return;
  constexpr std::int64_t kRows = 8;
  const Packed m(const_cast<void*>(packed), len, hidden, heads);
  const std::int64_t d = m.d, lp32 = m.lp32;
  const Block b(block, lp32);  // room for 16 queries; 8 are used
  const Bf16* q = m.q_head(h);
  const std::uint32_t* kt = m.kt_head(h);
  const std::uint32_t* vv = m.vv_head(h);
  // Pairs of keys with a probability: P is zero from len to lp32, and so are V's rows there.
  const std::int64_t key_pairs = (len + 1) / 2;
  // DeBERTa: [len, reach] p2c products once, then [8, reach] c2p products per block.
  const std::int64_t reach32 = relative ? round_up(relative->reach, 32) : 0;
  float* p2c = nullptr;
  float* c2p = nullptr;
  if (relative) {
    float* products = static_cast<float*>(relative->scratch);
    if (relative->query_pairs) {
      p2c = products;
      relative_p2c(*relative, len, d, p2c, reach32);
    }
    if (relative->key_pairs) c2p = products + round_up(len, 8) * reach32;
  }
  for (std::int64_t i0 = 0; i0 < len; i0 += kRows) {
    const std::int64_t rows = len - i0 < kRows ? len - i0 : kRows;
    // Scores [8, keys]: queries past len are zero rows of the packed Q (lp32 is a multiple of
    // 32), and their scores are never used.
    const std::uint32_t* qa[kRows];
    for (std::int64_t r = 0; r < kRows; ++r)
      qa[r] = reinterpret_cast<const std::uint32_t*>(q + (i0 + r) * d);
    for (std::int64_t j0 = 0; j0 < len; j0 += 32)
      pair_products(qa, kt + j0, lp32, d / 2, b.s + j0, lp32);
    if (c2p) {
      for (std::int64_t t0 = 0; t0 < relative->reach; t0 += 32)
        pair_products(qa, relative->key_pairs + relative->lowest + t0, relative->pair_stride, d / 2,
                      c2p + t0, reach32);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      if (relative)
        add_relative_row(b.s + r * lp32, i0 + r, len, *relative, c2p ? c2p + r * reach32 : nullptr,
                         p2c, reach32);
      if (bias) add_bias(b.s + r * lp32, bias - (i0 + r), len, 1.0f / scale);
      softmax_row(b.s + r * lp32, b.p + r * lp32, len, lp32, scale);
    }
    context_products(b.p, lp32, rows, vv, d, key_pairs, b.o);
    for (std::int64_t r = 0; r < rows; ++r) {
      Bf16* dst = out + (i0 + r) * ld_out + h * d;
      for (std::int64_t c = 0; c < d; c += 16)
        store_bf16(dst + c, _mm512_loadu_ps(b.o + r * d + c));
    }
  }
}

namespace {

// One thread's scratch of the tiled kernel: a block of 8 queries' scores and probabilities
// against one chunk of keys, their running context, its chunk's share, maxima and sums.
struct TiledDotBlock {
  static constexpr std::int64_t kRows = 8;
  float* s;
  Bf16* p;
  float *o, *t, *max, *sum;
  TiledDotBlock(void* base, std::int64_t d) {
    char* at = static_cast<char*>(base);
    s = reinterpret_cast<float*>(at);
    at += aligned(kRows * kDotKeyChunk * 4);
    p = reinterpret_cast<Bf16*>(at);
    at += aligned(kRows * kDotKeyChunk * 2);
    o = reinterpret_cast<float*>(at);
    at += aligned(kRows * d * 4);
    t = reinterpret_cast<float*>(at);
    at += aligned(kRows * d * 4);
    max = reinterpret_cast<float*>(at);
    sum = max + kRows;
  }
  static std::int64_t bytes(std::int64_t d) {
    return aligned(kRows * kDotKeyChunk * 4) + aligned(kRows * kDotKeyChunk * 2) +
           2 * aligned(kRows * d * 4) + aligned(2 * kRows * 4);
  }
};

}  // namespace

std::int64_t fused_tiled_block_bytes(std::int64_t d) { return TiledDotBlock::bytes(d); }

void dot_attention_head_tiled(const void* packed, std::int64_t len, std::int64_t hidden,
                              std::int64_t heads, std::int64_t h, float scale, std::int64_t half,
                              std::int64_t first, std::int64_t count, void* block, Bf16* out,
                              std::int64_t ld_out) {
  if (len <= 0) return;
  constexpr std::int64_t kRows = TiledDotBlock::kRows;
  const Packed m(const_cast<void*>(packed), len, hidden, heads);
  const std::int64_t d = m.d, lp32 = m.lp32;
  const TiledDotBlock b(block, d);
  const Bf16* q = m.q_head(h);
  const std::uint32_t* kt = m.kt_head(h);
  const std::uint32_t* vv = m.vv_head(h);
  const std::int64_t last = first + count < len ? first + count : len;
  for (std::int64_t i0 = first; i0 < last; i0 += kRows) {
    const std::int64_t rows = last - i0 < kRows ? last - i0 : kRows;
    // Queries past len are zero rows of the packed Q (lp32 is a multiple of 32).
    const std::uint32_t* qa[kRows];
    for (std::int64_t r = 0; r < kRows; ++r)
      qa[r] = reinterpret_cast<const std::uint32_t*>(q + (i0 + r) * d);
    // The block's keys, from a multiple of 32 (whole 32-key steps of Kᵀ and V) to its band's end.
    const std::int64_t first_key = (i0 - half > 0 ? i0 - half : 0) / 32 * 32;
    const std::int64_t end_key = i0 + rows + half < len ? i0 + rows + half : len;
    for (std::int64_t r = 0; r < kRows; ++r) {
      b.max[r] = -__builtin_inff();
      b.sum[r] = 0.0f;
    }
    std::memset(b.o, 0, static_cast<std::size_t>(kRows * d) * sizeof(float));
    for (std::int64_t c0 = first_key; c0 < end_key; c0 += kDotKeyChunk) {
      const std::int64_t keys = end_key - c0 < kDotKeyChunk ? end_key - c0 : kDotKeyChunk;
      const std::int64_t padded = round_up(keys, 32);
      for (std::int64_t j0 = 0; j0 < keys; j0 += 32)
        pair_products(qa, kt + c0 + j0, lp32, d / 2, b.s + j0, kDotKeyChunk);
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t i = i0 + r;
        // The keys of this chunk query i sees: [lo, hi), maybe none.
        std::int64_t lo = i - half - c0, hi = i + half + 1 - c0;
        lo = lo < 0 ? 0 : (lo > keys ? keys : lo);
        hi = hi < lo ? lo : (hi > keys ? keys : hi);
        Bf16* p = b.p + r * kDotKeyChunk;
        if (hi == lo) {
          std::memset(p, 0, static_cast<std::size_t>(padded) * sizeof(Bf16));
          continue;
        }
        const float factor =
            online_row(b.s + r * kDotKeyChunk, p, lo, hi, padded, scale, b.max + r, b.sum + r);
        const __m512 f = _mm512_set1_ps(factor);
        for (std::int64_t c = 0; c < d; c += 16)
          _mm512_storeu_ps(b.o + r * d + c, _mm512_mul_ps(_mm512_loadu_ps(b.o + r * d + c), f));
      }
      // This chunk's share of the context.
      context_products(b.p, kDotKeyChunk, rows, vv + (c0 / 2) * d, d, padded / 2, b.t);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < d; c += 16)
          _mm512_storeu_ps(b.o + r * d + c, _mm512_add_ps(_mm512_loadu_ps(b.o + r * d + c),
                                                          _mm512_loadu_ps(b.t + r * d + c)));
    }
    // Every query sees at least itself, so every sum is positive.
    for (std::int64_t r = 0; r < rows; ++r) {
      const __m512 inverse = _mm512_set1_ps(1.0f / b.sum[r]);
      Bf16* dst = out + (i0 + r) * ld_out + h * d;
      for (std::int64_t c = 0; c < d; c += 16)
        store_bf16(dst + c, _mm512_mul_ps(_mm512_loadu_ps(b.o + r * d + c), inverse));
    }
  }
}

}  // namespace mcinfer::cpu
