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
#include "model/pooling.h"
#include "model/task.h"

namespace mcinfer::model {

// A value and where it came from: a file of the model directory ("1_Pooling/config.json"), a
// module ("modules.json: 2_Normalize"), a flag ("--pooling") or "default".
template <class T>
struct Sourced {
  T value;
  std::string source;
};

struct StModule {
  enum class Kind { kTransformer, kPooling, kDense, kNormalize };
  Kind kind = Kind::kTransformer;
  std::string name;  // modules.json "name"
  std::string path;  // its folder, "" for the directory itself
  std::string type;  // as written, e.g. "sentence_transformers.models.Pooling"
};

struct StPooling {
  PoolingModes modes = Pooling::kMean;
  std::int64_t word_embedding_dimension = 0;
  bool include_prompt = true;  // matters only with prompts, which mcinfer refuses
  std::string source;          // "1_Pooling/config.json"
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

// What SentenceTransformer(dir) loads and encode() runs after the transformer.
struct StModules {
  std::vector<StModule> modules;  // in modules.json order
  StPooling pooling;
  std::vector<StDense> dense;            // applied in order after pooling
  std::optional<std::string> normalize;  // "modules.json: 2_Normalize" when listed
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

  // Tokenizer files present, in the order Tokenizer::load prefers them.
  const std::vector<std::string>& tokenizer_files() const { return tokenizer_files_; }
  bool has_tokenizer() const { return !tokenizer_files_.empty(); }

  // Present when the directory has modules.json (kRun only: tokenizing reads no module).
  const std::optional<StModules>& sentence_transformers() const { return st_; }
  // A sentence-transformers model: its Transformer.tokenize strips every text (Python's
  // str.strip) before the tokenizer.
  bool strips_text() const { return has_modules_; }
  // The Pooling and Dense modules' folders, whose files the results depend on (for the resume
  // fingerprint).
  std::vector<std::filesystem::path> module_dirs() const;

  // Tokens per sequence, special tokens included: `requested` (checked against the position
  // table when the config is known), else the smallest of the model's position table, the
  // tokenizer's model_max_length and sentence-transformers' max_seq_length. 0: no limit known
  // (tokenizing without a config).
  Sourced<std::size_t> max_len(std::optional<std::size_t> tokenizer_limit,
                               std::optional<std::size_t> requested) const;

  // embed for a sentence-transformers model, classify for a checkpoint with a head, else embed.
  Sourced<TaskKind> default_task() const;

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
  std::vector<std::string> tokenizer_files_;
  std::optional<StModules> st_;
  bool has_modules_ = false;
  std::optional<std::int64_t> st_max_seq_length_;
  std::string st_config_name_;  // "sentence_bert_config.json", or another name ST reads
};

// Python's str.strip() on UTF-8 text (the characters for which str.isspace() is true).
std::string_view strip_python_whitespace(std::string_view text);

std::string_view dense_activation_name(DenseActivation activation);

}  // namespace mcinfer::model
