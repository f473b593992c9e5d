#pragma once
// The last step of a distributed run: every rank's shards merged into one output, but only when
// every rank's record (run_<K>.json, written by ShardsDir) is there, complete and describes the
// same run. Used by rank 0 of an MPI job and by `mcinfer merge --shards-dir`, the final step
// of job arrays and Indexed Jobs. A merge that lacks ids names them with the rank that owned
// them (recomputed from the input exactly as the ranks split it, RowShare), so the user knows
// which rank to rerun with --resume.
//
// Threading: one call at a time, on the calling thread.

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "merge/merge.h"

namespace mcinfer::sched {

// What the ranks' records in a shards directory say together.
struct DistributedRun {
  int world = 0;
  Json fingerprint;                               // the same for every rank
  Json flags;                                     // fingerprint["flags"]
  std::vector<int> complete, incomplete, absent;  // ranks
};

// Throws Error naming the rank whose record disagrees (another world, model, input or flags),
// or when the directory holds no rank record.
DistributedRun read_distributed_run(const std::filesystem::path& shards_dir);

struct DistributedMerge {
  std::filesystem::path shards_dir;
  std::filesystem::path expect;  // the input the ranks ran on (checked by its fingerprint)
  std::filesystem::path output;
  bool allow_missing = false;  // merge what is there although ranks or ids are missing
};

// Merges every rank's shards with the input's ids expected, in input order. Throws
// merge::MissingIdsError (the CLI's exit 3) naming the incomplete ranks, or the missing ids
// and the rank that owned each, unless allow_missing; Error for a record or input that does not
// fit. `notes` receives what --allow-missing let through.
merge::Report merge_distributed(const DistributedMerge& options, std::vector<std::string>& notes);

}  // namespace mcinfer::sched
