#pragma once
// The names of a run's shard files, written by the run pipeline and read by `mcinfer merge`:
// shard_<N>.<ext> for replica N of a single-process run, shard_<RANK>_<N>.<ext> for replica N
// of rank RANK of a distributed one (so that ranks on different hosts sharing one directory
// never collide). Each shard's manifest is the same name with ".manifest" appended.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data/rows.h"

namespace mcinfer::merge {

struct ShardFile {
  std::optional<std::uint64_t> rank;  // nullopt: a single-process run's shard
  std::uint64_t replica = 0;
  std::filesystem::path path;
};

// "shard_3.csv" or "shard_1_3.jsonl".
std::string shard_file_name(std::optional<int> rank, int replica, data::LineFormat format);

// Every shard file of `dir`, single-process ones first, then by rank and replica; other files
// (temporary ones such as shard_3.csv.tmp-123, manifests, records) are not shards. Throws Error
// when the directory cannot be listed.
std::vector<ShardFile> list_shards(const std::filesystem::path& dir);

}  // namespace mcinfer::merge
