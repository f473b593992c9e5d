#pragma once
// Every fact mcinfer reads from a model directory, for every command, each with the file it came
// from so that `inspect` can say where a setting comes from: config.json (whole for running; for
// tokenizing only model_type unless the dimensions are there), which tokenizer files exist, the
// sentence-transformers modules (modules.json order: Transformer, Pooling, Dense, Normalize) and
// the sequence length. Backend-neutral: it reads and validates; the Dense weights it loads are
// plain float arrays. Immutable after open(); safe to share between threads.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "model/config.h"
#include "model/cross_encoder.h"
#include "model/encoder_desc.h"
#include "model/pooling.h"
#include "model/st_modules.h"
#include "model/task.h"

namespace mcinfer::model {

// A value and where it came from: a file of the model directory ("1_Pooling/config.json"), a
// module ("modules.json: 2_Normalize"), a flag ("--pooling") or "default".
template <class T>
struct Sourced {
  T value;
  std::string source;
};

// What an embedding run applies after the encoder, each choice with its source.
struct EmbeddingPlan {
  Sourced<PoolingModes> pooling{Pooling::kMean, "default"};
  Sourced<bool> normalize{false, "default"};
  std::vector<StDense> dense;
  std::int64_t output_dim = 0;

  // {"pooling": {"value", "source"}, "normalize": {...}, "dense": [...], "output_dim"}: for
  // reports, inspect --json and the resume fingerprint.
  Json to_json() const;
};

class ModelDir {
 public:
  // kRun: config.json must describe the whole model. kTokenize: config.json may be absent or
  // partial (what AutoTokenizer.save_pretrained writes has none); it is read whole only when it
  // has the model's dimensions.
  enum class Use { kRun, kTokenize };

  // Throws Error naming the file and field on anything invalid or unsupported.
  static ModelDir open(const std::filesystem::path& dir, Use use = Use::kRun);

  const std::filesystem::path& path() const { return dir_; }
  bool has_config() const { return config_.has_value(); }
  // Throws Error naming config.json (and the missing field) when there is no whole config.
  const ModelConfig& config() const;
  const std::optional<std::string>& model_type() const { return model_type_; }
  // config.json's transformers_version: the transformers that saved the directory.
  const std::optional<std::string>& transformers_version() const { return transformers_version_; }

  // Tokenizer files present, in the order Tokenizer::load prefers them.
  const std::vector<std::string>& tokenizer_files() const { return tokenizer_files_; }
  bool has_tokenizer() const { return !tokenizer_files_.empty(); }

  // Present when the directory has modules.json (kRun only: tokenizing reads no module).
  const std::optional<StModules>& sentence_transformers() const { return st_.modules; }
  // What the sentence-transformers version that saved the directory does (see StBehaviour).
  const StBehaviour& st_behaviour() const { return st_.behaviour; }
  // A sentence-transformers model saved before 5.4 (its Transformer.tokenize), or a
  // CrossEncoder saved before 4.0 (its predict), strips every text (Python's str.strip) before
  // the tokenizer.
  bool strips_text() const {
    return (has_modules_ && st_.behaviour.strips_text) ||
           (cross_encoder_ && cross_encoder_->strips_text);
  }
  // Present when the directory is a sentence-transformers CrossEncoder (cross_encoder.h).
  const std::optional<CrossEncoderFiles>& cross_encoder() const { return cross_encoder_; }
  // Present when the directory is a sentence-transformers SparseEncoder (SpladePooling).
  const StSplade* splade() const {
    return st_.modules && st_.modules->splade ? &*st_.modules->splade : nullptr;
  }
  // config_sentence_transformers.json's max_active_dims: a SparseEncoder's default top-k.
  std::optional<std::int64_t> max_active_dims() const { return st_.max_active_dims; }
  // The prompt prepended to every text: `text` (--prompt), else the prompt named `name`
  // (--prompt-name), else config_sentence_transformers.json's default_prompt_name, else none
  // (value ""). An empty prompt is no prompt, as in encode(). Throws UsageError for both flags
  // or an unknown name (listing the names).
  Sourced<std::string> prompt(const std::optional<std::string>& text,
                              const std::optional<std::string>& name) const;
  // The Pooling module's include_prompt (true without one).
  bool pools_prompt() const { return !st_.modules || st_.modules->pooling.include_prompt; }
  // The Pooling and Dense modules' folders, whose files the results depend on (for the resume
  // fingerprint).
  std::vector<std::filesystem::path> module_dirs() const;

  // Tokens per sequence, special tokens included: `requested` (checked against the position
  // table when the config is known), else the smallest of the model's position table, the
  // tokenizer's model_max_length and sentence-transformers' max_seq_length. 0: no limit known
  // (tokenizing without a config).
  Sourced<std::size_t> max_len(std::optional<std::size_t> tokenizer_limit,
                               std::optional<std::size_t> requested) const;

  // sparse for a SparseEncoder, classify for a cross-encoder, embed for another
  // sentence-transformers model, classify for a checkpoint with a head, else embed.
  Sourced<TaskKind> default_task() const;

  // What turns a classifier's logits into its values: `requested` (--activation) unless auto;
  // for a cross-encoder the activation CrossEncoder.predict applies (its files, else
  // sentence-transformers' default for its labels); for a plain transformers classifier
  // config.json's problem_type. The one place a directory's activation is decided. Throws
  // Error naming the file and field for an activation class mcinfer does not implement.
  Sourced<OutputActivation> activation(OutputActivation requested) const;

  // Pooling, Dense and normalisation for embeddings: the flags when given, else the modules,
  // else mean pooling without normalisation. Throws Error naming the module when the Dense
  // layers do not fit the pooled width.
  EmbeddingPlan embedding_plan(std::optional<PoolingModes> pooling,
                               std::optional<bool> normalize) const;
  // The plan's Dense weights, loaded once for every replica.
  std::shared_ptr<const std::vector<DenseLayer>> load_dense(const EmbeddingPlan& plan) const;

 private:
  std::filesystem::path dir_;
  std::optional<ModelConfig> config_;
  std::string config_problem_;  // why config() is unavailable
  std::optional<std::string> model_type_;
  std::optional<std::string> transformers_version_;
  std::vector<std::string> tokenizer_files_;
  StFiles st_;
  bool has_modules_ = false;
  std::optional<CrossEncoderFiles> cross_encoder_;
};

// The network a run of `dir` computes: describe_encoder(config), with the MLM head for a
// SparseEncoder (whose sparse task reads its logits).
EncoderDesc describe_model(const ModelDir& dir);

// Python's str.strip() on UTF-8 text (the characters for which str.isspace() is true).
std::string_view strip_python_whitespace(std::string_view text);

}  // namespace mcinfer::model
