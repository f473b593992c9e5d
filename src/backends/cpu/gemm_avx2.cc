#include "backends/cpu/gemm_avx2.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace mcinfer::cpu::avx2 {
namespace {

// Rows per micro-tile: 6 rows × 2 vectors of 8 = 12 accumulators, plus 2 for the panel's row
// and 1 for the broadcast input: 15 of the 16 ymm registers.
constexpr int kTileRows = 6;
// Rows per block: the block's inputs (rows × in) stay in the L2 cache (512 KiB a core on Zen 3)
// while every panel passes over them; at least one tile, at most 96 rows.
constexpr std::int64_t kBlockBytes = 192 * 1024;

std::int64_t block_rows(std::int64_t in, std::int64_t element_bytes) {
  const std::int64_t rows = kBlockBytes / std::max<std::int64_t>(1, in * element_bytes);
  return std::clamp<std::int64_t>(rows / kTileRows * kTileRows, kTileRows, 96);
}

std::int64_t panels_of(std::int64_t out) { return (out + kPanel - 1) / kPanel; }
std::int64_t pairs_of(std::int64_t in) { return (in + 1) / 2; }

// The 16 outputs of `rows` rows in `tile` (16 a row) written to y (row stride ld), `cols` of
// them (the last panel may hold fewer).
template <typename T>
void copy_tile(const T* tile, int rows, int cols, T* y, std::int64_t ld) {
  for (int r = 0; r < rows; ++r) std::memcpy(y + r * ld, tile + r * kPanel, sizeof(T) * cols);
}

// A panel's 16 weights of one input, as two vectors of 8 f32. bf16 panels are widened here: the
// bits moved up 16 places are the same number in f32, exactly.
struct PanelRow {
  __m256 lo, hi;
};
inline PanelRow panel_row(const float* p) { return {_mm256_load_ps(p), _mm256_load_ps(p + 8)}; }
inline PanelRow panel_row(const Bf16* p) {
  const auto* v = reinterpret_cast<const __m128i*>(p);
  auto widen = [](__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  };
  return {widen(_mm_load_si128(v)), widen(_mm_load_si128(v + 1))};
}

// f32 inputs (bf16 ones widened first): acc[r] += x[r, i] · panel[i, :] for i in input order,
// then + bias. With bf16 inputs and weights every product is exact in f32, so each sum differs
// from any other f32 accumulation of the same products only by its order.
template <int R, typename W>
void tile_fma(const float* x, std::int64_t ldx, const W* panel, std::int64_t in, const float* bias,
              float* y, std::int64_t ldy) {
  __m256 lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
  for (std::int64_t i = 0; i < in; ++i) {
    const PanelRow b = panel_row(panel + i * kPanel);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(x + r * ldx + i);
      lo[r] = _mm256_fmadd_ps(a, b.lo, lo[r]);
      hi[r] = _mm256_fmadd_ps(a, b.hi, hi[r]);
    }
  }
  if (bias) {
    const __m256 c0 = _mm256_loadu_ps(bias), c1 = _mm256_loadu_ps(bias + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) lo[r] = _mm256_add_ps(lo[r], c0), hi[r] = _mm256_add_ps(hi[r], c1);
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(y + r * ldy, lo[r]);
    _mm256_storeu_ps(y + r * ldy + 8, hi[r]);
  }
}

// s8 widened to s16: acc[r] += (x[r, 2p], x[r, 2p + 1]) · panel pair p, exact in s32.
template <int R>
void tile_s16(const std::int16_t* x, std::int64_t ldx, const std::int8_t* panel, std::int64_t pairs,
              std::int32_t* y, std::int64_t ldy) {
  __m256i lo[R], hi[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  for (std::int64_t p = 0; p < pairs; ++p) {
    const auto* b = reinterpret_cast<const __m128i*>(panel + p * 2 * kPanel);
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_load_si128(b));
    const __m256i b1 = _mm256_cvtepi8_epi16(_mm_load_si128(b + 1));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      std::int32_t two;
      std::memcpy(&two, x + r * ldx + 2 * p, sizeof two);
      const __m256i a = _mm256_set1_epi32(two);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(a, b0));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(a, b1));
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + r * ldy), lo[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + r * ldy + 8), hi[r]);
  }
}

// One call per tile height, so that each keeps its accumulators in registers.
template <typename Tile>
void for_tile_height(int rows, Tile&& tile) {
  switch (rows) {
    case 6:
      return tile(std::integral_constant<int, 6>{});
    case 5:
      return tile(std::integral_constant<int, 5>{});
    case 4:
      return tile(std::integral_constant<int, 4>{});
    case 3:
      return tile(std::integral_constant<int, 3>{});
    case 2:
      return tile(std::integral_constant<int, 2>{});
    default:
      return tile(std::integral_constant<int, 1>{});
  }
}

