// Every bad-model case the loader must refuse with a message naming the file and the tensor or
// field: built by damaging a copy of a real fixture checkpoint.
#include "backends/cpu/weights.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>

#include "core/error.h"
#include "support/cpu_features.h"
#include "support/paths.h"
#include "support/safetensors_writer.h"

namespace mcinfer::cpu {
using namespace model;
namespace {

namespace fs = std::filesystem;

class BadModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = testing::scratch_dir(
        "bad_model_" +
        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    for (const auto& f : fs::directory_iterator(testing::fixture("models/bert_cls_single"))) {
      fs::copy(f.path(), dir / f.path().filename());
    }
    device = ops::Device::cpu();
  }

  std::string load_error() {
    try {
      Weights::load(dir, *device);
    } catch (const Error& e) {
      return e.what();
    }
    return "(loaded without error)";
  }

  void edit_config(const std::function<void(Json&)>& edit) {
    Json j = read_json_file(dir / "config.json");
    edit(j);
    std::ofstream(dir / "config.json", std::ios::trunc) << j.dump(2);
  }

  void edit_tensors(const std::function<void(std::vector<testing::TensorBytes>&)>& edit) {
    auto tensors = testing::read_tensors(dir / "model.safetensors");
    edit(tensors);
    testing::write_tensors(dir / "model.safetensors", tensors);
  }

  fs::path dir;
  std::unique_ptr<ops::Device> device;
};

#define EXPECT_MESSAGE(message, ...)                                                        \
  do {                                                                                      \
    const std::string m = (message);                                                        \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(m.find(part), std::string::npos) << m; \
  } while (0)

TEST_F(BadModelTest, CopyLoadsCleanly) {
  auto w = Weights::load(dir, *device);
  EXPECT_EQ(w->config().num_labels, 2);
  EXPECT_GT(w->stats().parameters, 0);
}

TEST_F(BadModelTest, MissingConfig) {
  fs::remove(dir / "config.json");
  EXPECT_MESSAGE(load_error(), "no config.json");
}

TEST_F(BadModelTest, InvalidConfigJson) {
  std::ofstream(dir / "config.json", std::ios::trunc) << "{\"model_type\": \"bert\",";
  EXPECT_MESSAGE(load_error(), "config.json", "invalid JSON");
}

TEST_F(BadModelTest, UnknownModelType) {
  edit_config([](Json& j) { j["model_type"] = "gpt2"; });
  EXPECT_MESSAGE(load_error(), "config.json", "field 'model_type'", "'gpt2' is not supported");
}

TEST_F(BadModelTest, RelativePositionEmbeddings) {
  edit_config([](Json& j) { j["position_embedding_type"] = "relative_key"; });
  EXPECT_MESSAGE(load_error(), "field 'position_embedding_type'", "relative_key");
}

TEST_F(BadModelTest, DecoderOrCrossAttention) {
  // transformers 5 writes both fields (false) for every encoder; true would change the attention.
  edit_config([](Json& j) { j["is_decoder"] = true; });
  EXPECT_MESSAGE(load_error(), "field 'is_decoder'", "bidirectional");
  edit_config([](Json& j) {
    j["is_decoder"] = false;
    j["add_cross_attention"] = true;
  });
  EXPECT_MESSAGE(load_error(), "field 'add_cross_attention'", "bidirectional");
}

TEST_F(BadModelTest, UnsupportedActivation) {
  edit_config([](Json& j) { j["hidden_act"] = "mish"; });
  EXPECT_MESSAGE(load_error(), "field 'hidden_act'", "mish");
}

// A copy of a fixture whose config.json a test edits: error_with(edit) loads it edited and
// returns the error, or "(loaded without error)"; the edit stays in place until the next one.
class ConfigEdits {
 public:
  explicit ConfigEdits(const std::string& fixture)
      : dir_(testing::scratch_dir(fixture + "_edits")) {
    for (const auto& f : fs::directory_iterator(testing::fixture("models/" + fixture)))
      fs::copy(f.path(), dir_ / f.path().filename(), fs::copy_options::overwrite_existing);
    original_ = read_json_file(dir_ / "config.json");
  }
  std::string error_with(const std::function<void(Json&)>& edit) {
    Json j = original_;
    edit(j);
    std::ofstream(dir_ / "config.json", std::ios::trunc) << j.dump(2);
    try {
      Weights::load(dir_, *device_);
    } catch (const Error& e) {
      return e.what();
    }
    return "(loaded without error)";
  }
  const fs::path& dir() const { return dir_; }
  const ops::Device& device() const { return *device_; }

