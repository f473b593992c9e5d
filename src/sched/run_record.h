#pragma once
// The shards directory of a run and what makes it resumable: run.json records a fingerprint of
// everything the results depend on (model files, input, every result-changing flag, by name) and
// the record's format; --resume refuses a directory whose record differs, recovers each shard's
// longest valid prefix and says which input positions are already durable.
//
// Threading: used by the thread that runs the job only.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "sched/run.h"

namespace mcinfer::sched {

// The format of run.json this build writes and resumes. 2: precision, backend and every enum
// recorded by name. A record without it (or with another) is refused on --resume.
inline constexpr int kRunRecordFormat = 2;

class ShardsDir {
 public:
  // --shards-dir, or a private directory beside the output (same filesystem, removed at the end
  // unless keep() is called). With --resume: checks the record against `fingerprint` and
  // recovers the shards; otherwise writes the record into an empty directory. Notes (a torn
  // tail cut off, nothing to resume) go to `warnings`.
  ShardsDir(const RunOptions& options, const Json& fingerprint, const std::string& shard_header,
            int replicas, std::vector<std::string>& warnings);
  ~ShardsDir();
  ShardsDir(const ShardsDir&) = delete;
  ShardsDir& operator=(const ShardsDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Input positions already durable in the shards (empty for a fresh run), and how many.
  const std::vector<bool>& done() const { return done_; }
  std::uint64_t done_rows() const { return done_rows_; }

  // shard_<N>.csv / shard_<N>.jsonl files, by N.
  std::vector<std::filesystem::path> shards() const;
  // Whether any batch is durable, so that --resume is worth suggesting.
  bool resumable() const;
  // "rerun the same command with --resume: ..." with the exact command.
  std::string resume_hint() const;
  // Keeps the directory after a failure or a stop.
  void keep() { remove_ = false; }

 private:
  void resume(const Json& fingerprint, const std::string& shard_header,
              std::vector<std::string>& warnings);

  const RunOptions& options_;
  std::filesystem::path path_;
  bool remove_ = false;
  std::vector<bool> done_;
  std::uint64_t done_rows_ = 0;
};

}  // namespace mcinfer::sched
