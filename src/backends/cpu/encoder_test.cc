// The CPU engine against transformers: every fixture of tests/fixtures/models on every
// instruction set this CPU runs, with 1 and 2 threads and both epilogue modes, down to the last
// hidden state of each real token. (tests/backend checks every backend, this one included,
// through the seam: outputs, padding invariance, refusals.)
#include "backends/cpu/encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/json.h"
#include "model/model_dir.h"
#include "support/model_fixtures.h"
#include "support/paths.h"

namespace mcinfer::cpu {
using namespace model;
namespace {

namespace fs = std::filesystem;
constexpr float kTolerance = 1e-5f;

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  EXPECT_LE(testing::max_abs_error(got, want), kTolerance) << what;
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
  testing::FixtureInputs in = testing::load_fixture_inputs(ref);
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

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTest, ::testing::ValuesIn(testing::model_fixture_names()),
                         [](const auto& info) { return info.param; });

// The ModernBERT fixtures pass only because every rule of its description is applied: with the
// window left out, the rotary bases swapped or the head fed the first token instead of the mean,
// the outputs move away from transformers'.
TEST(ModernBert, EachRuleOfTheDescriptionChangesTheOutputs) {
  const fs::path dir = testing::fixture("models/tf5_modernbert_mean_biases");
  testing::Reference ref(dir / "reference.safetensors");
  testing::FixtureInputs in = testing::load_fixture_inputs(ref);
  const ModelDir model_dir = ModelDir::open(dir);
  auto device = ops::Device::cpu();
  auto error_of = [&](const std::function<void(EncoderDesc&)>& edit) {
    EncoderDesc d = describe_encoder(model_dir.config());
    edit(d);
    auto weights =
        Weights::load(model_dir, *device, nullptr, ops::Precision::kFp32, {}, nullptr, &d);
    Encoder encoder(weights, *device, 1);
    std::vector<float> out;
    encoder.predict(in.sequences,
                    {TaskKind::kClassify, Pooling::kCls, false, OutputActivation::kNone}, out);
    return testing::max_abs_error(out, ref.floats("logits"));
  };
  EXPECT_LE(error_of([](EncoderDesc&) {}), kTolerance);
  EXPECT_GT(error_of([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) l.window = 0;
            }),
            1e-3);
  EXPECT_GT(error_of([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) l.rope_theta = l.window > 0 ? 160000.0 : 10000.0;
            }),
            1e-3);
  EXPECT_GT(error_of([](EncoderDesc& d) { d.head->pooling = model::HeadPooling::kFirst; }), 1e-3);
}

// The Qwen3 fixtures pass only because every rule of the decoder description is applied: each
// edit below (a bidirectional mask, no window, the q/k norms swapped, Gemma's (1 + w) norms,
// another rotary base, the head on the first token) moves the outputs away from transformers'.
TEST(Qwen3, EachRuleOfTheDescriptionChangesTheOutputs) {
  auto device = ops::Device::cpu();
  auto error_of = [&](const std::string& name, const std::string& output, const TaskSpec& task,
                      const std::function<void(EncoderDesc&)>& edit) {
    const fs::path dir = testing::fixture("models/" + name);
    testing::Reference ref(dir / "reference.safetensors");
    testing::FixtureInputs in = testing::load_fixture_inputs(ref);
    const ModelDir model_dir = ModelDir::open(dir);
    EncoderDesc d = describe_encoder(model_dir.config());
    edit(d);
    auto weights =
        Weights::load(model_dir, *device, nullptr, ops::Precision::kFp32, {}, nullptr, &d);
    Encoder encoder(weights, *device, 1);
    std::vector<float> out;
    encoder.predict(in.sequences, task, out);
    return testing::max_abs_error(out, ref.floats(output));
  };
  const TaskSpec mean{TaskKind::kEmbed, Pooling::kMean, false};
  auto embed_error = [&](const std::function<void(EncoderDesc&)>& edit) {
    return error_of("tf5_qwen3_embed", "pooled_mean", mean, edit);
  };
  EXPECT_LE(embed_error([](EncoderDesc&) {}), kTolerance);
  EXPECT_GT(embed_error([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) l.causal = false;
            }),
            1e-3);
  EXPECT_GT(embed_error([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) l.window = 0;
            }),
            1e-3);
  EXPECT_GT(embed_error([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) std::swap(l.query_norm.name, l.key_norm.name);
            }),
            1e-3);
  EXPECT_GT(embed_error([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) l.ffn_norm.kind = NormKind::kRmsOffset;
            }),
            1e-3);
  EXPECT_GT(embed_error([](EncoderDesc& d) {
              for (LayerDesc& l : d.layers) l.rope_theta = 10000.0;
            }),
            1e-3);
  const TaskSpec logits{TaskKind::kClassify, Pooling::kCls, false, OutputActivation::kNone};
  EXPECT_LE(error_of("tf5_qwen3_cls", "logits", logits, [](EncoderDesc&) {}), kTolerance);
  EXPECT_GT(error_of("tf5_qwen3_cls", "logits", logits,
                     [](EncoderDesc& d) { d.head->pooling = model::HeadPooling::kFirst; }),
            1e-3);
}

