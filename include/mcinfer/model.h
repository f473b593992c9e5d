#pragma once
// mcinfer as a library: load a Hugging Face model directory once, then compute a matrix of
// outputs (class scores or sentence embeddings, one row per input) for texts or token ids, on
// every replica of the chosen backend. What `mcinfer run` does for one file, without files.
//
// Threading: a Model may be used from one thread at a time; each predict() call runs on all
// of the model's replicas and returns when every row is done.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mcinfer/backend_choice.h"
#include "mcinfer/errors.h"
#include "mcinfer/precision_gate.h"

namespace mcinfer {

// The precision gate (PrecisionGate: check rows, --min-cosine, --min-agreement, --int8-keep)
// is `mcinfer run`'s, on the rows of the model's first call: a reduced precision's weights are
// prepared there, int8's calibrated and chosen on those rows, and a missed bound throws
// PrecisionCheckError then (and again on every later call) before any output is returned.
// The backend (BackendChoice) is `mcinfer run --backend`, `--plugin`, `--devices`.
struct ModelOptions : PrecisionGate, BackendChoice {
  std::string precision = "fp32";  // fp32, bf16, int8 or auto (as `mcinfer run --precision`)
  int replicas = 0;                // 0: the backend's slots (CPU: one per physical core)
  int threads_per_replica = 1;
  // Pin each replica's thread to a core of its own (with one thread per replica). Off where
  // several models share the machine's cores (e.g. one per Ray actor), which would pin alike.
  bool pin_threads = true;
  // "classify", "embed", or empty: as `mcinfer run` decides (sentence-transformers → embed, a
  // classification head → classify, else embed with the directory's pooling).
  std::string task;
  std::optional<std::size_t> max_len;  // tokens per sequence; default: the model's
  // Embeddings: pooling (mean, cls, max, mean_sqrt_len, weightedmean, lasttoken) and L2
  // normalisation; default: the sentence-transformers modules, else mean without.
  std::string pooling;
  std::optional<bool> normalize;
  // A prompt prepended to every text, by text or by name (`mcinfer run --prompt`,
  // `--prompt-name`); neither: the model's default prompt, if any.
  std::optional<std::string> prompt, prompt_name;
  std::string tokenizer_compat = "auto";  // auto, file or transformers5 (`--tokenizer-compat`)
  // Embeddings: keep the first N values, then normalise if the model normalises
  // (`--truncate-dim`); nullopt: all.
  std::optional<std::int64_t> truncate_dim;
  // Texts longer than max_len (`--long-input`, `--stride`, `--chunk-reduce`, `--chunk-values`):
  // truncate, or chunk: overlapping windows of max_len tokens (`stride` shared), each computed
  // as a sequence of its own, reduced into the row's output (mean, max, first, token-weighted;
  // classifiers reduce their logits or probs) as `mcinfer run` reduces them.
  std::string long_input = "truncate";
  std::size_t stride = 0;
  std::string chunk_reduce = "mean";
  std::string chunk_values = "logits";
  // Classifiers' outputs (`--activation`): auto (a cross-encoder's as CrossEncoder.predict
  // applies it, else the problem_type's), softmax, sigmoid or none.
  std::string activation = "auto";
  // Several outputs of one pass (`--outputs`, e.g. "probs,cls"), in this order: the columns are
  // each output's, <output>.<label> / <output>.e<i>; nullopt: the task's one output.
  std::optional<std::string> outputs;
  // Sparse encoders: keep each row's K largest token weights (`--sparse-top-k`); nullopt: the
  // model's max_active_dims, else every nonzero.
  std::optional<std::int64_t> sparse_top_k;
};

// Row-major outputs: rows × columns, one row per input, in input order.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<float> values;         // [rows, cols]
  std::vector<std::string> columns;  // the labels, or e0 … e{cols-1} for embeddings
  float at(std::size_t row, std::size_t col) const { return values.at(row * cols + col); }
};

// The choices of one predict() call (sentence-transformers' encode() arguments).
struct PredictOptions {
  // This call's prompt, by text or by name; neither: the one the model was loaded with.
  std::optional<std::string> prompt, prompt_name;
  // Tokens a replica computes at once, counted as --batch-tokens counts them: rows × the
  // longest row.
  std::int64_t batch_tokens = 4096;
  std::size_t batch_rows = 0;  // rows per batch at most; 0: only the tokens limit
  // Set from any thread: the batches in flight finish and the call throws StoppedError.
  const std::atomic<bool>* stop = nullptr;
  // Rows done so far, raised from the replicas' threads as batches finish.
  std::atomic<std::size_t>* rows_done = nullptr;
};

class Model {
 public:
  // Throws Error (UsageError for options) naming the file, tensor or option at fault.
  static Model load(const std::filesystem::path& model_dir, const ModelOptions& options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  std::string backend() const;
  std::string precision() const;  // as resolved: fp32, bf16 or int8
  // The precision gate's evidence as JSON (the run report's "precision_check" and "int8_plan"
  // objects, and the load's "warnings"): empty for fp32 and bf16 without check rows, and until
  // the first call of a model with check rows.
  std::string precision_report() const;
  std::string task() const;  // classify or embed
  int replicas() const;
  std::size_t max_len() const;

  // The output columns: the labels (classify), or e0 … e{dim-1} (embed).
  std::vector<std::string> columns() const;

  // Texts through the model's tokenizer (truncated to max_len), with an optional second text
  // per row for sentence pairs (`pairs` empty, or as long as `texts`). The rows are tokenised on
  // the replicas' threads and computed longest first in batches the free replicas take.
  Matrix predict(std::span<const std::string_view> texts,
                 std::span<const std::string_view> pairs = {},
                 const PredictOptions& options = {}) const;
  Matrix predict(const std::vector<std::string>& texts,
                 const std::vector<std::string>& pairs = {}) const;
  // Token ids with the special tokens already in place; each row at most max_len long, every id
  // inside the vocabulary (else Error naming the row). Refused while a prompt is in force. The
  // same batching, stop and progress as texts.
  Matrix predict_ids(const std::vector<std::vector<std::int32_t>>& ids,
                     const PredictOptions& options = {}) const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcinfer
