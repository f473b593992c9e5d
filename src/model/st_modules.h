#pragma once
// The sentence-transformers side of a model directory: modules.json and the module folders
// (Pooling, Dense, Normalize), config_sentence_transformers.json (prompts, the version that
// saved it) and sentence_bert_config.json, as sentence-transformers 2.x to 6.x write them.
// Parsing only; ModelDir (model_dir.h) combines these with config.json and the flags.
// Immutable after reading; safe to share between threads.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/pooling.h"
#include "model/task.h"

namespace mcinfer::model {

struct StModule {
  enum class Kind { kTransformer, kPooling, kDense, kNormalize, kSpladePooling };
  Kind kind = Kind::kTransformer;
  std::string name;  // modules.json "name"
  std::string path;  // its folder, "" for the directory itself
  std::string type;  // as written, e.g. "sentence_transformers.models.Pooling"
};

struct StPooling {
  PoolingModes modes = Pooling::kMean;
  std::int64_t embedding_dimension = 0;
  std::string dimension_field;  // 6.x "embedding_dimension", before "word_embedding_dimension"
  // false: the prompt's tokens are left out of the pooling (they are still encoded).
  bool include_prompt = true;
  std::string source;  // "1_Pooling/config.json"
};

struct StDense {
  std::string module;  // its folder, e.g. "2_Dense"
  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  bool bias = true;
  std::string activation_function;  // as written: "torch.nn.modules.activation.Tanh"
  DenseActivation activation = DenseActivation::kTanh;
  std::string weights;  // "2_Dense/model.safetensors"
  std::string source;   // "2_Dense/config.json"
};

// A SparseEncoder's SpladePooling module (its config.json).
struct StSplade {
  SpladePooling pooling = SpladePooling::kMax;
  SpladeActivation activation = SpladeActivation::kRelu;
  std::optional<std::int64_t> embedding_dimension;  // the vocabulary, when written
  std::string dimension_field;  // 6.x "embedding_dimension", before "word_embedding_dimension"
  std::string source;           // "1_SpladePooling/config.json"
};

// What SentenceTransformer(dir) loads and encode() runs after the transformer.
struct StModules {
  std::vector<StModule> modules;  // in modules.json order
  // A CrossEncoder (sentence-transformers 5.4 and later): one Transformer with transformer_task
  // "sequence-classification", whose logits are the scores; no Pooling (`pooling` is unset).
  bool classifier = false;
  // A SparseEncoder: a fill-mask Transformer (or 5.x's MLMTransformer) whose MLM logits
  // SpladePooling pools; no Pooling (`pooling` is unset).
  bool fill_mask = false;
  std::optional<StSplade> splade;
  StPooling pooling;
  std::vector<StDense> dense;            // applied in order after pooling
  std::optional<std::string> normalize;  // "modules.json: 2_Normalize" when listed
};

// What encode() does differently across the sentence-transformers versions that save
// directories. mcinfer follows the version recorded in config_sentence_transformers.json (the
// library the model was saved, and so presumably used, with); none recorded: the oldest
// behaviour.
struct StBehaviour {
  std::string version;  // "6.3.0", or "" when none is recorded
  std::string source;   // "config_sentence_transformers.json: __version__", or "no version ..."
  // Before 5.4, Transformer.tokenize stripped every text (Python's str.strip) first.
  bool strips_text = true;
  // From 5.5, CLS pooling with include_prompt false takes the first token after the prompt
  // (the first 1 of the masked attention mask); before, token 0 always.
  bool cls_after_prompt = false;
};

// config_sentence_transformers.json's prompts.
struct StPrompts {
  std::map<std::string, std::string> prompts;  // name -> text
  std::optional<std::string> default_name;     // default_prompt_name
};

// The sentence-transformers files of a directory. Throws Error naming the file and field.
struct StFiles {
  std::string config_name;  // "sentence_bert_config.json" or another name ST reads; "" if none
  std::optional<std::int64_t> max_seq_length;  // absent: the model's or the tokenizer's limit
  // 6.x's transformer_task: "feature-extraction" (also when absent), "sequence-classification"
  // or "fill-mask".
  std::string transformer_task = "feature-extraction";
  StBehaviour behaviour;
  StPrompts prompts;
  // config_sentence_transformers.json's max_active_dims (a SparseEncoder's top-k by default).
  std::optional<std::int64_t> max_active_dims;
  std::optional<StModules> modules;  // when modules.json exists and it was asked for

  static StFiles read(const std::filesystem::path& dir, bool with_modules);
};

}  // namespace mcinfer::model
