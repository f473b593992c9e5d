#pragma once
// A replica's shard: an append-only file of (id, prediction) rows in its line format
// (data::shard_format: the output's lines, CSV for Parquet; a sparse run's rows are sparse JSONL
// rows of each row's nonzeros, written from the batch's dense values), plus its manifest (see
// manifest.h). A batch is durable once write_batch() returns.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/file_writer.h"
#include "data/predictions.h"
#include "sched/manifest.h"
#include "sched/work.h"

namespace mcinfer::sched {

class ShardWriter {
 public:
  // Appends to the shard at `path` (after recover_shard() on resume); writes the header to an
  // empty one.
  ShardWriter(std::filesystem::path path, data::LineFormat format,
              const data::PredictionSchema& schema);

  // Appends one row per item (values holds [items, dim] in item order), makes the rows durable,
  // then records the batch in the manifest.
  void write_batch(const Batch& batch, std::span<const float> values, std::int64_t dim);
  void close();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  data::LineFormat format_;
  const data::PredictionSchema& schema_;
  FileWriter file_;
  ManifestWriter manifest_;
  std::string buffer_;
};

}  // namespace mcinfer::sched