 private:
  fs::path dir_;
  Json original_;
  std::unique_ptr<ops::Device> device_ = ops::Device::cpu();
};

// DeBERTa-v2's switches that mcinfer does not implement are refused by field; its string forms
// are read as transformers reads them.
TEST(DebertaConfig, RefusalsNameTheFieldAndStringFormsLoad) {
  ConfigEdits edits("tf5_deberta_cls");
  auto error_with = [&](const std::function<void(Json&)>& edit) { return edits.error_with(edit); };
  const fs::path& dir = edits.dir();
  const ops::Device* device = &edits.device();
  EXPECT_MESSAGE(error_with([](Json& j) { j["conv_kernel_size"] = 3; }), "field 'conv_kernel_size'",
                 "convolution");
  EXPECT_MESSAGE(error_with([](Json& j) {
                   j["pos_att_type"] = {"c2p", "p2p"};
                 }),
                 "field 'pos_att_type'", "'p2p'");
  EXPECT_MESSAGE(error_with([](Json& j) { j["norm_rel_ebd"] = "layer_norm|rms"; }),
                 "field 'norm_rel_ebd'", "'rms'");
  EXPECT_MESSAGE(error_with([](Json& j) { j["pooler_hidden_size"] = 48; }),
                 "field 'pooler_hidden_size'");
  EXPECT_MESSAGE(error_with([](Json& j) { j["position_buckets"] = 200; }),
                 "field 'position_buckets'", "max_relative_positions");
  EXPECT_MESSAGE(error_with([](Json& j) { j["pooler_hidden_act"] = "mish"; }),
                 "field 'pooler_hidden_act'", "mish");
  // The old "a|b" string of pos_att_type, in any case and spacing.
  EXPECT_EQ(error_with([](Json& j) { j["pos_att_type"] = "P2C | c2p"; }), "(loaded without error)");
  const auto w = Weights::load(dir, *device);
  ASSERT_TRUE(w->config().disentangled.has_value());
  EXPECT_TRUE(w->config().disentangled->c2p && w->config().disentangled->p2c);
}

TEST(ModernBertConfig, BothSpellingsLoadAndRefusalsNameTheField) {
  ConfigEdits edits("tf5_modernbert_cls");
  auto error_with = [&](const std::function<void(Json&)>& edit) { return edits.error_with(edit); };
  const fs::path& dir = edits.dir();
  const ops::Device* device = &edits.device();
  EXPECT_MESSAGE(error_with([](Json& j) {
                   j["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
                 }),
                 "field 'rope_parameters.sliding_attention'", "rope_type 'linear'");
  EXPECT_MESSAGE(error_with([](Json& j) { j["classifier_pooling"] = "max"; }),
                 "field 'classifier_pooling'", "'max'");
  EXPECT_MESSAGE(error_with([](Json& j) { j["layer_types"].erase(0); }), "field 'layer_types'",
                 "4 layer kinds");
  EXPECT_MESSAGE(error_with([](Json& j) { j["layer_types"][1] = "chunked_attention"; }),
                 "field 'layer_types'");
  EXPECT_MESSAGE(error_with([](Json& j) {
                   j["rope_scaling"] = {{"factor", 2.0}};
                 }),
                 "field 'rope_scaling'");
  EXPECT_MESSAGE(error_with([](Json& j) { j["hidden_size"] = 30; }), "field 'num_attention_heads'",
                 "head size 15 is odd");
  EXPECT_MESSAGE(error_with([](Json& j) { j["hidden_activation"] = "swiglu"; }),
                 "field 'hidden_activation'", "swiglu");
  // transformers 4.48's spelling: global_attn_every_n_layers and the two rope thetas.
  EXPECT_EQ(error_with([](Json& j) {
              j.erase("layer_types");
              j.erase("rope_parameters");
              j["global_attn_every_n_layers"] = 2;
              j["global_rope_theta"] = 160000.0;
              j["local_rope_theta"] = 10000.0;
            }),
            "(loaded without error)");
  const auto old_spelling = Weights::load(dir, *device);
  EXPECT_EQ(error_with([](Json&) {}), "(loaded without error)");
  const auto new_spelling = Weights::load(dir, *device);
  for (const auto* w : {old_spelling.get(), new_spelling.get()}) {
    const auto& layers = w->desc().layers;
    ASSERT_EQ(layers.size(), 4u);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(layers[i].window, i % 2 == 0 ? 0 : 8);
      EXPECT_EQ(layers[i].rope_theta, i % 2 == 0 ? 160000.0 : 10000.0);
      EXPECT_EQ(layers[i].attention_norm.present(), i > 0);
      EXPECT_TRUE(layers[i].gemm(GemmSlot::kFfnIn).linear.gated);
    }
    EXPECT_EQ(w->desc().layers.front().norm_placement, NormPlacement::kPre);
    EXPECT_TRUE(w->final_norm().present());
  }
}

TEST_F(BadModelTest, HeadsThatDoNotDivide) {
  edit_config([](Json& j) { j["num_attention_heads"] = 5; });
  EXPECT_MESSAGE(load_error(), "field 'num_attention_heads'", "do not divide");
}

TEST_F(BadModelTest, AbsurdSizes) {
  edit_config([](Json& j) { j["hidden_size"] = 1LL << 40; });
  EXPECT_MESSAGE(load_error(), "field 'hidden_size'", "outside");
  edit_config([](Json& j) { j["hidden_size"] = -4; });
  EXPECT_MESSAGE(load_error(), "field 'hidden_size'", "outside");
  edit_config([](Json& j) { j["hidden_size"] = "32"; });
  EXPECT_MESSAGE(load_error(), "field 'hidden_size'", "expected an integer");
}

TEST_F(BadModelTest, ConfigDisagreesWithTensorShapes) {
  edit_config([](Json& j) { j["intermediate_size"] = 96; });
  EXPECT_MESSAGE(load_error(), "model.safetensors", "intermediate.dense.weight", "has shape",
                 "config.json implies");
}

TEST_F(BadModelTest, UnknownArchitecture) {
  edit_config([](Json& j) { j["architectures"] = {"BertForQuestionAnswering"}; });
  EXPECT_MESSAGE(load_error(), "field 'architectures'", "BertForQuestionAnswering");
}

TEST_F(BadModelTest, MissingTensor) {
  edit_tensors([](auto& t) {
    std::erase_if(t,
                  [](const auto& x) { return x.name == "bert.encoder.layer.1.output.dense.bias"; });
  });
  EXPECT_MESSAGE(load_error(), "missing tensor 'bert.encoder.layer.1.output.dense.bias'");
}

TEST_F(BadModelTest, UnexpectedTensor) {
  edit_tensors([](auto& t) {
    t.push_back({"bert.encoder.layer.9.output.dense.bias", "F32", {1}, std::string(4, '\0')});
  });
  EXPECT_MESSAGE(load_error(), "model.safetensors",
                 "unexpected tensor 'bert.encoder.layer.9.output.dense.bias'");
}

TEST_F(BadModelTest, WrongDtype) {
  edit_tensors([](auto& t) {
    for (auto& x : t) {
      if (x.name == "classifier.bias") {
        x.dtype = "I32";
      }
    }
  });
  EXPECT_MESSAGE(load_error(), "tensor 'classifier.bias' has dtype I32");
}

TEST_F(BadModelTest, TruncatedWeights) {
  auto size = fs::file_size(dir / "model.safetensors");
  fs::resize_file(dir / "model.safetensors", size / 2);
  EXPECT_MESSAGE(load_error(), "model.safetensors", "run past the end of the data");
}

TEST_F(BadModelTest, LyingHeaderLength) {
  std::fstream f(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(0);
  const char huge[8] = {0, 0, 0, 0, 0, 0, 0, 1};
  f.write(huge, 8);
  f.close();
  EXPECT_MESSAGE(load_error(), "model.safetensors", "header length");
}

TEST_F(BadModelTest, PickleOnly) {
  fs::remove(dir / "model.safetensors");
  std::ofstream(dir / "pytorch_model.bin") << "not loaded";
  EXPECT_MESSAGE(load_error(), "pytorch_model.bin", "safetensors");
}

TEST_F(BadModelTest, Id2LabelKeysMustBeIds) {
  edit_config([](Json& j) { j["id2label"] = {{"0", "a"}, {"7", "b"}}; });
  EXPECT_MESSAGE(load_error(), "field 'id2label'", "'7'");
}

TEST(Weights, SharedWeightsLeaveMappedTensorsInPlace) {
  auto device = ops::Device::cpu();
  auto w = Weights::load(testing::fixture("models/bert_embed"), *device);
  // Embeddings are used straight from the file mapping: no converted copies for a float32 model.
  EXPECT_EQ(w->stats().converted_bytes, 0u);
  EXPECT_GT(w->stats().packed_bytes, 0u);
  EXPECT_EQ(w->stats().dtype, "F32");
  auto half = Weights::load(testing::fixture("models/xlmr_embed_f16"), *device);
  EXPECT_GT(half->stats().converted_bytes, 0u);
  EXPECT_EQ(half->stats().dtype, "F16");
}

// A bert-base-shaped model packed in `precision` against the same model in fp32: the layers'
// GEMMs take the precision's input type, the head (a small share) stays fp32, and the packed
// bytes' ratio to fp32 is returned.
double packed_ratio_to_fp32(ops::Precision precision, ops::DType input_type) {
  auto device = ops::Device::cpu();
  const ModelConfig shape = ModelConfig::shape("bert-base");
  auto fp32 = Weights::synthetic(shape, *device, 1, ops::Precision::kFp32);
  auto reduced = Weights::synthetic(shape, *device, 1, precision);
  EXPECT_EQ(reduced->precision(), precision);
  EXPECT_EQ(reduced->layers()[0].gemm(model::GemmSlot::kQkv).input_type(), input_type);
  EXPECT_EQ(reduced->layers()[0].gemm(model::GemmSlot::kFfnOut).input_type(), input_type);
  EXPECT_EQ(reduced->classifier()->dense->input_type(), ops::DType::kF32);
  return static_cast<double>(reduced->stats().packed_bytes) /
         static_cast<double>(fp32->stats().packed_bytes);
}

// bf16 weights are prepared once, shared, and take about half the fp32 packing.
TEST(Bf16Weights, PackedBytesAreAtMostHalfOfFp32Plus5Percent) {
  NEED_BF16();
  const double ratio = packed_ratio_to_fp32(ops::Precision::kBf16, ops::DType::kBf16);
  EXPECT_LE(ratio, 0.55);
  EXPECT_GE(ratio, 0.45);
}

// int8 weights: a quarter of the fp32 packing plus the scales (issue 13: at most 0.3), shared.
TEST(Int8Weights, PackedBytesAreAtMostThreeTenthsOfFp32) {
  NEED_CPU(int8(), "AVX2 (int8 GEMMs)");
  const double ratio = packed_ratio_to_fp32(ops::Precision::kInt8, ops::DType::kS8);
  EXPECT_LE(ratio, 0.30);
  EXPECT_GE(ratio, 0.24);
}

// Kept GEMMs are prepared in the fallback precision; a keep list outside int8 is an error.
TEST(Int8Weights, KeptGemmsUseTheFallbackPrecision) {
  NEED_CPU(int8(), "AVX2 (int8 GEMMs)");
  auto device = ops::Device::cpu();
  const auto model = testing::fixture("models/bert_cls_single");
  const std::vector<GemmId> keep = {{1, GemmSlot::kFfnIn}, {0, GemmSlot::kQkv}};
  auto w = Weights::load(model, *device, nullptr, ops::Precision::kInt8, keep);
  const ops::DType fallback = ops::int8_fallback_precision() == ops::Precision::kBf16
                                  ? ops::DType::kBf16
                                  : ops::DType::kF32;
  EXPECT_EQ(w->layers()[0].gemm(model::GemmSlot::kQkv).input_type(), fallback);
  EXPECT_EQ(w->layers()[0].gemm(model::GemmSlot::kAttnOut).input_type(), ops::DType::kS8);
  EXPECT_EQ(w->layers()[1].gemm(model::GemmSlot::kFfnIn).input_type(), fallback);
  EXPECT_EQ(w->layers()[1].gemm(model::GemmSlot::kFfnOut).input_type(), ops::DType::kS8);
  const std::vector<GemmId> sorted = {{0, GemmSlot::kQkv}, {1, GemmSlot::kFfnIn}};
  EXPECT_EQ(w->kept(), sorted);
  EXPECT_FALSE(w->smoothed());
  EXPECT_THROW(Weights::load(model, *device, nullptr, ops::Precision::kBf16, keep), Error);
}

TEST(Bf16Weights, AutoIsNotAWeightPrecision) {
  auto device = ops::Device::cpu();
  EXPECT_THROW(Weights::load(testing::fixture("models/bert_cls_single"), *device, nullptr,
                             ops::Precision::kAuto),
               Error);
}

}  // namespace
}  // namespace mcinfer::cpu
