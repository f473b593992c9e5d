#pragma once
// Crash-safe shards. After a replica appends a batch's rows to its shard and fsyncs it, it
// appends one record to the shard's manifest and fsyncs that:
//   <batch> <shard end offset> <crc32 of the batch's shard bytes> <positions...> #<crc32 of the
//   line>
// A record is the proof that a batch is durably in the shard. On resume, the longest prefix of
// valid records whose bytes check out is kept; the shard is truncated to the last one's end (a
// torn tail — a half-written batch — is discarded) and the manifest to its last valid record.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file_writer.h"

namespace mcinfer::sched {

std::filesystem::path manifest_path(const std::filesystem::path& shard);

struct ManifestRecord {
  std::uint64_t batch = 0;
  std::uint64_t end = 0;                 // shard size after this batch
  std::uint32_t crc = 0;                 // of the shard bytes since the previous record's end
  std::vector<std::uint64_t> positions;  // the rows (stream positions) the batch holds
};

std::string format_record(const ManifestRecord& record);

struct RecoveredShard {
  std::vector<ManifestRecord> records;
  std::uint64_t header_end = 0;         // bytes of the header (before the first batch)
  std::uint64_t valid_end = 0;          // shard bytes kept
  std::uint64_t discarded_bytes = 0;    // torn shard tail removed
  std::uint64_t discarded_records = 0;  // manifest lines removed (torn or not matching the shard)
};

// Validates a shard and its manifest, truncating both to their consistent prefix (see above).
// `header` is what the shard must start with. A missing shard or manifest is an empty shard.
RecoveredShard recover_shard(const std::filesystem::path& shard, const std::string& header);

// Appends records and makes them durable.
class ManifestWriter {
 public:
  ManifestWriter() = default;
  explicit ManifestWriter(const std::filesystem::path& path);
  void append(const ManifestRecord& record);  // write + fsync
  void close() { file_.close(); }

 private:
  FileWriter file_;
};

}  // namespace mcinfer::sched
