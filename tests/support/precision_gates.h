#pragma once
// The accuracy gates of a reduced-precision run against transformers' fp32 references, with the
// bounds of the precision under test (bf16: issue 12, int8: issue 13).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/paths.h"
#include "support/predictions.h"

namespace mcinfer::testing {

inline double cosine(const std::vector<double>& a, const float* b) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    dot += a[j] * b[j];
    na += a[j] * a[j];
    nb += double(b[j]) * b[j];
  }
  return dot / std::sqrt(na * nb);
}

struct ClassifierGate {
  double max_abs_diff;  // on every probability
  double min_margin;    // rows whose fp32 top-2 margin is at least this keep their argmax
};

// |p − p_fp32| ≤ max_abs_diff everywhere, and the same argmax on every row whose fp32 top-2
// margin is at least min_margin. The outputs must differ from fp32 somewhere (else the reduced
// precision did not run).
inline void expect_classifier_gate(const Table& got, const std::vector<float>& want,
                                   const std::string& what, ClassifierGate gate) {
  ASSERT_FALSE(got.values.empty()) << what;
  const std::size_t dim = got.values[0].size();
  ASSERT_EQ(want.size(), got.values.size() * dim) << what;
  double worst = 0;
  int checked_argmax = 0;
  for (std::size_t i = 0; i < got.values.size(); ++i) {
    const float* w = want.data() + i * dim;
    for (std::size_t j = 0; j < dim; ++j)
      worst = std::max(worst, std::fabs(got.values[i][j] - w[j]));
    if (dim < 2) continue;
    std::vector<float> sorted(w, w + dim);
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] < gate.min_margin) continue;
    ++checked_argmax;
    const auto want_arg = std::max_element(w, w + dim) - w;
    const auto got_arg =
        std::max_element(got.values[i].begin(), got.values[i].end()) - got.values[i].begin();
    EXPECT_EQ(got_arg, want_arg) << what << " row " << i;
  }
  EXPECT_LE(worst, gate.max_abs_diff) << what;
  // fp32 is within 1e-5 of these references (the fp32 tests): a reduced precision that ran moves
  // some value further, a silent fall back to fp32 does not.
  EXPECT_GT(worst, 1e-5) << what << ": within fp32's distance: did the reduced precision run?";
  ::testing::Test::RecordProperty("max_abs_diff", std::to_string(worst));
  if (dim >= 2) {
    EXPECT_GT(checked_argmax, 0) << what;
  }
}

struct EmbeddingGate {
  double min_cosine;   // every row
  double mean_cosine;  // on average
};

// Cosine to fp32 per row and on average; recorded as test properties.
inline void expect_embedding_gate(const Table& got, const std::vector<float>& want,
                                  const std::string& what, EmbeddingGate gate) {
  ASSERT_FALSE(got.values.empty()) << what;
  const std::size_t dim = got.values[0].size();
  ASSERT_EQ(want.size(), got.values.size() * dim) << what;
  double lowest = 1, sum = 0;
  for (std::size_t i = 0; i < got.values.size(); ++i) {
    const double c = cosine(got.values[i], want.data() + i * dim);
    EXPECT_GE(c, gate.min_cosine) << what << " row " << i;
    lowest = std::min(lowest, c);
    sum += c;
  }
  const double mean = sum / static_cast<double>(got.values.size());
  EXPECT_GE(mean, gate.mean_cosine) << what;
  // fp32 (values within 1e-5) keeps every cosine above 1 − 1e-7; a reduced precision does not.
  EXPECT_LT(lowest, 1.0 - 1e-7) << what << ": as close as fp32: did the reduced precision run?";
  ::testing::Test::RecordProperty("min_cosine", std::to_string(lowest));
  ::testing::Test::RecordProperty("mean_cosine", std::to_string(mean));
}

// The multilingual tokenizer corpus (5,283 lines) as JSONL rows {id, text} in `dir`.
inline std::filesystem::path write_corpus_jsonl(const std::filesystem::path& dir) {
  std::ifstream in(fixture("tokenizer/corpus.txt"));
  auto path = dir / "corpus.jsonl";
  std::ofstream out(path);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) out << Json({{"id", n++}, {"text", line}}).dump() << "\n";
  return path;
}

}  // namespace mcinfer::testing
