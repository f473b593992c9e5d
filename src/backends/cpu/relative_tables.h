#pragma once
// DeBERTa-v2's relative-position table as one layer's attention reads it: projected by the
// layer's position key and position query projections (model::LayerDesc::position_key /
// position_query) once, at load, in float32 — the table does not depend on the input, so
// projecting it per batch (as transformers does) would repeat the same 2 · rows · hidden²
// multiply-adds every time. Kept twice: f32 rows for the f32 attention, bf16 pairs per head for
// the dot-product kernel (attention_fused.h).
//
// Immutable after build(); shared by every replica through the Weights.

#include <cstdint>

#include "backends/cpu/attention.h"
#include "core/aligned_buffer.h"

namespace mcinfer::cpu {

struct RelativeProjection {
  const float* weight = nullptr;  // [hidden, hidden], PyTorch's [out, in]
  const float* bias = nullptr;    // [hidden] or null
};

class RelativeTables {
 public:
  // table: [rows, hidden] float32, already through its LayerNorm when the model has one. A
  // projection with a null weight is not built (a model with c2p only has no position queries).
  static RelativeTables build(const float* table, std::int64_t rows, std::int64_t hidden,
                              std::int64_t heads, RelativeProjection key, RelativeProjection query);

  // The terms one batch's attention adds, with the distance → row index of that batch.
  RelativeTerms terms(const std::int32_t* index, std::int64_t origin,
                      std::int64_t scale_terms) const;
  std::size_t bytes() const;

 private:
  std::int64_t rows_ = 0, hidden_ = 0, pair_stride_ = 0;
  AlignedBuffer<float> key_, query_;
  AlignedBuffer<std::uint32_t> key_pairs_, query_pairs_;
};

// y = LayerNorm(x) over each of `rows` rows of `cols` (float32, biased variance as torch).
void layer_norm_rows(float* x, std::int64_t rows, std::int64_t cols, const float* gamma,
                     const float* beta, float eps);

}  // namespace mcinfer::cpu
