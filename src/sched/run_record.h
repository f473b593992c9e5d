#pragma once
// The shards directory of a run and what makes it resumable: run.json records a fingerprint of
// everything the results depend on (model files, input, every result-changing flag, by name) and
// the record's format; --resume refuses a directory whose record differs, recovers each shard's
// longest valid prefix and says which input positions are already durable.
//
// A distributed run (world > 1) shares one directory among its ranks: rank K writes
// run_<K>.json (rank, world, whether it is complete) and shard_<K>_<N> files, and refuses to
// start when another rank's record describes a different run (world, model, input or flags).
//
// Threading: used by the thread that runs the job only.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "merge/shard_names.h"
#include "sched/launch.h"
#include "sched/run.h"

namespace mcinfer::sched {

// The format of run.json this build writes and resumes. 2: precision, backend and every enum
// recorded by name. A record without it (or with another) is refused on --resume.
inline constexpr int kRunRecordFormat = 2;

// The record of a run (world 1: run.json) or of one of its ranks (run_<rank>.json).
std::filesystem::path run_record_path(const std::filesystem::path& dir, const RankInfo& rank);

// Every rank's record in a shards directory, by rank (run_<K>.json; not run.json).
std::vector<std::pair<int, Json>> rank_records(const std::filesystem::path& dir);

class ShardsDir {
 public:
  // --shards-dir, or a private directory beside the output (same filesystem, removed at the end
  // unless keep() is called). With --resume: checks the record against `fingerprint` and
  // recovers the shards; otherwise writes the record into an empty directory. Notes (a torn
  // tail cut off, nothing to resume) go to `warnings`.
  ShardsDir(const RunOptions& options, const Json& fingerprint, const std::string& shard_header,
            int replicas, const RankInfo& rank, std::vector<std::string>& warnings);
  ~ShardsDir();
  ShardsDir(const ShardsDir&) = delete;
  ShardsDir& operator=(const ShardsDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Input positions already durable in the shards (empty for a fresh run), and how many.
  const std::vector<bool>& done() const { return done_; }
  std::uint64_t done_rows() const { return done_rows_; }

  // This process's shards (shard_<N>, or shard_<rank>_<N> of a distributed run), by N.
  std::vector<std::filesystem::path> shards() const;
  // The shard file replica `replica` of this process appends to.
  std::filesystem::path shard_path(int replica, data::LineFormat format) const;
  // Records this rank as finished in its record (a distributed run's merge waits for every
  // rank's), with what it computed.
  void mark_complete(const Json& summary);
  // Whether any batch is durable, so that --resume is worth suggesting.
  bool resumable() const;
  // "rerun the same command with --resume: ..." with the exact command.
  std::string resume_hint() const;
  // Keeps the directory after a failure or a stop.
  void keep() { remove_ = false; }

 private:
  void resume(const Json& fingerprint, const std::string& shard_header,
              std::vector<std::string>& warnings);
  // Distributed runs: every other rank's record describes the same run as `fingerprint`.
  void check_other_ranks(const Json& fingerprint) const;
  Json record(const Json& fingerprint, int replicas, bool complete) const;

  const RunOptions& options_;
  // The rank in shard names (nullopt: a single process).
  std::optional<int> shard_rank() const {
    return rank_.distributed() ? std::optional<int>(rank_.rank) : std::nullopt;
  }

  const RankInfo rank_;
  Json record_;  // what run.json / run_<rank>.json holds
  std::filesystem::path path_;
  bool remove_ = false;
  std::vector<bool> done_;
  std::uint64_t done_rows_ = 0;
};

}  // namespace mcinfer::sched