// The same for Gemma 3's rules: with a causal mask in place of EmbeddingGemma's bidirectional one,
// plain RMS norms for its (1 + w) ones, no embedding scale, the score scale of the head size, no
// window, or the norms on each block's output left out (their weights moved to a no-op: the
// post-FFN norm given the pre-FFN norm's name is a different norm), the outputs move.
TEST(Gemma3, EachRuleOfTheDescriptionChangesTheOutputs) {
  auto device = ops::Device::cpu();
  const fs::path dir = testing::fixture("models/tf5_gemma3_embed");
  testing::Reference ref(dir / "reference.safetensors");
  testing::FixtureInputs in = testing::load_fixture_inputs(ref);
  const ModelDir model_dir = ModelDir::open(dir);
  auto error_of = [&](const std::function<void(EncoderDesc&)>& edit) {
    EncoderDesc d = describe_encoder(model_dir.config());
    edit(d);
    auto weights =
        Weights::load(model_dir, *device, nullptr, ops::Precision::kFp32, {}, nullptr, &d);
    Encoder encoder(weights, *device, 1);
    std::vector<float> out;
    encoder.predict(in.sequences, {TaskKind::kEmbed, Pooling::kMean, false}, out);
    return testing::max_abs_error(out, ref.floats("pooled_mean"));
  };
  EXPECT_LE(error_of([](EncoderDesc&) {}), kTolerance);
  auto each_layer = [&](const std::function<void(LayerDesc&)>& edit) {
    return error_of([&](EncoderDesc& d) {
      for (LayerDesc& l : d.layers) edit(l);
    });
  };
  EXPECT_GT(each_layer([](LayerDesc& l) { l.causal = true; }), 1e-3);
  EXPECT_GT(each_layer([](LayerDesc& l) { l.window = 0; }), 1e-3);
  EXPECT_GT(each_layer([](LayerDesc& l) { l.score_scale = 0; }), 1e-3);
  EXPECT_GT(each_layer([](LayerDesc& l) { l.attention_norm.kind = NormKind::kRms; }), 1e-3);
  EXPECT_GT(each_layer([](LayerDesc& l) { std::swap(l.post_ffn_norm.name, l.ffn_norm.name); }),
            1e-3);
  EXPECT_GT(error_of([](EncoderDesc& d) { d.embeddings.scale = 1; }), 1e-3);
}

// A description the CPU backend cannot run is refused at load with the step's name, never run
// with the step left out.
TEST(Qwen3, AStepTheCpuCannotRunIsRefusedByName) {
  auto device = ops::Device::cpu();
  const ModelDir model_dir = ModelDir::open(testing::fixture("models/tf5_qwen3_embed"));
  auto message = [&](const std::function<void(EncoderDesc&)>& edit) {
    EncoderDesc d = describe_encoder(model_dir.config());
    edit(d);
    try {
      Weights::load(model_dir, *device, nullptr, ops::Precision::kFp32, {}, nullptr, &d);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(loaded)");
  };
  EXPECT_NE(message([](EncoderDesc& d) {
              d.layers[1].norm_placement = NormPlacement::kPost;
            }).find("'pre-norm and post-norm layers in one model'"),
            std::string::npos);
  EXPECT_NE(message([](EncoderDesc& d) {
              d.layers[0].post_attention_norm = d.layers[0].attention_norm;
              d.layers[0].post_attention_norm.kind = NormKind::kLayerNorm;
            }).find("'a LayerNorm or post-norm layer's norm on a block's output'"),
            std::string::npos);
  EXPECT_NE(message([](EncoderDesc& d) {
              d.layers[0].kv_heads = 3;
            }).find("'attention heads that key-value heads do not divide'"),
            std::string::npos);
}

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
