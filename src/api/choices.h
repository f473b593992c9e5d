#pragma once
// The options whose values are names (task, pooling, activation, precision, schedule, the
// long-input choices, tokenizer_compat), turned into the run pipeline's types in one place for
// run() and Model::load. Values set through the option table are already spelled right; a
// program that fills RunOptions or ModelOptions itself gets the table's refusal here.

#include <optional>

#include "mcinfer/model.h"
#include "mcinfer/options.h"
#include "mcinfer/run.h"
#include "model/pooling.h"
#include "model/precision.h"
#include "model/task.h"
#include "sched/chunking.h"
#include "sched/sources.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::api {

struct ParsedChoices {
  std::optional<model::TaskKind> task;         // nullopt: the directory decides
  std::optional<model::PoolingModes> pooling;  // nullopt: the directory decides
  model::OutputActivation activation = model::OutputActivation::kAuto;
  model::Precision precision = model::Precision::kFp32;
  sched::Schedule schedule = sched::Schedule::kDynamic;  // run only
  sched::ChunkOptions chunk;
  std::optional<tokenizer::Compat> tokenizer_compat;  // nullopt: auto
};

// UsageError naming the option as `surface` spells it: run()'s options are the CLI's flags,
// a Model's its keywords.
ParsedChoices parse_choices(const RunOptions& options, OptionSurface surface);
ParsedChoices parse_choices(const ModelOptions& options, OptionSurface surface);

}  // namespace mcinfer::api
