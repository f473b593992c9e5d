#pragma once
// `mcinfer run`: the whole job. Rows -> tokens -> batches -> replicas -> shards -> merge.
// N replicas (threads) share one read-only copy of the weights; each owns its activations and
// its shard; the shards are merged into the output at the end, atomically.

#include <optional>

#include "core/error.h"
#include "core/json.h"
#include "data/rows.h"
#include "mcinfer/run_settings.h"
#include "model/precision.h"
#include "model/task.h"
#include "sched/chunking.h"
#include "sched/sources.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::sched {

// The run's options: the public settings (mcinfer/run_settings.h) and the choices parsed.
struct RunOptions : RunSettings {
  // Defaults: embed for a sentence-transformers model, else classify when the model has a head,
  // else embed. Pooling and normalize default to the sentence-transformers modules, else mean
  // pooling without normalisation (model::ModelDir::embedding_plan).
  std::optional<model::TaskKind> task;
  std::optional<model::PoolingModes> pooling;
  model::OutputActivation activation = model::OutputActivation::kAuto;
  // Of the encoder's GEMMs. kAuto: bf16 where the CPU has native bf16 dot products. The library
  // default is fp32 (exact transformers parity); the CLI's is auto.
  model::Precision precision = model::Precision::kFp32;
  Schedule schedule = Schedule::kDynamic;
  std::size_t window_rows = 8192;  // dynamic: rows read, sorted by length and cut at a time
  ChunkOptions chunk;              // rows longer than max_len
  // nullopt: auto (see sched::resolve_tokenizer_compat).
  std::optional<tokenizer::Compat> tokenizer_compat;

  data::ColumnSpec columns() const { return {id_col, text_col, text_pair_col}; }
};

// Thrown when RunOptions::stop was set: the batches finished so far are durable in the shards.
using mcinfer::StoppedError;

// Runs the job; throws Error (nothing at --output) on any failure. Returns the report.
Json run_job(const RunOptions& options);

}  // namespace mcinfer::sched
