#include "sched/manifest.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/crc32.h"
#include "support/paths.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

const std::string kHeader = "id,a,b\n";

// Writes a shard with `batches` batches the way ShardWriter does, returning the bytes per batch.
std::vector<std::string> write_shard(const fs::path& shard, int batches) {
  std::vector<std::string> parts;
  std::ofstream out(shard, std::ios::binary);
  out << kHeader;
  std::uint64_t end = kHeader.size();
  ManifestWriter manifest(manifest_path(shard));
  for (int b = 0; b < batches; ++b) {
    std::string bytes;
    ManifestRecord record;
    record.batch = static_cast<std::uint64_t>(b);
    for (int i = 0; i < 3; ++i) {
      bytes += "r" + std::to_string(b * 3 + i) + ",0.5,1.5\n";
      record.positions.push_back(static_cast<std::uint64_t>(b * 3 + i));
    }
    out << bytes;
    out.flush();
    end += bytes.size();
    record.end = end;
    record.crc = crc32(bytes);
    manifest.append(record);
    parts.push_back(bytes);
  }
  return parts;
}

TEST(Manifest, IntactShardIsKeptWhole) {
  auto dir = testing::scratch_dir("manifest_intact");
  auto shard = dir / "shard_0.csv";
  write_shard(shard, 4);
  auto size = fs::file_size(shard);
  RecoveredShard r = recover_shard(shard, kHeader);
  EXPECT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.valid_end, size);
  EXPECT_EQ(r.discarded_bytes, 0u);
  EXPECT_EQ(r.records[3].positions, (std::vector<std::uint64_t>{9, 10, 11}));
}

TEST(Manifest, TornShardTailIsDiscarded) {
  auto dir = testing::scratch_dir("manifest_torn_shard");
  auto shard = dir / "shard_0.csv";
  write_shard(shard, 2);
  auto good = fs::file_size(shard);
  std::ofstream(shard, std::ios::app) << "r6,0.5,1.";  // a batch cut short, never recorded
  RecoveredShard r = recover_shard(shard, kHeader);
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.discarded_bytes, 9u);
  EXPECT_EQ(fs::file_size(shard), good);
}

TEST(Manifest, TornOrCorruptRecordsAreDropped) {
  auto dir = testing::scratch_dir("manifest_torn_record");
  auto shard = dir / "shard_0.csv";
  auto parts = write_shard(shard, 3);
  // Cut the last manifest line in half: its batch's bytes go too.
  auto manifest = manifest_path(shard);
  auto msize = fs::file_size(manifest);
  fs::resize_file(manifest, msize - 10);
  RecoveredShard r = recover_shard(shard, kHeader);
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.discarded_records, 1u);
  EXPECT_EQ(fs::file_size(shard), kHeader.size() + parts[0].size() + parts[1].size());
  // A record whose bytes no longer match the shard (corruption) ends the valid prefix.
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(kHeader.size() + parts[0].size() + 1));
  f.put('X');
  f.close();
  r = recover_shard(shard, kHeader);
  EXPECT_EQ(r.records.size(), 1u);
  EXPECT_EQ(fs::file_size(shard), kHeader.size() + parts[0].size());
}

TEST(Manifest, DamagedHeaderStartsOver) {
  auto dir = testing::scratch_dir("manifest_header");
  auto shard = dir / "shard_0.csv";
  std::ofstream(shard) << "id,a";  // killed while writing the header
  RecoveredShard r = recover_shard(shard, kHeader);
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(fs::file_size(shard), 0u);
}

TEST(Manifest, RecordLinesCarryTheirOwnChecksum) {
  ManifestRecord rec{7, 1234, 0xdeadbeef, {1, 2, 3}};
  std::string line = format_record(rec);
  EXPECT_EQ(line.rfind("7 1234 deadbeef 1 2 3 #", 0), 0u) << line;
  EXPECT_EQ(line.back(), '\n');
}

}  // namespace
}  // namespace mcinfer::sched
