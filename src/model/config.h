#pragma once
// What a checkpoint's config.json says about the network, validated: every value that sizes a
// buffer is bounded, and anything the engine does not implement is refused by field name.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "model/activation.h"

namespace mcinfer::model {

// Families of encoders, each described once by model/encoder_desc.cc (decoder-style ones by
// model/decoder_desc.cc). CamemBERT and XLM-R are RoBERTa bodies (their model_type is kept in
// ModelConfig::model_type).
enum class Family {
  kBert,
  kRoberta,
  kDistilBert,
  kMpnet,
  kElectra,
  kDebertaV2,
  kModernBert,
  kQwen3,
  kGemma3,
};
enum class Head { kNone, kSequenceClassification };
enum class ProblemType { kSingleLabel, kMultiLabel, kRegression };
inline constexpr EnumNames<ProblemType, 3> kProblemTypeNames{{{
    {ProblemType::kSingleLabel, "single_label_classification"},
    {ProblemType::kMultiLabel, "multi_label_classification"},
    {ProblemType::kRegression, "regression"},
}}};

// DeBERTa-v2's disentangled attention, as its config.json sets it up: content-to-position (c2p)
// and position-to-content (p2c) terms from a table of relative-position embeddings, indexed by
// the (log-bucketed, clamped) distance between query and key.
struct DisentangledConfig {
  bool relative = false;  // relative_attention: the terms are computed
  bool c2p = false;       // pos_att_type
  bool p2c = false;
  std::int64_t position_buckets = 0;        // ≤ 0: distances are not log-bucketed
  std::int64_t max_relative_positions = 0;  // resolved: max_position_embeddings when < 1
  bool share_att_key = false;  // the table is projected by query_proj / key_proj themselves
  bool norm_rel_ebd = false;   // the table goes through encoder.LayerNorm first
  // Rows of the table are 2 · span: position_buckets when set, else max_relative_positions.
  std::int64_t span() const {
    return position_buckets > 0 ? position_buckets : max_relative_positions;
  }
  // The scores are divided by √(head_dim · score_terms()) (counted from pos_att_type even when
  // relative_attention is false, as transformers does).
  std::int64_t score_terms() const { return 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0); }
};

// ModernBERT's layout as its config.json sets it up: pre-norm layers, rotary positions with one
// base per attention kind, global attention in some layers and a sliding window in the others, a
// gated FFN, and biases (Linear and LayerNorm) each switched on or off.
struct ModernBertConfig {
  std::vector<bool> global;        // per layer: global attention, else the sliding window
  std::int64_t window = 0;         // local_attention: a query sees the keys within ±window / 2
  double global_theta = 160000.0;  // rotary base of the global layers
  double local_theta = 10000.0;    // and of the sliding-window ones
  bool attention_bias = false;     // Wqkv and Wo
  bool mlp_bias = false;           // Wi and Wo
  bool norm_bias = false;          // every LayerNorm's shift
  bool classifier_bias = false;    // head.dense (the classifier itself always has one)
  bool decoder_bias = true;        // the masked-LM decoder's bias (decoder.bias)
  Activation classifier_act = Activation::kGeluErf;
  bool mean_pooling = false;  // classifier_pooling "mean" (else "cls": the first token)
};

// A decoder-style model run as an embedder or classifier (Qwen3, Gemma 3), as its config.json
// sets it up: grouped-query attention with its own head size, RMS norms, rotary positions (a base
// per layer kind), a causal or bidirectional mask with sliding windows in some layers, a gated FFN.
struct DecoderConfig {
  std::int64_t kv_heads = 0;    // num_key_value_heads (divides num_attention_heads)
  std::int64_t head_dim = 0;    // head_dim (not always hidden / heads)
  bool attention_bias = false;  // q/k/v/o projections
  bool causal = true;           // Gemma 3: not with use_bidirectional_attention
  std::vector<bool> sliding;    // per layer: the sliding window (layer_types)
  // The window of the sliding layers as LayerDesc::window says it (causal: i − j < window;
  // bidirectional: |i − j| ≤ window / 2); 0: none.
  std::int64_t sliding_window = 0;
  double rope_theta = 10000.0;          // full-attention layers
  double sliding_rope_theta = 10000.0;  // sliding layers (Gemma 3's local base)
  float score_scale = 0;                // Gemma 3: query_pre_attn_scalar^−½ (0: 1 / √head_dim)
  // The pad id the classification head skips when it looks for the last token (none: null).
  std::optional<std::int64_t> pad_id;
};

