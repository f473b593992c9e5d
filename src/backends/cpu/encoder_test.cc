// The forward pass against transformers: every fixture of tests/fixtures/models (tiny random
// checkpoints written by tools/gen_fixtures.py with the reference outputs of transformers),
// on every instruction set this CPU runs, with 1 and 2 threads and both epilogue modes.
#include "backends/cpu/encoder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/json.h"
#include "support/paths.h"
#include "support/reference.h"

namespace mcinfer::cpu {
using namespace model;
namespace {

namespace fs = std::filesystem;
constexpr float kTolerance = 1e-4f;

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(testing::fixture("models"))) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Inputs {
  std::int64_t batch = 0, length = 0;
  std::vector<std::int32_t> ids, mask, types;
  std::vector<SequenceInput> sequences;
};

Inputs load_inputs(const testing::Reference& ref) {
  Inputs in;
  auto shape = ref.shape("input_ids");
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

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, kTolerance) << what << ": max abs error " << worst;
}

struct Variant {
  cpu::Isa isa;
  int threads;
  ops::EpilogueMode epilogue;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (cpu::Isa isa : cpu::supported_isas()) {
    out.push_back({isa, 1, ops::EpilogueMode::kInGemm});
  }
  out.push_back({cpu::best_isa(), 2, ops::EpilogueMode::kInGemm});
  out.push_back({cpu::best_isa(), 1, ops::EpilogueMode::kOwnKernel});
  return out;
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, MatchesTransformers) {
  const fs::path dir = testing::fixture("models/" + GetParam());
  testing::Reference ref(dir / "reference.safetensors");
  Json meta = read_json_file(dir / "reference.json");
  Inputs in = load_inputs(ref);
  const bool classify = meta["task"] == "classify";

  for (const Variant& v : variants()) {
    SCOPED_TRACE(fmt::format("{} isa={} threads={} epilogue={}", GetParam(), cpu::isa_name(v.isa),
                             v.threads, v.epilogue == ops::EpilogueMode::kInGemm ? "gemm" : "own"));
    auto device = ops::Device::cpu(v.isa);
    auto weights = Weights::load(dir, *device);
    const ModelConfig& c = weights->config();
    ASSERT_EQ(c.hidden_size, meta["hidden_size"].get<std::int64_t>());
    Encoder encoder(weights, *device, v.threads, v.epilogue);

    // Last hidden state of every real token.
    encoder.forward(in.sequences);
    auto want_hidden = ref.floats("last_hidden_state");
    std::vector<float> got, want;
    const auto spans = encoder.sequences();
    ASSERT_EQ(spans.size(), static_cast<std::size_t>(in.batch));
    for (std::int64_t b = 0; b < in.batch; ++b) {
      std::int64_t real = 0;
      for (std::int64_t i = 0; i < in.length; ++i) {
        if (in.mask[b * in.length + i] == 0) continue;
        for (std::int64_t j = 0; j < c.hidden_size; ++j) {
          got.push_back(encoder.hidden()[(spans[b].offset + real) * c.hidden_size + j]);
          want.push_back(want_hidden[(b * in.length + i) * c.hidden_size + j]);
        }
        ++real;
      }
      ASSERT_EQ(real, spans[b].length);
    }
    expect_close(got, want, "last_hidden_state");

    std::vector<float> out;
    encoder.predict(in.sequences, {TaskKind::kEmbed, Pooling::kMean, false}, out);
    expect_close(out, ref.floats("pooled_mean"), "pooled_mean");
    encoder.predict(in.sequences, {TaskKind::kEmbed, Pooling::kMean, true}, out);
    expect_close(out, ref.floats("pooled_mean_normalized"), "pooled_mean_normalized");
    encoder.predict(in.sequences, {TaskKind::kEmbed, Pooling::kCls, false}, out);
    expect_close(out, ref.floats("pooled_cls"), "pooled_cls");

    if (classify) {
      ASSERT_EQ(c.num_labels, meta["num_labels"].get<std::int64_t>());
      for (const auto& [id, label] : meta["id2label"].items()) {
        EXPECT_EQ(c.labels.at(std::stoul(id)), label.get<std::string>());
      }
      const std::string activation = meta["activation"];
      const OutputActivation expected = activation == "softmax"   ? OutputActivation::kSoftmax
                                        : activation == "sigmoid" ? OutputActivation::kSigmoid
                                                                  : OutputActivation::kNone;
      EXPECT_EQ(resolve_activation(c, OutputActivation::kAuto), expected);
      encoder.predict(in.sequences,
                      {TaskKind::kClassify, Pooling::kCls, false, OutputActivation::kNone}, out);
      expect_close(out, ref.floats("logits"), "logits");
      encoder.predict(in.sequences,
                      {TaskKind::kClassify, Pooling::kCls, false, OutputActivation::kAuto}, out);
      expect_close(out, ref.floats("probs"), "probs");
    } else {
      EXPECT_FALSE(weights->classifier().has_value());
    }
  }
}

