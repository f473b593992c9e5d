// mcinfer merge: combine prediction shards, runs or models into one checked table.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "merge/merge.h"
#include "sched/finish.h"

namespace mcinfer::cli {
namespace {

struct MergeFlags {
  std::vector<std::string> files;
  std::string shards_dir;
  std::string output;
  std::string reduce = "mean";
  std::vector<double> weights;
  std::string expect;
  std::string id_col = "id";
  std::string format;
  std::string on_bad_row = "error";
  bool allow_missing = false;
  std::string order;
};

merge::Reduce parse_reduce(const std::string& s) {
  if (s == "mean") return merge::Reduce::kMean;
  if (s == "median") return merge::Reduce::kMedian;
  if (s == "max") return merge::Reduce::kMax;
  if (s == "min") return merge::Reduce::kMin;
  if (s == "first") return merge::Reduce::kFirst;
  fail_usage("--reduce: expected mean, median, max, min or first, got '{}'", s);
}

merge::Order parse_order(const std::string& s) {
  if (s == "input") return merge::Order::kInput;
  if (s == "id") return merge::Order::kId;
  if (s == "first-seen") return merge::Order::kFirstSeen;
  fail_usage("--order: expected input, id or first-seen, got '{}'", s);
}

void print_ids(const char* what, std::uint64_t count, const std::vector<std::string>& first) {
  if (count == 0) return;
  fmt::print(stderr, "mcinfer: {} {} ids{}: {}\n", count, what,
             count > first.size() ? fmt::format(" (first {})", first.size()) : "",
             fmt::join(first, ", "));
}

// The final step of a distributed run without MPI (job arrays, Indexed Jobs, --rank/--world):
// every rank's shards, checked against every rank's record and the input.
int run_distributed_merge(const MergeFlags& f) {
  if (f.expect.empty()) fail_usage("--shards-dir needs --expect INPUT: the input the ranks ran on");
  if (!f.files.empty() || !f.weights.empty() || f.reduce != "mean" || !f.order.empty()) {
    fail_usage(
        "--shards-dir merges a distributed run as the run itself would: no FILE "
        "arguments, --weights, --reduce or --order");
  }
  if (f.id_col != "id" || !f.format.empty() || f.on_bad_row != "error") {
    fail_usage(
        "--shards-dir: the ranks' records say how the input is read (its format, id "
        "column and bad-row policy); no --id-col, --format or --on-bad-row");
  }
  sched::DistributedMerge options{.shards_dir = f.shards_dir,
                                  .expect = f.expect,
                                  .output = f.output,
                                  .allow_missing = f.allow_missing};
  std::vector<std::string> notes;
  merge::Report report;
  try {
    report = sched::merge_distributed(options, notes);
  } catch (const merge::MissingIdsError& e) {
    fmt::print(stderr, "mcinfer: error: {}\n", e.what());
    return kExitMissingIds;
  }
  for (const auto& w : report.warnings) fmt::print(stderr, "mcinfer: warning: {}\n", w);
  for (const auto& n : notes) fmt::print(stderr, "mcinfer: warning: {}\n", n);
  print_ids("missing", report.missing, report.first_missing);
  fmt::print(stderr, "mcinfer: {}\n", merge::summary_line(report, f.output, true));
  return kExitOk;
}

int run_merge(const MergeFlags& f) {
  if (!f.shards_dir.empty()) return run_distributed_merge(f);
  if (f.files.empty()) fail_usage("merge needs files to merge (FILE arguments) or --shards-dir");
  // A directory stands for its shards; its weight applies to each of them.
  if (!f.weights.empty() && f.weights.size() != f.files.size()) {
    fail_usage("--weights: {} weights for {} FILE arguments", f.weights.size(), f.files.size());
  }
  std::vector<std::filesystem::path> inputs;
  merge::Options options;
  for (std::size_t i = 0; i < f.files.size(); ++i) {
    std::filesystem::path p = f.files[i];
    std::vector<std::filesystem::path> expanded;
    if (std::filesystem::is_directory(p)) {
      expanded = merge::shard_files(p);
    } else {
      expanded.push_back(p);
    }
    for (auto& e : expanded) {
      inputs.push_back(std::move(e));
      if (!f.weights.empty()) options.weights.push_back(f.weights[i]);
    }
  }
  options.reduce = parse_reduce(f.reduce);
  if (!f.expect.empty()) {
    merge::ExpectInput e;
    e.path = f.expect;
    e.format = data::resolve_input_format(
        e.path, f.format.empty() ? std::nullopt : std::optional<std::string>(f.format));
    e.columns = merge::ExpectInput::ids_only(f.id_col);
    if (f.on_bad_row != "error" && f.on_bad_row != "skip") {
      fail_usage("--on-bad-row: expected error or skip, got '{}'", f.on_bad_row);
    }
    e.skip_bad_rows = f.on_bad_row == "skip";
    options.expect_input = std::move(e);
    options.order = merge::Order::kInput;
  }
  if (!f.order.empty()) options.order = parse_order(f.order);
  options.allow_missing = f.allow_missing;

  std::filesystem::path output = f.output;
  merge::Report report;
  try {
    report = merge::merge_files(inputs, output, options);
  } catch (const merge::MissingIdsError& e) {
    const merge::Report& r = e.report();
    for (const auto& w : r.warnings) fmt::print(stderr, "mcinfer: warning: {}\n", w);
    print_ids("missing", r.missing, r.first_missing);
    print_ids("unexpected", r.unexpected, r.first_unexpected);
    fmt::print(stderr, "mcinfer: {}\n", merge::summary_line(r, output, false));
    fmt::print(stderr,
               "mcinfer: error: {} expected ids have no prediction; nothing written "
               "(--allow-missing writes what there is)\n",
               r.missing);
    return kExitMissingIds;
  }
  for (const auto& w : report.warnings) fmt::print(stderr, "mcinfer: warning: {}\n", w);
  if (report.expected_bad_rows > 0) {
    fmt::print(stderr, "mcinfer: warning: {} bad rows of {} skipped (not expected)\n",
               report.expected_bad_rows, f.expect);
  }
  print_ids("missing", report.missing, report.first_missing);
  print_ids("unexpected", report.unexpected, report.first_unexpected);
  fmt::print(stderr, "mcinfer: {}\n", merge::summary_line(report, output, true));
  return kExitOk;
}

}  // namespace

Action add_merge_command(CLI::App& app, const Invocation& invocation) {
  auto flags = std::make_shared<MergeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Combine prediction shards, runs or models: rows sharing an id are reduced to one, with "
      "proof that nothing is missing (--expect)");
  cmd->add_option(
      "files", flags->files,
      "Prediction tables (CSV, JSONL or Parquet); a directory stands for its shard_<N> files");
  cmd->add_option("--shards-dir", flags->shards_dir,
                  "The shards directory of a distributed run: every rank's shards, once every "
                  "rank's record says it finished (needs --expect)");
  cmd->add_option("-o,--output", flags->output,
                  "Merged table (.csv, .jsonl or .parquet), written atomically")
      ->required();
  cmd->add_option("--reduce", flags->reduce,
                  "How rows sharing an id combine: mean|median|max|min|first")
      ->capture_default_str();
  cmd->add_option("--weights", flags->weights,
                  "One weight per FILE argument for a weighted mean (need not sum to 1)")
      ->delimiter(',');
  auto* expect = cmd->add_option(
      "--expect", flags->expect,
      "The original input: report its ids with no prediction (exit 3) and ids not in it");
  cmd->add_option("--id-col", flags->id_col, "Id column of --expect (absent: row numbers)")
      ->capture_default_str()
      ->needs(expect);
  cmd->add_option("--format", flags->format,
                  "Format of --expect: csv|jsonl|parquet (default: extension)")
      ->needs(expect);
  cmd->add_option("--on-bad-row", flags->on_bad_row,
                  "A malformed row of --expect: error (stop) or skip (not expected)")
      ->capture_default_str()
      ->needs(expect);
  cmd->add_flag("--allow-missing", flags->allow_missing,
                "Write the merge even when expected ids are missing (still reported)")
      ->needs(expect);
  cmd->add_option("--order", flags->order,
                  "Output order: input (default with --expect), first-seen (default without), id");
  return [flags] { return run_merge(*flags); };
}

}  // namespace mcinfer::cli
