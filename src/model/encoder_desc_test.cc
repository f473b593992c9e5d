#include "model/encoder_desc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "model/model_dir.h"
#include "support/model_fixtures.h"
#include "support/reference.h"

namespace mcinfer::model {
namespace {

EncoderDesc desc_of(const std::string& fixture) {
  return describe_encoder(ModelDir::open(testing::fixture("models/" + fixture)).config());
}

// Every distance in [-2000, 2000] lands in the bucket transformers' MPNet gives it (the fixture
// stores MPNetEncoder.relative_position_bucket's answers): the float32 log at the boundaries
// (16, 32, 64, 128 tokens apart) included.
TEST(EncoderDesc, RelativeBucketsMatchTransformers) {
  const testing::Reference ref(testing::fixture("models/tf5_mpnet_cls/reference.safetensors"));
  const io::TensorView& distances = ref.tensor("relative_distances");
  const io::TensorView& buckets = ref.tensor("relative_buckets");
  ASSERT_EQ(distances.numel(), 4001);
  // Copied out: a tensor's bytes in a safetensors file need not be 8-byte aligned.
  std::vector<std::int64_t> d(4001), b(4001);
  ASSERT_EQ(buckets.numel(), 4001);
  std::memcpy(d.data(), distances.data, d.size() * sizeof(std::int64_t));
  std::memcpy(b.data(), buckets.data, b.size() * sizeof(std::int64_t));
  const RelativeBiasDesc bias = *desc_of("tf5_mpnet_cls").relative_bias;
  int mismatches = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (relative_bucket(d[i], bias) != b[i] && ++mismatches <= 5)
      ADD_FAILURE() << "distance " << d[i] << ": bucket " << relative_bucket(d[i], bias)
                    << ", transformers " << b[i];
  }
}

// DeBERTa-v2: every distance in [-2000, 2000] reaches the table row transformers gives it
// (make_log_bucket_position's answers, stored by the fixture, shifted by the span and clamped to
// the table as its attention does), for the fixture's 16 buckets up to 64 and for
// DeBERTa-v3-base's 256 up to 512: the float32 ceil at the log boundaries included.
TEST(EncoderDesc, DebertaRelativeIndexMatchesTransformers) {
  const testing::Reference ref(testing::fixture("models/tf5_deberta_cls/reference.safetensors"));
  auto int64s = [&](const char* name) {
    const io::TensorView& t = ref.tensor(name);
    std::vector<std::int64_t> v(static_cast<std::size_t>(t.numel()));
    std::memcpy(v.data(), t.data, v.size() * sizeof(std::int64_t));  // maybe unaligned in the file
    return v;
  };
  const std::vector<std::int64_t> distances = int64s("relative_distances");
  ASSERT_EQ(distances.size(), 4001u);
  DisentangledDesc fixture = *desc_of("tf5_deberta_cls").disentangled;
  ASSERT_EQ(fixture.buckets, 16);
  ASSERT_EQ(fixture.max_relative, 64);
  DisentangledDesc v3 = fixture;
  v3.span = v3.buckets = 256;
  v3.max_relative = 512;
  for (const auto& [desc, name] :
       {std::pair{fixture, "relative_buckets"}, std::pair{v3, "v3_relative_buckets"}}) {
    const std::vector<std::int64_t> buckets = int64s(name);
    ASSERT_EQ(buckets.size(), distances.size());
    int mismatches = 0;
    for (std::size_t i = 0; i < distances.size(); ++i) {
      const std::int64_t want =
          std::clamp<std::int64_t>(buckets[i] + desc.span, 0, 2 * desc.span - 1);
      const std::int64_t got = relative_index(distances[i], desc);
      if (got != want && ++mismatches <= 5)
        ADD_FAILURE() << name << ": distance " << distances[i] << ": row " << got
                      << ", transformers " << want;
    }
  }
  // Without buckets, distances are clamped to the table.
  DisentangledDesc plain = *desc_of("tf5_deberta_c2p_embed").disentangled;
  ASSERT_EQ(plain.buckets, -1);
  EXPECT_EQ(relative_index(0, plain), 12);
  EXPECT_EQ(relative_index(-5, plain), 7);
  EXPECT_EQ(relative_index(40, plain), 23);
  EXPECT_EQ(relative_index(-40, plain), 0);
}

// The DeBERTa description: the switches of its config become tensors, terms and the scale.
TEST(EncoderDesc, DebertaSwitches) {
  const EncoderDesc v3 = desc_of("tf5_deberta_cls");
  EXPECT_EQ(v3.family, "DeBERTa-v2");
  EXPECT_EQ(v3.embeddings.positions, PositionScheme::kNone);
  EXPECT_TRUE(v3.embeddings.token_type.empty());
  EXPECT_EQ(v3.score_terms, 3);
  ASSERT_TRUE(v3.disentangled && v3.disentangled->norm);
  EXPECT_EQ(v3.disentangled->table, "encoder.rel_embeddings");
  EXPECT_EQ(v3.layers[1].position_key->parts.front(), "encoder.layer.1.attention.self.key_proj");
  EXPECT_EQ(v3.layers[1].position_query->parts.front(),
            "encoder.layer.1.attention.self.query_proj");
  EXPECT_EQ(v3.head->dense->parts.front(), "pooler.dense");
  EXPECT_FALSE(v3.head->dense->in_base);
  EXPECT_EQ(v3.head->dense->activation, Activation::kGeluErf);
  const EncoderDesc own = desc_of("tf5_deberta_multi");
  EXPECT_EQ(own.layers[0].position_key->parts.front(),
            "encoder.layer.0.attention.self.pos_key_proj");
  EXPECT_EQ(own.layers[0].position_query->parts.front(),
            "encoder.layer.0.attention.self.pos_query_proj");
  EXPECT_EQ(own.head->dense->activation, Activation::kTanh);
  const EncoderDesc c2p = desc_of("tf5_deberta_c2p_embed");
  EXPECT_EQ(c2p.score_terms, 2);
  EXPECT_FALSE(c2p.layers[0].position_query.has_value());
  EXPECT_FALSE(c2p.disentangled->norm.has_value());
  EXPECT_EQ(c2p.embeddings.positions, PositionScheme::kAbsolute);
  EXPECT_FALSE(c2p.embeddings.token_type.empty());
}

TEST(EncoderDesc, BiasByDistanceIndexesTheTableByBucket) {
  RelativeBiasDesc bias;
  const std::int64_t heads = 2;
  std::vector<float> table(static_cast<std::size_t>(32 * heads));
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  std::vector<float> out;
  relative_bias_by_distance(bias, table.data(), heads, 40, out);
  ASSERT_EQ(out.size(), static_cast<std::size_t>(heads * 79));
  for (std::int64_t r : {-39, -20, -1, 0, 1, 7, 8, 39}) {
    for (std::int64_t h = 0; h < heads; ++h)
      EXPECT_EQ(out[static_cast<std::size_t>(h * 79 + 39 + r)],
                table[static_cast<std::size_t>(relative_bucket(r, bias) * heads + h)]);
  }
  // Key after query (r > 0) and before it use the two halves of the table.
  EXPECT_EQ(relative_bucket(3, bias), 3 + 16);
  EXPECT_EQ(relative_bucket(-3, bias), 3);
}

// Each family's builder: its tensor names, the GEMM list, the head's activation decided once.
TEST(EncoderDesc, FamiliesNameTheirTensorsAndHeads) {
  const EncoderDesc mpnet = desc_of("tf5_mpnet_cls");
  EXPECT_EQ(mpnet.family, "MPNet");
  ASSERT_TRUE(mpnet.relative_bias.has_value());
  EXPECT_EQ(mpnet.relative_bias->table, "encoder.relative_attention_bias");
  EXPECT_TRUE(mpnet.embeddings.token_type.empty());
  const LinearDesc& qkv = mpnet.layers[1].gemm(GemmSlot::kQkv).linear;
  EXPECT_EQ(qkv.parts, (std::vector<std::string>{"encoder.layer.1.attention.attn.q",
                                                 "encoder.layer.1.attention.attn.k",
                                                 "encoder.layer.1.attention.attn.v"}));
  EXPECT_EQ(qkv.out(), 3 * mpnet.hidden);
  EXPECT_EQ(mpnet.layers[0].attention_norm.name, "encoder.layer.0.attention.LayerNorm");
  EXPECT_EQ(mpnet.head->dense->activation, Activation::kTanh);
  EXPECT_EQ(mpnet.head->out.parts.front(), "classifier.out_proj");

  const EncoderDesc electra = desc_of("tf5_electra_cls");
  ASSERT_TRUE(electra.embeddings.projection.has_value());
  EXPECT_EQ(electra.embeddings.width, 16);
  EXPECT_EQ(electra.embeddings.projection->in, 16);
  EXPECT_EQ(electra.embeddings.projection->out(), 32);
  EXPECT_EQ(electra.head->dense->activation, Activation::kGeluErf);
  EXPECT_FALSE(desc_of("tf5_electra_embed").embeddings.projection.has_value());

  EXPECT_EQ(desc_of("tf5_camembert_cls").family, "CamemBERT");
  EXPECT_EQ(desc_of("bert_cls_single").head->dense->parts.front(), "pooler.dense");
  EXPECT_TRUE(desc_of("bert_cls_single").head->dense->in_base);
  EXPECT_EQ(desc_of("distilbert_cls").head->dense->activation, Activation::kRelu);
  EXPECT_EQ(desc_of("distilbert_cls").layers[2].gemm(GemmSlot::kFfnOut).linear.parts.front(),
            "transformer.layer.2.ffn.lin2");
  EXPECT_EQ(desc_of("distilbert_embed_sinusoidal").embeddings.positions,
            PositionScheme::kSinusoidal);
}

TEST(EncoderDesc, SummaryNamesWhatRuns) {
  const std::vector<std::string> lines = desc_of("tf5_mpnet_cls").summary();
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  EXPECT_NE(all.find("MPNet: hidden 32, 2 layers, 4 heads × 8, FFN 64, post-norm"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("relative attention bias: 32 buckets"), std::string::npos) << all;
  EXPECT_NE(all.find("qkv 32→96 = q + k + v"), std::string::npos) << all;
  EXPECT_NE(desc_of("tf5_electra_cls").summary()[1].find("projection 16→32"), std::string::npos);
}

}  // namespace
}  // namespace mcinfer::model
