#include "cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace mcinfer::cpu {
namespace {

// Reference: per sequence and head, softmax(QKᵀ/√d)V in double.
std::vector<double> reference(const std::vector<float>& qkv, const std::vector<SequenceSpan>& seqs,
                              int heads, std::int64_t hidden, std::int64_t tokens) {
  const std::int64_t d = hidden / heads;
  std::vector<double> ctx(static_cast<std::size_t>(tokens * hidden), 0.0);
  for (const auto& s : seqs) {
    for (int h = 0; h < heads; ++h) {
      for (std::int64_t i = 0; i < s.length; ++i) {
        std::vector<double> p(static_cast<std::size_t>(s.length));
        double mx = -1e300;
        for (std::int64_t j = 0; j < s.length; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c) {
            dot += double(qkv[(s.offset + i) * 3 * hidden + h * d + c]) *
                   qkv[(s.offset + j) * 3 * hidden + hidden + h * d + c];
          }
          p[j] = dot / std::sqrt(double(d));
          mx = std::max(mx, p[j]);
        }
        double total = 0;
        for (auto& v : p) total += (v = std::exp(v - mx));
        for (std::int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (std::int64_t j = 0; j < s.length; ++j) {
            acc += p[j] / total * qkv[(s.offset + j) * 3 * hidden + 2 * hidden + h * d + c];
          }
          ctx[(s.offset + i) * hidden + h * d + c] = acc;
        }
      }
    }
  }
  return ctx;
}

void expect_matches_reference(int heads, std::int64_t hidden, std::vector<SequenceSpan> seqs) {
  std::int64_t tokens = 0;
  for (const auto& s : seqs) tokens = std::max(tokens, s.offset + s.length);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0, 1);
  std::vector<float> qkv(static_cast<std::size_t>(tokens * 3 * hidden));
  for (auto& v : qkv) v = dist(rng);
  auto want = reference(qkv, seqs, heads, hidden, tokens);
  for (Isa isa : supported_isas()) {
    for (int threads : {1, 2}) {
      for (std::int64_t own_max :
           {std::int64_t{0}, std::int64_t{5}, std::int64_t{1} << 30, std::int64_t{-1}}) {
        std::vector<float> ctx(static_cast<std::size_t>(tokens * hidden), -1.0f);
        AttentionScratch scratch;
        attention(kernels_for(isa), qkv.data(), ctx.data(), seqs, heads, hidden, scratch, threads,
                  own_max);
        for (std::size_t i = 0; i < ctx.size(); ++i) {
          ASSERT_NEAR(ctx[i], want[i], 1e-5)
              << isa_name(isa) << " threads " << threads << " own<=" << own_max << " at " << i;
        }
      }
    }
  }
}

// Head size 8: every vector loop of the fused kernel runs only its tail.
TEST(Attention, PackedSequencesMatchReference) {
  expect_matches_reference(4, 32, {{0, 5}, {5, 1}, {6, 17}, {23, 2}});
}

// Head sizes 32 and 72 (two full vectors and a tail at every width), sequences around the
// register-block and vector boundaries, and one long enough for the default library path.
TEST(Attention, WideHeadsAndLongSequencesMatchReference) {
  expect_matches_reference(2, 64, {{0, 40}, {40, 3}, {43, 129}, {172, 16}, {188, 9}});
  expect_matches_reference(2, 144, {{0, 33}, {33, 8}, {41, 31}});
}

}  // namespace
}  // namespace mcinfer::cpu
