#pragma once
// The one description of an encoder that every backend and precision runs from: what the
// embeddings add up, where positions come from, which norms sit where, each layer's GEMMs as a
// list (the tensors each is made of, its shape, whether it has a bias, the activation of its
// output), the attention each layer runs and the classification head. Built from config.json by
// one builder per family (encoder_desc.cc); a new family is one builder and its tensor names.
// Backend-neutral: the CPU backend (backends/cpu/weights.cc, encoder.cc) and the PJRT program
// (backends/pjrt/encoder_program.cc) read only this and the tensors it names.
//
// Plain values, immutable once built; safe to share between threads.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "model/activation.h"
#include "model/config.h"
#include "model/gemm_plan.h"

namespace mcinfer::model {

// Where an encoder's position information comes from.
enum class PositionScheme {
  kAbsolute,      // a learned table added to the token embeddings
  kSinusoidal,    // DistilBERT's fixed table (stored in the checkpoint or computed)
  kRelativeBias,  // absolute table + a bias per head and bucketed relative distance (MPNet, T5)
  kNone,          // no absolute positions: the attention's relative terms only (DeBERTa-v3)
  kRotary,        // rotary positions applied to each layer's queries and keys (ModernBERT)
};
inline constexpr EnumNames<PositionScheme, 5> kPositionSchemeNames{{{
    {PositionScheme::kAbsolute, "absolute"},
    {PositionScheme::kSinusoidal, "sinusoidal"},
    {PositionScheme::kRelativeBias, "absolute + relative bias"},
    {PositionScheme::kNone, "none"},
    {PositionScheme::kRotary, "rotary"},
}}};

// Where the LayerNorms sit relative to the residual adds.
enum class NormPlacement {
  kPost,  // x = LayerNorm(x + f(x)) (BERT and its descendants)
  kPre,   // x = x + f(LayerNorm(x)), and one LayerNorm after the last layer (ModernBERT)
};
inline constexpr EnumNames<NormPlacement, 2> kNormPlacementNames{{{
    {NormPlacement::kPost, "post"},
    {NormPlacement::kPre, "pre"},
}}};

// How a norm scales its rows: LayerNorm (mean and variance, then weight and shift), RMSNorm
// (x / rms(x) · weight: Qwen3, T5) or Gemma's RMSNorm that scales by (1 + weight).
enum class NormKind { kLayerNorm, kRms, kRmsOffset };
inline constexpr EnumNames<NormKind, 3> kNormKindNames{{{
    {NormKind::kLayerNorm, "LayerNorm"},
    {NormKind::kRms, "RMSNorm"},
    {NormKind::kRmsOffset, "RMSNorm (1 + w)"},
}}};

// A norm: its tensors' name (".weight"/".bias" or ".gamma"/".beta" follow), width, eps, kind.
// An empty name is no norm at all (ModernBERT's first layer takes the embeddings as they are).
struct NormDesc {
  std::string name;
  std::int64_t width = 0;
  float eps = 1e-12f;
  bool bias = true;  // has a shift (ModernBERT's norm_bias false: scale only; RMS norms never)
  NormKind kind = NormKind::kLayerNorm;
  bool present() const { return !name.empty(); }
};

// A dense projection y = act(x · Wᵀ + b): the checkpoint's Linear layers that make it, stacked
// along the output (query, key and value become one GEMM), part i [part_outs[i], in] (grouped-
// query attention's key and value parts are narrower than its query part).
struct LinearDesc {
  std::vector<std::string> parts;  // tensor names without ".weight"
  std::int64_t in = 0;
  std::vector<std::int64_t> part_outs;  // output width of each part
  bool bias = true;
  Activation activation = Activation::kNone;
  bool in_base = true;  // names under the base model's prefix (else at the checkpoint's top)
  // A gated unit (ModernBERT's GeGLU): the GEMM's output is [a | g], each half wide, and the
  // layer's output is activation(a) · g.
  bool gated = false;
  std::int64_t out() const {
    std::int64_t sum = 0;
    for (std::int64_t w : part_outs) sum += w;
    return sum;
  }
  // The width the next op reads: out(), or half of it when gated.
  std::int64_t out_after() const { return gated ? out() / 2 : out(); }
};

// The norms a layer may have, a slot each: every walk over a layer's tensors (finding them in
// the checkpoint, binding them on the CPU, a PJRT program's parameters) takes them in this one
// order, from kNormSlotNames, so a new norm is one entry here and one field below.
enum class NormSlot { kAttention, kFfn, kQuery, kKey, kPostAttention, kPostFfn };
inline constexpr std::size_t kNormSlots = 6;
inline constexpr EnumNames<NormSlot, kNormSlots> kNormSlotNames{{{
    {NormSlot::kAttention, "attention_norm"},
    {NormSlot::kFfn, "ffn_norm"},
    {NormSlot::kQuery, "query_norm"},
    {NormSlot::kKey, "key_norm"},
    {NormSlot::kPostAttention, "post_attention_norm"},
    {NormSlot::kPostFfn, "post_ffn_norm"},
}}};

struct GemmDesc {
  GemmSlot slot = GemmSlot::kQkv;  // its role in the layer (int8 plans name GEMMs by it)
  LinearDesc linear;
};

// One layer as the steps it runs, each saying what it needs:
//   attention block: [pre: norm] → QKV GEMM → [q/k norms per head] → attention (heads, key-value
//     heads, head size, mask, positions, score scale) → output GEMM → [post-block norm] →
//     residual add → [post: norm];
//   FFN block: [pre: norm] → FFN in (plain, or gated: [a | g] → act(a) · g) → FFN out →
//     [post-block norm] → residual add → [post: norm].
// Every backend runs a layer from these fields alone and refuses (by the step's name) any it
// cannot run.
struct LayerDesc {
  std::vector<GemmDesc> gemms;  // in the order the layer runs them
  // DeBERTa-v2: the projections of the relative-position table into position keys (c2p) and
  // position queries (p2c), each [hidden → hidden] with bias: the layer's own key_proj /
  // query_proj when share_att_key, else pos_key_proj / pos_query_proj. The table does not depend
  // on the input, so a backend projects it once per layer.
  std::optional<LinearDesc> position_key;
  std::optional<LinearDesc> position_query;
  // post: x = norm(x + f(x)) (BERT); pre: x = x + f(norm(x)) (ModernBERT, Qwen3, Gemma).
  NormPlacement norm_placement = NormPlacement::kPost;
  NormDesc attention_norm;  // after the attention block (pre-norm: before it)
  NormDesc ffn_norm;        // after the FFN block (pre-norm: before it)
  // Gemma's sandwich norms: on a block's output before its residual add (absent elsewhere).
  NormDesc post_attention_norm;
  NormDesc post_ffn_norm;
  // Attention: query heads, key-value heads (fewer under grouped-query attention: query head h
  // reads key-value head h / (heads / kv_heads)), the size of every head (not always
  // hidden / heads). The QKV GEMM writes [queries | keys | values]: heads·head_dim, then
  // kv_heads·head_dim twice.
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  // RMS norms over each head's queries and keys (Qwen3's q_norm / k_norm), width head_dim.
  NormDesc query_norm;
  NormDesc key_norm;
  // Which keys query i sees: with causal, j ≤ i only (decoders); a window bounds the distance:
  // bidirectional, |i − j| ≤ window / 2 (ModernBERT's local layers); causal, i − j < window
  // (transformers' sliding_window). 0: no bound.
  bool causal = false;
  std::int64_t window = 0;
  // Rotary positions: the base of this layer's frequencies (0 without rotary positions).
  double rope_theta = 0;
  // The factor of the scores; 0: 1 / √(head_dim · EncoderDesc::score_terms).
  float score_scale = 0;
  // Keys before and after query i that it may see (−1: unbounded), from causal and window.
  std::int64_t keys_before() const;
  std::int64_t keys_after() const;
  std::int64_t query_width() const { return heads * head_dim; }
  std::int64_t kv_width() const { return kv_heads * head_dim; }
  // The GEMM of a role; throws Error when the layer has none.
  const GemmDesc& gemm(GemmSlot slot) const;
  // The norm of a slot (absent ones included: NormDesc::present).
  const NormDesc& norm(NormSlot slot) const;
  NormDesc& norm(NormSlot slot) {
    return const_cast<NormDesc&>(static_cast<const LayerDesc*>(this)->norm(slot));
  }
};

struct EmbeddingDesc {
  std::string word;  // [vocab, width]
  std::int64_t vocab = 0;
  std::int64_t width = 0;
  PositionScheme positions = PositionScheme::kAbsolute;
  std::string position;  // [max_positions, width]
  std::int64_t max_positions = 0;
  std::string token_type;  // [type_vocab, width]; empty without token types
  std::int64_t type_vocab = 0;
  NormDesc norm;
  std::optional<LinearDesc> projection;  // width → hidden (ELECTRA with embedding_size ≠ hidden)
  float scale = 1;  // the token embeddings times this (Gemma: √hidden, rounded as its dtype)
};

// A bias added to every layer's attention scores, per head and relative distance j − i bucketed
// as MPNet (and T5, bidirectionally) do: distances below `exact` own a bucket, longer ones share
// log-spaced buckets up to `max_distance`, each direction half of `buckets`.
struct RelativeBiasDesc {
  std::string table;            // [table_rows, heads]
  std::int64_t table_rows = 0;  // rows in the checkpoint (only the first `buckets` are used)
  std::int64_t buckets = 32;
  std::int64_t max_distance = 128;
};

// DeBERTa-v2's disentangled attention: with q_i, k_j head h's query and key rows and
// idx = relative_index(i − j), the score of query i and key j is
//   (q_i · k_j + q_i · pos_key[idx] (c2p) + k_j · pos_query[idx] (p2c)) / √(head_dim · terms),
// pos_key / pos_query being the layer's projections (LayerDesc::position_key / position_query) of
// the table's rows (after `norm` when set).
struct DisentangledDesc {
  std::string table;              // [2 · span, hidden]
  std::int64_t span = 0;          // position_buckets, or max_relative_positions without buckets
  std::int64_t buckets = 0;       // position_buckets (≤ 0: distances used as they are)
  std::int64_t max_relative = 0;  // max_relative_positions
  std::optional<NormDesc> norm;   // encoder.LayerNorm over the table (norm_rel_ebd)
  bool c2p = false;
  bool p2c = false;
  std::int64_t rows() const { return 2 * span; }
};

// Which token(s) a classification head reads: the first, the mean over the sequence
// (ModernBERT's classifier_pooling "mean"), or the last whose id is not the pad id (decoders'
// ForSequenceClassification, as transformers picks it).
enum class HeadPooling { kFirst, kMean, kLastNonPad };
inline constexpr EnumNames<HeadPooling, 3> kHeadPoolingNames{{{
    {HeadPooling::kFirst, "first token"},
    {HeadPooling::kMean, "mean of the tokens"},
    {HeadPooling::kLastNonPad, "last non-pad token"},
}}};

// The sequence-classification head: dense + activation (absent in decoders' heads), then the
// projection to the labels.
struct HeadDesc {
  std::optional<LinearDesc> dense;
  LinearDesc out;
  // ModernBERT: a LayerNorm after the dense layer's activation.
  NormDesc norm;
  HeadPooling pooling = HeadPooling::kFirst;
  std::int64_t pad_id = -1;  // kLastNonPad: the id it skips (−1: none, the last token)
};

// The masked-LM head a SparseEncoder's logits come from (BERT's cls.predictions): per token,
// `transform` (dense + hidden_act) and its LayerNorm, then the projection onto the vocabulary,
// whose weight is the word embeddings (tied) and whose bias is `decoder_bias` [vocab].
struct MlmHeadDesc {
  LinearDesc transform;
  NormDesc norm;
  std::string decoder_bias;  // tensor name, at the checkpoint's top; empty: none (ModernBERT's
                             // decoder_bias false)
  std::int64_t vocab = 0;
  // Where an untied decoder's own weight would be: refused (the head projects onto the word
  // embeddings, as tie_word_embeddings does).
  std::string untied_decoder;
};

struct EncoderDesc {
  std::string family;  // "BERT", "MPNet", ...
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t intermediate = 0;
  EmbeddingDesc embeddings;
  std::optional<RelativeBiasDesc> relative_bias;
  std::optional<DisentangledDesc> disentangled;
  // Scores are divided by √(head_dim · score_terms): 1 + one per DeBERTa relative term named in
  // its config (even when relative_attention is off, as transformers does).
  std::int64_t score_terms = 1;
  std::vector<LayerDesc> layers;
  NormDesc final_norm;  // after the last layer (pre-norm encoders); absent otherwise
  std::optional<HeadDesc> head;
  // Set only for a sparse task (a SparseEncoder's directory: model_dir.h describe_model).
  std::optional<MlmHeadDesc> mlm_head;

