#include "sched/run_record.h"

#include <unistd.h>

#include <algorithm>

#include "core/error.h"
#include "core/file_writer.h"
#include "sched/fingerprint.h"
#include "sched/manifest.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

void write_record(const fs::path& path, const Json& record) {
  AtomicFile file(path);
  file.writer().write(record.dump(2) + "\n");
  file.commit();
}

}  // namespace

fs::path run_record_path(const fs::path& dir, const RankInfo& rank) {
  return dir / (rank.distributed() ? fmt::format("run_{}.json", rank.rank) : "run.json");
}

std::vector<std::pair<int, Json>> rank_records(const fs::path& dir) {
  std::vector<std::pair<int, Json>> records;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 9 || name.rfind("run_", 0) != 0 || !name.ends_with(".json")) continue;
    const std::string number = name.substr(4, name.size() - 9);
    if (number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos) continue;
    records.emplace_back(std::stoi(number), read_json_file(entry.path()));
  }
  if (ec) fail("{}: cannot list the shards directory: {}", dir.string(), ec.message());
  std::sort(records.begin(), records.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return records;
}

ShardsDir::ShardsDir(const RunOptions& o, const Json& fingerprint, const std::string& shard_header,
                     int replicas, const RankInfo& rank, std::vector<std::string>& warnings)
    : options_(o),
      rank_(rank),
      path_(o.shards_dir.value_or(o.output.string() + fmt::format(".shards-{}", ::getpid()))) {
  if (rank.distributed() && !o.shards_dir) {
    fail_usage(
        "{}: a distributed run needs --shards-dir, a directory every rank reaches (a "
        "shared filesystem), where each rank writes its shards and the merge finds them",
        rank.describe());
  }
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) fail("{}: cannot create the shards directory: {}", path_.string(), ec.message());
  remove_ = !o.shards_dir.has_value();
  if (rank.distributed()) {
    if (fs::exists(path_ / "run.json", ec)) {
      fail(
          "{} holds the shards of a single-process run (run.json); a distributed run needs a "
          "directory of its own",
          path_.string());
    }
    check_other_ranks(fingerprint);
  } else if (!rank_records(path_).empty()) {
    fail(
        "{} holds the shards of a distributed run (run_<rank>.json); a single-process run needs "
        "a directory of its own, or give the same --rank/--world to resume a rank",
        path_.string());
  }
  const fs::path record = run_record_path(path_, rank_);
  bool resuming = o.resume;
  if (resuming && !fs::exists(record, ec)) {
    // Killed before the run was recorded: nothing was computed, so start from the beginning.
    if (!shards().empty()) {
      fail("{}: shards without a {}: not the shards directory of an mcinfer run", path_.string(),
           record.filename().string());
    }
    warnings.push_back("nothing to resume in " + path_.string() + ": started from the beginning");
    resuming = false;
  }
  record_ = this->record(fingerprint, replicas, false);
  if (resuming) {
    resume(fingerprint, shard_header, warnings);
    return;
  }
  if (fs::exists(record, ec) || !shards().empty()) {
    fail(
        "{} already holds the shards of {}: add --resume to continue it, or use an empty "
        "directory",
        path_.string(), rank.distributed() ? "rank " + std::to_string(rank.rank) : "a run");
  }
  write_record(record, record_);
}

Json ShardsDir::record(const Json& fingerprint, int replicas, bool complete) const {
  Json record = {
      {"record_format", kRunRecordFormat}, {"fingerprint", fingerprint}, {"replicas", replicas}};
  if (rank_.distributed()) {
    record["rank"] = rank_.rank;
    record["world"] = rank_.world;
    record["launcher"] = rank_.source;
    record["complete"] = complete;
  }
  return record;
}

