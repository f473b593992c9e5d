#pragma once
// `mcinfer run`: the whole job. Rows -> tokens -> batches -> replicas -> shards -> merge.
// N replicas (threads) share one read-only copy of the weights; each owns its activations and
// its shard; the shards are merged into the output at the end, atomically.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/json.h"
#include "data/rows.h"
#include "model/precision.h"
#include "model/task.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::sched {

enum class Schedule { kDynamic, kStatic };
inline constexpr EnumNames<Schedule, 2> kScheduleNames{
    {{{Schedule::kDynamic, "dynamic"}, {Schedule::kStatic, "static"}}}};
inline std::string_view schedule_name(Schedule s) { return kScheduleNames.name(s); }

struct RunOptions {
  std::filesystem::path model_dir;
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::string> format;  // of the input; default from its extension
  data::ColumnSpec columns;
  // Defaults: embed for a sentence-transformers model, else classify when the model has a head,
  // else embed. Pooling and normalize default to the sentence-transformers modules, else mean
  // pooling without normalisation (model::ModelDir::embedding_plan).
  std::optional<model::TaskKind> task;
  std::optional<model::PoolingModes> pooling;
  std::optional<bool> normalize;
  model::OutputActivation activation = model::OutputActivation::kAuto;
  std::optional<std::size_t> max_len;
  // Of the encoder's GEMMs. kAuto: bf16 where the CPU has native bf16 dot products. The library
  // default is fp32 (exact transformers parity); the CLI's is auto.
  model::Precision precision = model::Precision::kFp32;
  // Rows compared against fp32 before a reduced-precision run (nullopt: 32; 0: no check).
  std::optional<std::size_t> check_precision_rows;
  std::optional<double> min_cosine;  // bounds of that check; a miss stops the run (exit 4)
  std::optional<double> min_agreement;
  // int8: GEMMs kept out of int8 (model::parse_gemm_list syntax); nullopt: chosen on the check
  // rows (sched/int8_plan.h).
  std::optional<std::string> int8_keep;
  std::string backend = "cpu";  // backend::built_backends()
  int replicas = 0;             // 0: the backend's replica slots (CPU: one per physical core)
  int threads_per_replica = 1;
  Schedule schedule = Schedule::kDynamic;
  int batch_size = 16;                              // static
  std::int64_t batch_tokens = 4096;                 // dynamic
  std::size_t window_rows = 8192;                   // dynamic
  std::optional<std::filesystem::path> shards_dir;  // default: a temporary directory
  bool resume = false;                              // continue the run recorded in shards_dir
  bool skip_bad_rows = false;
  std::optional<std::filesystem::path> report_path;
  bool quiet = false;
  bool pin_threads = true;
  bool profile = false;  // time every op; the report then has time_seconds and time_share
  std::vector<std::string> command_line;    // for the report
  const std::atomic<bool>* stop = nullptr;  // set by a signal handler: stop taking batches
};

// Thrown when RunOptions::stop was set: the batches finished so far are durable in the shards.
using mcinfer::StoppedError;

// Runs the job; throws Error (nothing at --output) on any failure. Returns the report.
Json run_job(const RunOptions& options);

}  // namespace mcinfer::sched
