#pragma once
// The settings of a run that need no parsing: paths, columns, sizes, switches. Shared by the
// public RunOptions (mcinfer/run.h, whose choices are spelled as the CLI's flags) and the run
// pipeline's own options (sched/run.h, the same choices parsed), so each field and its default
// is written once.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "mcinfer/backend_choice.h"
#include "mcinfer/precision_gate.h"

namespace mcinfer {

// The precision gate (check rows, bounds, --int8-keep) is PrecisionGate's, as Model's.
struct RunSettings : PrecisionGate, BackendChoice {
  std::filesystem::path model_dir, input, output;
  std::optional<std::string> format;  // of the input: csv or jsonl; default from its extension
  std::string id_col = "id";
  std::string text_col = "text";
  std::optional<std::string> text_pair_col;
  // Default: the sentence-transformers modules, else no normalisation.
  std::optional<bool> normalize;
  std::optional<std::size_t> max_len;  // tokens per sequence; default: the model's
  // A prompt prepended to every text, by its text or by its name in the model's
  // config_sentence_transformers.json (sentence-transformers' encode(prompt=, prompt_name=));
  // neither: the model's default_prompt_name, if any.
  std::optional<std::string> prompt, prompt_name;
  // --long-input chunk: tokens each window shares with the one before (Hugging Face's stride).
  std::size_t stride = 0;
  // Several outputs of one pass, in this order, e.g. "probs,cls" (model::OutputKind names:
  // classify: probs, logits, cls, mean; embed: mean, cls, max, normalized); nullopt: the one
  // output of the task.
  std::optional<std::string> outputs;
  // --task sparse: keep each row's K largest token weights (sentence-transformers'
  // max_active_dims); nullopt: the model's max_active_dims, else every nonzero.
  std::optional<std::int64_t> sparse_top_k;
  // Embeddings: keep the first N values (Matryoshka models: Qwen3-Embedding, EmbeddingGemma),
  // then normalise if the model normalises; nullopt: all.
  std::optional<std::int64_t> truncate_dim;
  int replicas = 0;  // 0: the backend's replica slots (CPU: one per physical core)
  // This process's rank among `world` processes sharing the input (--rank/--world); default:
  // from the launcher's variables (Open MPI, MPICH, Slurm, Kubernetes, torchrun), else 0 of 1.
  std::optional<int> rank, world;
  int threads_per_replica = 1;
  int batch_size = 16;                              // static schedule
  std::int64_t batch_tokens = 4096;                 // dynamic schedule
  std::optional<std::filesystem::path> shards_dir;  // default: a temporary directory
  bool resume = false;                              // continue the run recorded in shards_dir
  bool skip_bad_rows = false;
  std::optional<std::filesystem::path> report_path;
  bool quiet = false;
  bool pin_threads = true;
  bool profile = false;  // time every op; the report then has time_seconds and time_share
  std::vector<std::string> command_line;    // for the report and the resume hint
  const std::atomic<bool>* stop = nullptr;  // when set: stop after the batches in flight
};

}  // namespace mcinfer
