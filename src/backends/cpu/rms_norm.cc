// RMS norms (Qwen3, Gemma): transformers' RMSNorm in float32, rows split across the threads.

#include <cmath>

#include "backends/cpu/ops.h"

namespace mcinfer::ops {
namespace {

// One row: x / √(mean(x²) + eps) · gamma. The sum of squares is accumulated in double, so it is
// the exactly rounded mean whatever order torch's reduction takes (they differ by an ulp or two).
void rms_row(const float* x, float* out, std::int64_t cols, const float* gamma, float eps) {
  double squares = 0;
  for (std::int64_t c = 0; c < cols; ++c) squares += static_cast<double>(x[c]) * x[c];
  const float mean = static_cast<float>(squares / static_cast<double>(cols));
  const float inverse = 1.0f / std::sqrt(mean + eps);
  for (std::int64_t c = 0; c < cols; ++c) out[c] = gamma[c] * (x[c] * inverse);
}

template <typename Fn>
void for_rows(Context& ctx, std::int64_t rows, Fn&& fn) {
  const int threads = ctx.threads();
  if (threads <= 1 || rows < 2 * threads) {
    for (std::int64_t r = 0; r < rows; ++r) fn(r);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) fn(r);
}

}  // namespace

void rms_norm(Context& ctx, const float* x, std::int64_t ld_x, float* out, std::int64_t ld_out,
              std::int64_t rows, std::int64_t cols, const float* gamma, float eps) {
  ScopedOpTimer timer(ctx, OpKind::kLayerNorm);
  for_rows(ctx, rows,
           [&](std::int64_t r) { rms_row(x + r * ld_x, out + r * ld_out, cols, gamma, eps); });
}

void head_rms_norm(Context& ctx, float* qkv, std::int64_t ld, std::int64_t rows, std::int64_t first,
                   std::int64_t heads, std::int64_t head_dim, const float* gamma, float eps) {
  ScopedOpTimer timer(ctx, OpKind::kLayerNorm);
  for_rows(ctx, rows, [&](std::int64_t r) {
    float* row = qkv + r * ld + first;
    for (std::int64_t h = 0; h < heads; ++h)
      rms_row(row + h * head_dim, row + h * head_dim, head_dim, gamma, eps);
  });
}

}  // namespace mcinfer::ops
