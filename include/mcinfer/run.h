#pragma once
// `mcinfer run` as a library call: every row of a CSV or JSONL file through a model on every
// replica, crash-safe shards, one merged output written atomically. Option values are spelled as
// the CLI's flags are; each is checked, and a wrong one is a UsageError naming the flag.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcinfer/errors.h"
#include "mcinfer/run_settings.h"

namespace mcinfer {

// Every choice spelled as the CLI's flag spells it; each is checked when the run starts.
struct RunOptions : RunSettings {
  // classify, embed or sparse; default from the model directory
  std::optional<std::string> task;
  // embed: mean, cls, max, mean_sqrt_len, weightedmean or lasttoken; default from the
  // sentence-transformers modules, else mean
  std::optional<std::string> pooling;
  std::string activation = "auto";   // classify: auto, softmax, sigmoid or none
  std::string precision = "fp32";    // fp32, bf16, int8 or auto (the CLI's default is auto)
  std::string schedule = "dynamic";  // dynamic or static
  // Rows longer than max_len: truncate, or chunk (windows of max_len sharing `stride` tokens,
  // every window computed, the row's output reduced from them).
  std::string long_input = "truncate";
  std::string chunk_reduce = "mean";    // chunk: mean, max, first or token-weighted
  std::string chunk_values = "logits";  // chunk, classifiers: reduce logits or probs
  // How the tokenizer is built: auto (transformers 5's way when config.json was written by
  // transformers 5, else as the files say), file, or transformers5.
  std::string tokenizer_compat = "auto";
};

// Runs the job and returns its report (JSON text, as --report writes it). Throws Error, with
// nothing at options.output, on any failure; PrecisionCheckError when the check's bounds are
// missed; StoppedError when `stop` was set.
std::string run(const RunOptions& options);

// The values a choice of RunOptions accepts, by the CLI flag that sets it: --format, --task,
// --pooling, --activation, --precision, --schedule, --long-input, --chunk-reduce, --chunk-values,
// --on-bad-row, --tokenizer-compat. The same tables parse them. Throws UsageError for another flag.
std::vector<std::string> run_flag_choices(std::string_view flag);

}  // namespace mcinfer