// panel_work(j, rows begin, rows end) for every panel j of a block of rows, the panels split
// between `threads` (static: each output is computed the same way whoever computes it).
template <typename Work>
void over_panels(std::int64_t panels, int threads, Work&& panel_work) {
  if (threads <= 1 || panels < 2) {
    for (std::int64_t j = 0; j < panels; ++j) panel_work(j);
    return;
  }
  const int team = static_cast<int>(std::min<std::int64_t>(threads, panels));
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::int64_t j = 0; j < panels; ++j) panel_work(j);
}

// Panels of any element type: panel j holds value(16j + c, i) at i·16 + c, zeros past `out`.
template <typename T, typename Value>
void pack_panels(std::int64_t out, std::int64_t in, T* panels, Value&& value) {
  for (std::int64_t j = 0; j < panels_of(out); ++j) {
    T* panel = panels + j * kPanel * in;
    for (std::int64_t i = 0; i < in; ++i)
      for (std::int64_t c = 0; c < kPanel; ++c) {
        const std::int64_t o = j * kPanel + c;
        panel[i * kPanel + c] = o < out ? value(o, i) : T{0};
      }
  }
}

}  // namespace

std::int64_t packed_f32_size(std::int64_t out, std::int64_t in) {
  return panels_of(out) * kPanel * in;
}

std::int64_t packed_bf16_size(std::int64_t out, std::int64_t in) {
  return packed_f32_size(out, in);
}

std::int64_t packed_s8_size(std::int64_t out, std::int64_t in) {
  return panels_of(out) * kPanel * pairs_of(in) * 2;
}

void pack_f32(const float* w, std::int64_t out, std::int64_t in, float* panels) {
  pack_panels(out, in, panels, [&](std::int64_t o, std::int64_t i) { return w[o * in + i]; });
}

void pack_bf16(const Bf16* w, std::int64_t out, std::int64_t in, std::int64_t ld, Bf16* panels) {
  pack_panels(out, in, panels, [&](std::int64_t o, std::int64_t i) { return w[o * ld + i]; });
}

void pack_bf16_transposed(const Bf16* w, std::int64_t out, std::int64_t in, std::int64_t ld,
                          Bf16* panels) {
  pack_panels(out, in, panels, [&](std::int64_t o, std::int64_t i) { return w[i * ld + o]; });
}

void pack_s8(const std::int8_t* q, std::int64_t out, std::int64_t in, std::int8_t* panels) {
  const std::int64_t pairs = pairs_of(in);
  for (std::int64_t j = 0; j < panels_of(out); ++j) {
    std::int8_t* panel = panels + j * kPanel * pairs * 2;
    for (std::int64_t p = 0; p < pairs; ++p)
      for (std::int64_t c = 0; c < kPanel; ++c)
        for (std::int64_t t = 0; t < 2; ++t) {
          const std::int64_t o = j * kPanel + c, i = 2 * p + t;
          panel[p * 2 * kPanel + c * 2 + t] = o < out && i < in ? q[o * in + i] : 0;
        }
  }
}

void gemm_f32(const float* panels, const float* x, std::int64_t rows, std::int64_t in,
              std::int64_t out, const float* bias, Activation act, const KernelTable& epilogue,
              float* y, int threads) {
  const std::int64_t block = block_rows(in, sizeof(float)), n_panels = panels_of(out);
  for (std::int64_t r0 = 0; r0 < rows; r0 += block) {
    const std::int64_t r1 = std::min(rows, r0 + block);
    over_panels(n_panels, threads, [&](std::int64_t j) {
      const float* panel = panels + j * kPanel * in;
      const int cols = static_cast<int>(std::min<std::int64_t>(kPanel, out - j * kPanel));
      alignas(32) float tile[kTileRows * kPanel];
      alignas(32) float tile_bias[kPanel] = {};
      const float* b = nullptr;
      if (bias) {
        std::memcpy(tile_bias, bias + j * kPanel, sizeof(float) * cols);
        b = tile_bias;
      }
      for (std::int64_t r = r0; r < r1; r += kTileRows) {
        const int height = static_cast<int>(std::min<std::int64_t>(kTileRows, r1 - r));
        float* dst = y + r * out + j * kPanel;
        const bool whole = cols == kPanel;
        for_tile_height(height, [&](auto h) {
          tile_fma<decltype(h)::value>(x + r * in, in, panel, in, b, whole ? dst : tile,
                                       whole ? out : kPanel);
        });
        if (!whole) copy_tile(tile, height, cols, dst, out);
        if (act != Activation::kNone)
          epilogue.bias_activation(dst, height, cols, out, nullptr, act);
      }
    });
  }
}

