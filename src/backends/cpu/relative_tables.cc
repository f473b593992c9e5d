#include "backends/cpu/relative_tables.h"

#include <dnnl.h>

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace mcinfer::cpu {
namespace {

// out = table · weightᵀ + bias, [rows, hidden].
void project(const float* table, std::int64_t rows, std::int64_t hidden,
             const RelativeProjection& p, AlignedBuffer<float>& out) {
  out.resize(static_cast<std::size_t>(rows * hidden));
  if (dnnl_sgemm('N', 'T', rows, hidden, hidden, 1.0f, table, hidden, p.weight, hidden, 0.0f,
                 out.data(), hidden) != dnnl_success)
    fail("internal: projecting the relative-position table failed");
  if (p.bias == nullptr) return;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < hidden; ++c) out.data()[r * hidden + c] += p.bias[c];
}

std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

// Head h's [d/2][stride] words: word (c, t) = bf16 pair (table[t, h·d + 2c], table[t, h·d + 2c +
// 1]); columns past rows are zero.
void pack_pairs(const AlignedBuffer<float>& table, std::int64_t rows, std::int64_t hidden,
                std::int64_t heads, std::int64_t stride, AlignedBuffer<std::uint32_t>& out) {
  const std::int64_t d = hidden / heads;
  out.resize_zeroed(static_cast<std::size_t>(heads * (d / 2) * stride));
  std::memset(out.data(), 0, out.size() * sizeof(std::uint32_t));
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t c = 0; c < d / 2; ++c)
      for (std::int64_t t = 0; t < rows; ++t) {
        const float* at = table.data() + t * hidden + h * d + 2 * c;
        out.data()[(h * (d / 2) + c) * stride + t] =
            static_cast<std::uint32_t>(to_bf16(at[0])) |
            (static_cast<std::uint32_t>(to_bf16(at[1])) << 16);
      }
}

}  // namespace

void layer_norm_rows(float* x, std::int64_t rows, std::int64_t cols, const float* gamma,
                     const float* beta, float eps) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    double mean = 0, var = 0;
    for (std::int64_t c = 0; c < cols; ++c) mean += row[c];
    mean /= static_cast<double>(cols);
    for (std::int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(cols);
    const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
    for (std::int64_t c = 0; c < cols; ++c)
      row[c] = static_cast<float>((row[c] - mean) * inv) * gamma[c] + beta[c];
  }
}

RelativeTables RelativeTables::build(const float* table, std::int64_t rows, std::int64_t hidden,
                                     std::int64_t heads, RelativeProjection key,
                                     RelativeProjection query) {
  RelativeTables t;
  t.rows_ = rows;
  t.hidden_ = hidden;
  // Whole 32-column reads from any row below `rows` (the kernel reads 32 at a time).
  t.pair_stride_ = (rows + 31) / 32 * 32 + 32;
  const bool pairs = (hidden / heads) % 2 == 0;
  if (key.weight) {
    project(table, rows, hidden, key, t.key_);
    if (pairs) pack_pairs(t.key_, rows, hidden, heads, t.pair_stride_, t.key_pairs_);
  }
  if (query.weight) {
    project(table, rows, hidden, query, t.query_);
    if (pairs) pack_pairs(t.query_, rows, hidden, heads, t.pair_stride_, t.query_pairs_);
  }
  return t;
}

RelativeTerms RelativeTables::terms(const std::int32_t* index, std::int64_t origin,
                                    std::int64_t scale_terms) const {
  RelativeTerms r;
  r.key = key_.size() ? key_.data() : nullptr;
  r.query = query_.size() ? query_.data() : nullptr;
  r.key_pairs = key_pairs_.size() ? key_pairs_.data() : nullptr;
  r.query_pairs = query_pairs_.size() ? query_pairs_.data() : nullptr;
  r.pair_stride = pair_stride_;
  r.rows = rows_;
  r.index = index;
  r.origin = origin;
  r.scale_terms = scale_terms;
  return r;
}

std::size_t RelativeTables::bytes() const {
  return key_.size() * 4 + query_.size() * 4 + key_pairs_.size() * 4 + query_pairs_.size() * 4;
}

}  // namespace mcinfer::cpu