struct ModelConfig {
  std::string model_type;    // as written: "bert", "roberta", "xlm-roberta", "mpnet", ...
  std::string architecture;  // e.g. "BertForSequenceClassification"
  Family family = Family::kBert;
  Head head = Head::kNone;

  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t max_position_embeddings = 0;
  std::int64_t type_vocab_size = 0;  // 0: no token-type embedding (DistilBERT)
  std::int64_t pad_token_id = 0;
  Activation hidden_act = Activation::kGeluErf;
  std::string hidden_act_name;
  float layer_norm_eps = 1e-12f;
  bool sinusoidal_positions = false;  // DistilBERT's sinusoidal_pos_embds
  // Width of the token embeddings: ELECTRA's embedding_size, projected to hidden_size after the
  // embedding LayerNorm when it differs; hidden_size for every other family.
  std::int64_t embedding_size = 0;
  // RoBERTa-style position ids (real tokens numbered from padding_idx + 1, pad tokens at
  // padding_idx): the padding_idx, or nullopt for positions 0, 1, 2, ... (BERT).
  std::optional<std::int64_t> position_padding_idx;
  // MPNet: rows of the relative attention bias table (relative_attention_num_buckets).
  std::int64_t relative_attention_buckets = 0;
  // DeBERTa-v2: its attention; whether the absolute position table is added to the embeddings
  // (position_biased_input); the ContextPooler's activation (pooler_hidden_act).
  std::optional<DisentangledConfig> disentangled;
  bool position_biased_input = true;
  Activation pooler_act = Activation::kGeluErf;
  // ModernBERT: its attention kinds, rotary bases, biases and classifier head.
  std::optional<ModernBertConfig> modernbert;
  // Qwen3: its attention, norms and positions (decoder_config.cc).
  std::optional<DecoderConfig> decoder;

  // Sequence classification (num_labels == 0 without a classifier head).
  std::int64_t num_labels = 0;
  std::vector<std::string> labels;  // id2label in id order
  ProblemType problem_type = ProblemType::kSingleLabel;
  std::string torch_dtype;  // informational: "dtype" (transformers 5) or "torch_dtype" (4.x)
  // The transformers that saved config.json (decides --tokenizer-compat auto).
  std::optional<std::string> transformers_version;

  static ModelConfig load(const std::filesystem::path& config_json);
  // Well-known shapes for benchmarks without files (shape_names()). Throws UsageError for other
  // names.
  static ModelConfig shape(std::string_view name, std::int64_t num_labels = 2);
  static std::vector<std::string> shape_names();
  // "bert, roberta, xlm-roberta, camembert, distilbert, mpnet, electra": the accepted model_types.
  static std::string supported_model_types();

  std::int64_t head_dim() const { return decoder ? decoder->head_dim : hidden_size / num_heads; }
  // Key-value heads (fewer than num_heads under grouped-query attention).
  std::int64_t kv_heads() const { return decoder ? decoder->kv_heads : num_heads; }
  // Widths of the QKV GEMM's output and of the attention's output.
  std::int64_t qkv_width() const { return (num_heads + 2 * kv_heads()) * head_dim(); }
  std::int64_t context_width() const { return num_heads * head_dim(); }
  // Longest sequence (special tokens included) the position table allows.
  std::int64_t max_sequence_length() const;
  // The tensor-name prefix of the base model inside a task checkpoint ("bert", "roberta", ...).
  std::string base_prefix() const;
  std::string family_name() const;
};

inline std::string_view problem_type_name(ProblemType type) { return kProblemTypeNames.name(type); }

}  // namespace mcinfer::model
