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

std::vector<fs::path> shard_files(const fs::path& dir) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (name.rfind("shard_", 0) != 0 || (ext != ".csv" && ext != ".jsonl")) continue;
    const std::string number = name.substr(6, name.size() - 6 - ext.size());
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos ||
        number.size() > 9)
      continue;
    found.emplace_back(std::stol(number), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace

ShardsDir::ShardsDir(const RunOptions& o, const Json& fingerprint, const std::string& shard_header,
                     int replicas, std::vector<std::string>& warnings)
    : options_(o),
      path_(o.shards_dir.value_or(o.output.string() + fmt::format(".shards-{}", ::getpid()))) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  if (ec) fail("{}: cannot create the shards directory: {}", path_.string(), ec.message());
  remove_ = !o.shards_dir.has_value();
  const fs::path record = path_ / "run.json";
  bool resuming = o.resume;
  if (resuming && !fs::exists(record, ec)) {
    // Killed before the run was recorded: nothing was computed, so start from the beginning.
    if (!shards().empty()) {
      fail("{}: shards without a run.json: not the shards directory of an mcinfer run",
           path_.string());
    }
    warnings.push_back("nothing to resume in " + path_.string() + ": started from the beginning");
    resuming = false;
  }
  if (resuming) {
    resume(fingerprint, shard_header, warnings);
    return;
  }
  if (fs::exists(record, ec) || !shards().empty()) {
    fail(
        "{} already holds the shards of a run: add --resume to continue it, or use an empty "
        "directory",
        path_.string());
  }
  AtomicFile file(record);
  file.writer().write(Json({{"record_format", kRunRecordFormat},
                            {"fingerprint", fingerprint},
                            {"replicas", replicas}})
                          .dump(2) +
                      "\n");
  file.commit();
}

ShardsDir::~ShardsDir() {
  std::error_code ec;
  if (remove_) fs::remove_all(path_, ec);
}

void ShardsDir::resume(const Json& fingerprint, const std::string& shard_header,
                       std::vector<std::string>& warnings) {
  const Json recorded = read_json_file(path_ / "run.json");
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

std::vector<fs::path> ShardsDir::shards() const { return shard_files(path_); }

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