void ShardsDir::check_other_ranks(const Json& fingerprint) const {
  for (const auto& [k, other] : rank_records(path_)) {
    if (k == rank_.rank) continue;
    if (other.value("record_format", 1) != kRunRecordFormat) {
      fail(
          "{}: rank {}'s record was written by another mcinfer version (record format {}, this "
          "one writes {}); every rank must run the same mcinfer",
          path_.string(), k, other.value("record_format", 1), kRunRecordFormat);
    }
    const auto differences =
        fingerprint_differences(other.value("fingerprint", Json::object()), fingerprint);
    if (differences.empty()) continue;
    std::string list;
    for (const auto& d : differences) list += "\n  - " + d;
    fail(
        "{}: refused: rank {} of this directory's run started with a different world, model, "
        "input or flags than this rank ({}):{}",
        path_.string(), k, rank_.describe(), list);
  }
}

void ShardsDir::mark_complete(const Json& summary) {
  if (!rank_.distributed()) return;
  Json record = record_;
  record["complete"] = true;
  record["computed"] = summary;
  write_record(run_record_path(path_, rank_), record);
}

fs::path ShardsDir::shard_path(int replica, data::LineFormat format) const {
  return path_ / merge::shard_file_name(shard_rank(), replica, format);
}

ShardsDir::~ShardsDir() {
  std::error_code ec;
  if (remove_) fs::remove_all(path_, ec);
}

void ShardsDir::resume(const Json& fingerprint, const std::string& shard_header,
                       std::vector<std::string>& warnings) {
  const Json recorded = read_json_file(run_record_path(path_, rank_));
  const int format = recorded.value("record_format", 1);
  if (format != kRunRecordFormat) {
    fail(
        "cannot resume the run in {}: its run.json has record format {}, written by another "
        "mcinfer version (this one writes format {}); its shards cannot be checked against this "
        "command. Start again with an empty --shards-dir",
        path_.string(), format, kRunRecordFormat);
  }
  const auto differences =
      fingerprint_differences(recorded.value("fingerprint", Json::object()), fingerprint);
  if (!differences.empty()) {
    std::string list;
    for (const auto& d : differences) list += "\n  - " + d;
    fail("cannot resume the run in {}: its results would differ from this command's:{}",
         path_.string(), list);
  }
  // Remains of an output whose writing was interrupted.
  std::error_code ec;
  const std::string prefix = options_.output.filename().string() + ".tmp-";
  const fs::path out_dir =
      options_.output.parent_path().empty() ? fs::path(".") : options_.output.parent_path();
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
  }
  for (const auto& shard : shards()) {
    RecoveredShard recovered = recover_shard(shard, shard_header);
    if (recovered.discarded_bytes || recovered.discarded_records) {
      warnings.push_back(fmt::format("{}: discarded a torn tail of {} bytes ({} manifest records)",
                                     shard.filename().string(), recovered.discarded_bytes,
                                     recovered.discarded_records));
    }
    for (const auto& r : recovered.records) {
      for (std::uint64_t p : r.positions) {
        if (p >= done_.size()) done_.resize(p + 1, false);
        if (!done_[p]) ++done_rows_;
        done_[p] = true;
      }
    }
  }
}

std::vector<fs::path> ShardsDir::shards() const {
  std::vector<fs::path> own;
  const std::optional<int> rank = shard_rank();
  for (auto& shard : merge::list_shards(path_)) {
    const bool mine =
        rank ? shard.rank == static_cast<std::uint64_t>(*rank) : !shard.rank.has_value();
    if (mine) own.push_back(std::move(shard.path));
  }
  return own;
}

bool ShardsDir::resumable() const {
  for (const auto& shard : shards()) {
    std::error_code e;
    if (fs::file_size(manifest_path(shard), e) > 0) return true;
  }
  return false;
}

std::string ShardsDir::resume_hint() const {
  std::string cmd;
  for (const auto& a : options_.command_line) cmd += (cmd.empty() ? "" : " ") + a;
  if (options_.shards_dir)
    return fmt::format("rerun the same command with --resume:\n  {}{}", cmd,
                       options_.resume ? "" : " --resume");
  return fmt::format(
      "rerun the same command with --shards-dir {} --resume:\n  {} --shards-dir {} --resume",
      path_.string(), cmd, path_.string());
}

}  // namespace mcinfer::sched