std::int64_t bf16_scratch_size(std::int64_t rows, std::int64_t in) {
  return std::min(rows, block_rows(in, sizeof(float))) * in;
}

void gemm_bf16(const Bf16* panels, const Bf16* x, std::int64_t ldx, std::int64_t rows,
               std::int64_t in, std::int64_t out, const float* bias, Activation act,
               const KernelTable& epilogue, Bf16Output y, float* scratch, int threads) {
  const std::int64_t block = block_rows(in, sizeof(float)), n_panels = panels_of(out);
  for (std::int64_t r0 = 0; r0 < rows; r0 += block) {
    const std::int64_t r1 = std::min(rows, r0 + block);
    // The block's inputs widened to f32 once (exact), read by every panel.
    for (std::int64_t r = r0; r < r1; ++r) {
      const Bf16* src = x + r * ldx;
      float* dst = scratch + (r - r0) * in;
      for (std::int64_t i = 0; i < in; ++i)
        dst[i] = std::bit_cast<float>(static_cast<std::uint32_t>(src[i]) << 16);
    }
    over_panels(n_panels, threads, [&](std::int64_t j) {
      const Bf16* panel = panels + j * kPanel * in;
      const int cols = static_cast<int>(std::min<std::int64_t>(kPanel, out - j * kPanel));
      alignas(32) float tile[kTileRows * kPanel];
      alignas(32) float tile_bias[kPanel] = {};
      const float* b = nullptr;
      if (bias) {
        std::memcpy(tile_bias, bias + j * kPanel, sizeof(float) * cols);
        b = tile_bias;
      }
      for (std::int64_t r = r0; r < r1; r += kTileRows) {
        const int height = static_cast<int>(std::min<std::int64_t>(kTileRows, r1 - r));
        // Whole panels of f32 rows are written in place; the rest through the tile.
        const bool direct = y.f32 != nullptr && cols == kPanel;
        float* sums = direct ? y.f32 + r * y.ld + j * kPanel : tile;
        const std::int64_t ld = direct ? y.ld : kPanel;
        for_tile_height(height, [&](auto h) {
          tile_fma<decltype(h)::value>(scratch + (r - r0) * in, in, panel, in, b, sums, ld);
        });
        // The activation in f32, then one rounding to bf16 (the order of the library's
        // epilogue: sum, bias, activation, convert).
        if (act != Activation::kNone)
          epilogue.bias_activation(sums, height, cols, ld, nullptr, act);
        if (y.bf16 != nullptr) {
          for (int t = 0; t < height; ++t)
            epilogue.to_bf16(tile + t * kPanel, y.bf16 + (r + t) * y.ld + j * kPanel, cols);
        } else if (!direct) {
          copy_tile(tile, height, cols, y.f32 + r * y.ld + j * kPanel, y.ld);
        }
      }
    });
  }
}

std::int64_t s8_scratch_size(std::int64_t rows, std::int64_t in) {
  return std::min(rows, block_rows(in, 2)) * pairs_of(in) * 2;
}

void gemm_s8(const std::int8_t* panels, const std::int8_t* x, std::int64_t rows, std::int64_t in,
             std::int64_t out, std::int32_t* y, std::int16_t* scratch, int threads) {
  const std::int64_t block = block_rows(in, 2), n_panels = panels_of(out);
  const std::int64_t pairs = pairs_of(in), ldx = pairs * 2;
  for (std::int64_t r0 = 0; r0 < rows; r0 += block) {
    const std::int64_t r1 = std::min(rows, r0 + block);
    // The block's inputs widened to s16 once (an odd input count padded with a zero), read by
    // every panel.
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int16_t* row = scratch + (r - r0) * ldx;
      for (std::int64_t i = 0; i < in; ++i) row[i] = x[r * in + i];
      if (ldx > in) row[in] = 0;
    }
    over_panels(n_panels, threads, [&](std::int64_t j) {
      const std::int8_t* panel = panels + j * kPanel * pairs * 2;
      const int cols = static_cast<int>(std::min<std::int64_t>(kPanel, out - j * kPanel));
      alignas(32) std::int32_t tile[kTileRows * kPanel];
      for (std::int64_t r = r0; r < r1; r += kTileRows) {
        const int height = static_cast<int>(std::min<std::int64_t>(kTileRows, r1 - r));
        std::int32_t* dst = y + r * out + j * kPanel;
        const bool whole = cols == kPanel;
        for_tile_height(height, [&](auto h) {
          tile_s16<decltype(h)::value>(scratch + (r - r0) * ldx, ldx, panel, pairs,
                                       whole ? dst : tile, whole ? out : kPanel);
        });
        if (!whole) copy_tile(tile, height, cols, dst, out);
      }
    });
  }
}

}  // namespace mcinfer::cpu::avx2