  // The head size of the first layer (every family has one head size throughout).
  std::int64_t head_dim() const {
    return layers.empty() ? hidden / heads : layers.front().head_dim;
  }
  // The factor of layer's attention scores: its own, else 1 / √(head_dim · score_terms).
  float score_scale(const LayerDesc& layer) const;
  // The description as lines of text, for `mcinfer inspect`.
  std::vector<std::string> summary() const;
};

// A LinearDesc of `parts` of equal width.
LinearDesc linear(std::vector<std::string> parts, std::int64_t in, std::int64_t part_out,
                  Activation activation = Activation::kNone, bool in_base = true);

// The description of the network config.json describes (one builder per family).
EncoderDesc describe_encoder(const ModelConfig& config);
// Qwen3 and Gemma 3 (decoder_desc.cc).
void describe_decoder(const ModelConfig& config, EncoderDesc& desc);

// The MLM head of `config` (BERT: cls.predictions, decoder tied to the word embeddings). Throws
// Error naming config.json for another family or untied embeddings.
MlmHeadDesc describe_mlm_head(const ModelConfig& config);

// MPNet's bucket of relative distance `relative` = key position − query position, computed as
// transformers does (float32 log, truncated).
std::int64_t relative_bucket(std::int64_t relative, const RelativeBiasDesc& desc);

// The bias of every head for every relative distance a sequence of up to `max_len` tokens has:
// out[h · (2·max_len − 1) + (max_len − 1) + (j − i)] = table[bucket(j − i), h]; table is
// [table_rows, heads] float32.
void relative_bias_by_distance(const RelativeBiasDesc& desc, const float* table, std::int64_t heads,
                               std::int64_t max_len, std::vector<float>& out);

// DeBERTa-v2's row of the relative-position table for query i and key j, delta = i − j:
// transformers' make_log_bucket_position (distances below half the buckets as they are, longer
// ones log-spaced up to max_relative, in float32 as torch computes them), shifted by span and
// clamped to the table.
std::int64_t relative_index(std::int64_t delta, const DisentangledDesc& desc);

// relative_index for every distance a sequence of up to max_len tokens has:
// out[(max_len − 1) + delta] for |delta| < max_len.
void relative_index_by_distance(const DisentangledDesc& desc, std::int64_t max_len,
                                std::vector<std::int32_t>& out);

}  // namespace mcinfer::model