// A sequence's outputs do not depend on what else is in its batch or how it was padded.
TEST_P(FixtureTest, PaddingAndBatchmatesNeverChangeAnOutput) {
  const fs::path dir = testing::fixture("models/" + GetParam());
  testing::Reference ref(dir / "reference.safetensors");
  Inputs in = load_inputs(ref);
  auto device = ops::Device::cpu();
  auto weights = Weights::load(dir, *device);
  Encoder encoder(weights, *device, 1);
  TaskSpec task{TaskKind::kEmbed, Pooling::kMean, false};
  std::vector<float> batch_out, alone;
  encoder.predict(in.sequences, task, batch_out);
  const std::int64_t h = weights->config().hidden_size;
  for (std::int64_t b = 0; b < in.batch; ++b) {
    // The same row with its padding stripped, then with extra padding appended.
    std::vector<std::int32_t> ids, types;
    for (std::int64_t i = 0; i < in.length; ++i) {
      if (in.mask[b * in.length + i]) {
        ids.push_back(in.ids[b * in.length + i]);
        types.push_back(in.types[b * in.length + i]);
      }
    }
    std::vector<std::int32_t> padded_ids = ids, padded_types = types, padded_mask(ids.size(), 1);
    for (int extra = 0; extra < 7; ++extra) {
      padded_ids.push_back(static_cast<std::int32_t>(weights->config().pad_token_id));
      padded_types.push_back(0);
      padded_mask.push_back(0);
    }
    for (bool pad : {false, true}) {
      SequenceInput one = pad ? SequenceInput{padded_ids, padded_types, padded_mask}
                              : SequenceInput{ids, types, {}};
      encoder.predict(std::span(&one, 1), task, alone);
      for (std::int64_t j = 0; j < h; ++j) {
        ASSERT_NEAR(alone[j], batch_out[b * h + j], 1e-5) << "row " << b << " pad " << pad;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTest, ::testing::ValuesIn(fixture_names()),
                         [](const auto& info) { return info.param; });

TEST(Encoder, RejectsIdsOutsideTheModel) {
  auto device = ops::Device::cpu();
  auto weights = Weights::load(testing::fixture("models/bert_embed"), *device);
  Encoder encoder(weights, *device, 1);
  std::vector<float> out;
  const auto& c = weights->config();
  auto message = [&](std::vector<std::int32_t> ids, std::vector<std::int32_t> types) {
    SequenceInput in{ids, types, {}};
    try {
      encoder.predict(std::span(&in, 1), {}, out);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(
      message({1, static_cast<std::int32_t>(c.vocab_size)}, {}).find("outside the vocabulary"),
      std::string::npos);
  EXPECT_NE(message({1, -1}, {}).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(message({1, 2}, {0, 5}).find("token type id 5"), std::string::npos);
  EXPECT_NE(message(std::vector<std::int32_t>(c.max_sequence_length() + 1, 1), {})
                .find("position table allows"),
            std::string::npos);
  EXPECT_NE(message({1, 2}, {0}).find("token type ids for 2 tokens"), std::string::npos);
}

}  // namespace
}  // namespace mcinfer::cpu
