#pragma once
// `mcinfer run` as a library call: every row of a CSV or JSONL file through a model on every
// replica, crash-safe shards, one merged output written atomically. Option values are spelled as
// the CLI's flags are; each is checked, and a wrong one is a UsageError naming the flag.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mcinfer/errors.h"

namespace mcinfer {

struct RunOptions {
  std::filesystem::path model_dir, input, output;
  std::optional<std::string> format;  // of the input: csv or jsonl; default from its extension
  std::string id_col = "id";
  std::string text_col = "text";
  std::optional<std::string> text_pair_col;
  std::optional<std::string> task;  // classify or embed; default from the model directory
  std::optional<std::string>
      pooling;  // embed: mean, cls, max, mean_sqrt_len, weightedmean, lasttoken
  std::optional<bool> normalize;
  std::string activation = "auto";  // classify: auto, softmax, sigmoid or none
  std::optional<std::size_t> max_len;
  std::string backend = "cpu";
  std::string precision = "fp32";  // fp32, bf16, int8 or auto (the CLI's default is auto)
  std::optional<std::size_t> check_precision_rows;  // default 32; 0: no check
  std::optional<double> min_cosine, min_agreement;
  std::optional<std::string> int8_keep;
  int replicas = 0;  // 0: the backend's slots
  int threads_per_replica = 1;
  std::string schedule = "dynamic";  // dynamic or static
  int batch_size = 16;               // static
  std::int64_t batch_tokens = 4096;  // dynamic
  std::optional<std::filesystem::path> shards_dir;
  bool resume = false;
  bool skip_bad_rows = false;
  std::optional<std::filesystem::path> report_path;
  bool quiet = false;
  bool pin_threads = true;
  bool profile = false;
  std::vector<std::string> command_line;    // for the report and the resume hint
  const std::atomic<bool>* stop = nullptr;  // when set: stop after the batches in flight
};

// Runs the job and returns its report (JSON text, as --report writes it). Throws Error, with
// nothing at options.output, on any failure; PrecisionCheckError when the check's bounds are
// missed; StoppedError when `stop` was set.
std::string run(const RunOptions& options);

}  // namespace mcinfer
