#pragma once
// Input rows -> validated, tokenised work items. Owns the bad-row policy and the counts the run
// report needs; keeps the ids of all good rows in input order for the final merge.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/rows.h"
#include "sched/chunking.h"
#include "sched/share.h"
#include "sched/work.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::sched {

struct FeedOptions {
  std::filesystem::path input;
  data::InputFormat format = data::InputFormat::kCsv;
  data::ColumnSpec columns;
  bool skip_bad_rows = false;   // --on-bad-row skip
  std::size_t max_len = 512;    // tokens per sequence, special tokens included
  std::int64_t vocab_size = 0;  // for checking pre-tokenised ids
  std::int64_t type_vocab_size = 0;
  bool tokenize = true;  // false: validate and count only (the precision check counts rows)
  // Prepended to every text (to the first of a pair), before the strip below.
  std::string prompt;
  // Strip each text (Python's str.strip) before tokenising, as sentence-transformers before 5.4
  // does (the prompt and the text together: it strips what encode() hands the tokenizer).
  bool strip_text = false;
  // Text rows longer than max_len: truncated, or cut into windows (one work item per window)
  // that share `stride` tokens. Pre-tokenised rows never are: they must fit.
  LongInput long_input = LongInput::kTruncate;
  std::size_t stride = 0;
};

// The text the tokenizer gets for a row's first text: `prompt` + `text`, stripped (Python's
// str.strip) when `strip`; `buffer` holds it when it is not a part of `text`.
std::string_view prepare_text(std::string_view text, const std::string& prompt, bool strip,
                              std::string& buffer);

struct BadRowRecord {
  std::uint64_t line = 0;
  std::string reason;
};

struct FeedStats {
  std::uint64_t rows = 0;          // good rows read
  std::uint64_t bad_rows = 0;      // skipped
  std::uint64_t invalid_utf8 = 0;  // U+FFFD replacements in texts
  std::uint64_t truncated = 0;     // rows cut to max_len (--long-input truncate)
  std::uint64_t lost_tokens = 0;   // tokens those rows lost (special tokens not counted)
  std::uint64_t chunked = 0;       // rows cut into more than one window (--long-input chunk)
  std::uint64_t windows = 0;       // work items returned: rows, or windows of chunked rows
  std::uint64_t tokens = 0;        // tokens of all good rows returned (of every window)
  double read_seconds = 0;         // reading and parsing the input
  double tokenize_seconds = 0;
};

class RowFeeder {
 public:
  // `tokenizer` may be null when every row is pre-tokenised.
  RowFeeder(const FeedOptions& options, const tokenizer::Tokenizer* tokenizer);

  // Rows whose ordinal is in `done` are read and counted (their ids kept) but not returned:
  // they are already in the shards of the run being resumed.
  void skip_done(const std::vector<bool>* done) { done_ = done; }
  // Only the rows `share` says this rank needs are tokenised and returned; the others are read
  // and counted (their ids kept) as done rows are. Before the first next().
  void set_share(RowShare share) { share_ = share; }

  // The next good row (chunked rows: the next of its windows, in order); false at the end. A bad
  // row throws Error "FILE:LINE: reason" unless skip_bad_rows, in which case it is counted,
  // recorded and skipped.
  bool next(WorkItem& item);

  const FeedStats& stats() const { return stats_; }
  const std::vector<BadRowRecord>& bad_rows() const { return bad_rows_; }  // the first 1,000
  // Ids of the good rows so far, in input order.
  std::vector<data::RowId>& ids() { return ids_; }
  // Safe to call from any thread, while another reads.
  std::uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  std::uint64_t file_size() const { return reader_->file_size(); }
  // Rows truncated so far (--long-input truncate). Any thread.
  std::uint64_t truncated_rows() const { return truncated_.load(std::memory_order_relaxed); }
  // Tokens of the rows returned so far (rows skipped as done are not tokenised). Any thread.
  std::uint64_t tokens_read() const { return tokens_read_.load(std::memory_order_relaxed); }
  // Good rows of this rank's share read so far (those skipped as done included). Any thread.
  std::uint64_t rows_read() const { return rows_read_.load(std::memory_order_relaxed); }
  // rows_read() once next() has reached the end of the input; nullopt before. Any thread.
  std::optional<std::uint64_t> rows_in_input() const;

 private:
  // Whether a row is good (pre-tokenised rows: lengths, ids and masks in range; text rows are).
  bool check(const data::Row& row, std::string& reason) const;
  // A good row as a work item, tokenised unless options.tokenize is false; the windows after
  // the first of a chunked row go to windows_.
  void to_item(data::Row& row, WorkItem& item);
  // The tokens of a text row, truncated or in windows, as options.long_input says.
  std::vector<tokenizer::Encoding> encode(std::string_view text,
                                          std::optional<std::string_view> pair);
  void returned(const WorkItem& item);  // counts a work item handed out

  FeedOptions options_;
  const tokenizer::Tokenizer* tokenizer_;
  std::unique_ptr<data::RowReader> reader_;
  data::Row row_;
  std::string prompted_;  // prompt + text, reused
  FeedStats stats_;
  std::vector<BadRowRecord> bad_rows_;
  std::vector<data::RowId> ids_;
  std::vector<WorkItem> windows_;  // the rest of the current chunked row, last window first
  const std::vector<bool>* done_ = nullptr;
  RowShare share_;
  std::atomic<std::uint64_t> bytes_read_{0};
  std::atomic<std::uint64_t> tokens_read_{0};
  std::atomic<std::uint64_t> rows_read_{0};
  std::atomic<std::uint64_t> truncated_{0};
  std::atomic<bool> at_end_{false};
};

}  // namespace mcinfer::sched
