#pragma once
// The model fixtures of tests/fixtures/models (tiny random checkpoints written by
// tools/gen_fixtures.py, each with the outputs of transformers on a padded batch) and their
// inputs as model::SequenceInput rows.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "model/task.h"
#include "support/paths.h"
#include "support/reference.h"

namespace mcinfer::testing {

inline std::vector<std::string> model_fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(fixture("models"))) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The reference batch: [batch, length] ids, mask and token types, padded; one SequenceInput per
// row (views of the vectors here: keep the FixtureInputs alive while they are used).
struct FixtureInputs {
  std::int64_t batch = 0, length = 0;
  std::vector<std::int32_t> ids, mask, types;
  std::vector<model::SequenceInput> sequences;
};

inline FixtureInputs load_fixture_inputs(const Reference& ref) {
  FixtureInputs in;
  const auto shape = ref.shape("input_ids");
  in.batch = shape[0];
  in.length = shape[1];
  in.ids = ref.ints("input_ids");
  in.mask = ref.ints("attention_mask");
  in.types = ref.ints("token_type_ids");
  for (std::int64_t b = 0; b < in.batch; ++b) {
    const std::size_t off = static_cast<std::size_t>(b * in.length),
                      n = static_cast<std::size_t>(in.length);
    in.sequences.push_back({std::span(in.ids).subspan(off, n), std::span(in.types).subspan(off, n),
                            std::span(in.mask).subspan(off, n)});
  }
  return in;
}

// The largest |got - want|, or +inf when the sizes differ.
inline float max_abs_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  float worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  return worst;
}

}  // namespace mcinfer::testing
