#include "sched/finish.h"

#include <fmt/ranges.h>

#include <map>
#include <set>

#include "core/error.h"
#include "data/rows.h"
#include "sched/fingerprint.h"
#include "sched/run_record.h"
#include "sched/share.h"

namespace mcinfer::sched {
namespace {

namespace fs = std::filesystem;

// The input's format, as the ranks read it.
data::InputFormat input_format(const DistributedRun& run) {
  return data::kInputFormatNames.parse(run.flags.value("input_format", "csv"))
      .value_or(data::InputFormat::kCsv);
}

// The rank that owned each of `ids` (the first missing ones), from the input split as the ranks
// split it.
std::map<std::string, int> owners_of(const DistributedRun& run, const fs::path& input,
                                     const std::vector<std::string>& ids) {
  const Json& flags = run.flags;
  data::ColumnSpec columns;
  columns.id_col = flags.value("id_col", "id");
  columns.text_col = flags.value("text_col", "text");
  if (const std::string pair = flags.value("text_pair_col", ""); !pair.empty())
    columns.text_pair_col = pair;
  auto reader = data::RowReader::open(input, input_format(run), columns);
  RowShare share = flags.value("schedule", "dynamic") == "static"
                       ? RowShare::static_sampler(0, run.world, flags.value("replicas", 1))
                       : RowShare::dynamic_blocks(0, run.world, reader->file_size());
  const std::set<std::string> wanted(ids.begin(), ids.end());
  std::map<std::string, int> owners;
  data::Row row;
  data::BadRow bad;
  std::uint64_t ordinal = 0;
  while (owners.size() < wanted.size()) {
    const auto result = reader->next(row, bad);
    if (result == data::RowReader::Result::kEnd) break;
    if (result != data::RowReader::Result::kRow) continue;  // bad rows are no rank's
    const int owner = share.owner_of_next(ordinal++, row_weight(row));
    if (wanted.count(row.id.text)) owners.emplace(row.id.text, owner);
  }
  return owners;
}

std::string rank_list(const std::vector<int>& ranks) {
  return fmt::format("{}", fmt::join(ranks, ", "));
}

}  // namespace

DistributedRun read_distributed_run(const fs::path& dir) {
  const auto records = rank_records(dir);
  if (records.empty()) {
    fail("{}: no run_<rank>.json: not the shards directory of a distributed mcinfer run",
         dir.string());
  }
  DistributedRun run;
  const Json& first = records.front().second;
  run.world = first.value("world", 0);
  run.fingerprint = first.value("fingerprint", Json::object());
  run.flags = run.fingerprint.value("flags", Json::object());
  if (run.world < 1) fail("{}: rank {}'s record has no world", dir.string(), records.front().first);
  std::set<int> seen;
  for (const auto& [k, record] : records) {
    const auto differences =
        fingerprint_differences(run.fingerprint, record.value("fingerprint", Json::object()));
    if (k >= run.world || record.value("world", 0) != run.world || !differences.empty()) {
      std::string list;
      for (const auto& d : differences) list += "\n  - " + d;
      fail("{}: rank {}'s record describes another run than rank {}'s (world {} vs {}){}",
           dir.string(), k, records.front().first, record.value("world", 0), run.world, list);
    }
    seen.insert(k);
    (record.value("complete", false) ? run.complete : run.incomplete).push_back(k);
  }
  for (int k = 0; k < run.world; ++k)
    if (!seen.count(k)) run.absent.push_back(k);
  return run;
}

merge::Report merge_distributed(const DistributedMerge& o, std::vector<std::string>& notes) {
  const DistributedRun run = read_distributed_run(o.shards_dir);
  if (input_fingerprint(o.expect) != run.fingerprint.value("input", Json())) {
    fail(
        "--expect {}: not the input the ranks ran on (its size or checksum differs from the "
        "ranks' records in {})",
        o.expect.string(), o.shards_dir.string());
  }
  std::string unfinished;
  if (!run.incomplete.empty())
    unfinished += fmt::format("; rank(s) {} did not finish", rank_list(run.incomplete));
  if (!run.absent.empty())
    unfinished += fmt::format("; rank(s) {} never started (no record)", rank_list(run.absent));
  if (!unfinished.empty()) {
    const std::string what =
        fmt::format("{} of {} ranks complete{}", run.complete.size(), run.world, unfinished);
    if (!o.allow_missing) {
      throw merge::MissingIdsError(
          fmt::format("{}: {}; nothing written at {}. Rerun each unfinished rank with the same "
                      "command and --resume, or pass --allow-missing to merge what is there",
                      o.shards_dir.string(), what, o.output.string()),
          {});
    }
    notes.push_back(what + " (--allow-missing)");
  }
  merge::Options mo;
  mo.order = merge::Order::kInput;
  merge::ExpectInput expect;
  expect.path = o.expect;
  expect.format = input_format(run);
  expect.columns = merge::ExpectInput::ids_only(run.flags.value("id_col", "id"));
  expect.skip_bad_rows = run.flags.value("on_bad_row", "error") == "skip";
  mo.expect_input = expect;
  mo.allow_missing = o.allow_missing;
  try {
    merge::Report report = merge::merge_files(merge::shard_files(o.shards_dir), o.output, mo);
    if (report.missing > 0) {
      notes.push_back(
          fmt::format("{} input ids have no prediction (--allow-missing)", report.missing));
    }
    return report;
  } catch (const merge::MissingIdsError& e) {
    const merge::Report& r = e.report();
    const auto owners = owners_of(run, o.expect, r.first_missing);
    std::vector<std::string> named;
    for (const auto& id : r.first_missing) {
      auto it = owners.find(id);
      named.push_back(it == owners.end() ? id : fmt::format("{} (rank {})", id, it->second));
    }
    throw merge::MissingIdsError(
        fmt::format("{}: {} input ids have no prediction{}: {}; nothing written at {}. Rerun the "
                    "ranks named with the same command and --resume",
                    o.shards_dir.string(), r.missing,
                    r.missing > named.size() ? fmt::format(" (first {})", named.size()) : "",
                    fmt::join(named, ", "), o.output.string()),
        r);
  }
}

}  // namespace mcinfer::sched
