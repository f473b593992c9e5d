#include "sched/row_feeder.h"

#include <chrono>

#include "core/error.h"
#include "core/json.h"
#include "model/model_dir.h"

namespace mcinfer::sched {

std::string_view prepare_text(std::string_view text, const std::string& prompt, bool strip,
                              std::string& buffer) {
  if (!prompt.empty()) {
    buffer.assign(prompt);
    buffer += text;
    text = buffer;
  }
  return strip ? model::strip_python_whitespace(text) : text;
}

void Batch::add(WorkItem item) {
  const auto length = static_cast<std::int64_t>(item.ids.size());
  real_tokens += length;
  const std::int64_t longest =
      items.empty() ? 0 : padded_tokens / static_cast<std::int64_t>(items.size());
  items.push_back(std::move(item));
  padded_tokens = static_cast<std::int64_t>(items.size()) * std::max(longest, length);
}

RowFeeder::RowFeeder(const FeedOptions& options, const tokenizer::Tokenizer* tokenizer)
    : options_(options), tokenizer_(tokenizer) {
  reader_ = data::RowReader::open(options_.input, options_.format, options_.columns);
}

bool RowFeeder::check(const data::Row& row, std::string& reason) const {
  if (!row.pretokenized) return true;
  const std::size_t n = row.input_ids.size();
  if (n == 0) {
    reason = "input_ids is empty";
    return false;
  }
  if (n > options_.max_len) {
    reason = fmt::format("input_ids has {} tokens; --max-len is {}", n, options_.max_len);
    return false;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (row.input_ids[i] < 0 || row.input_ids[i] >= options_.vocab_size) {
      reason = fmt::format("input_ids[{}] = {} is outside the vocabulary [0, {})", i,
                           row.input_ids[i], options_.vocab_size);
      return false;
    }
  }
  const std::int64_t types = std::max<std::int64_t>(options_.type_vocab_size, 1);
  for (std::size_t i = 0; i < row.token_type_ids.size(); ++i) {
    if (row.token_type_ids[i] < 0 || row.token_type_ids[i] >= types) {
      reason = fmt::format("token_type_ids[{}] = {} is outside [0, {})", i, row.token_type_ids[i],
                           types);
      return false;
    }
  }
  bool any = row.attention_mask.empty();
  for (std::size_t i = 0; i < row.attention_mask.size(); ++i) {
    if (row.attention_mask[i] != 0 && row.attention_mask[i] != 1) {
      reason = fmt::format("attention_mask[{}] = {} is not 0 or 1", i, row.attention_mask[i]);
      return false;
    }
    any |= row.attention_mask[i] == 1;
  }
  if (!any) {
    reason = "attention_mask masks every token";
    return false;
  }
  return true;
}

void RowFeeder::to_item(data::Row& row, WorkItem& item) {
  item.id = std::move(row.id);
  item.window = 0;
  item.windows = 1;
  item.ids.clear();
  item.type_ids.clear();
  item.mask.clear();
  if (row.pretokenized) {
    // The prompt is text: it cannot be put before ids, and the pooling would leave out tokens
    // that are not the prompt's.
    if (!options_.prompt.empty()) {
      fail(
          "{}:{}: the row carries input_ids, but a prompt is in force ({}); give the text, or "
          "--prompt \"\" for none",
          options_.input.string(), row.line, Json(options_.prompt).dump());
    }
    item.ids = std::move(row.input_ids);
    item.type_ids = std::move(row.token_type_ids);
    item.mask = std::move(row.attention_mask);
    return;
  }
  if (!options_.tokenize) return;
  if (tokenizer_ == nullptr) {
    fail("{}: the model directory has no tokenizer files, so rows must carry input_ids (JSONL)",
         options_.input.string());
  }
  const std::string_view text =
      prepare_text(row.text, options_.prompt, options_.strip_text, prompted_);
  std::optional<std::string_view> pair;
  if (row.text_pair) pair = *row.text_pair;
  if (pair && options_.strip_text) pair = model::strip_python_whitespace(*pair);
  std::vector<tokenizer::Encoding> windows = encode(text, pair);
  const auto count = static_cast<std::uint32_t>(windows.size());
  if (count > 1) ++stats_.chunked;
  // Handed out first to last: kept last first, so that each is popped off the end.
  for (std::uint32_t w = count; w-- > 1;) {
    WorkItem& next = windows_.emplace_back();
    next.id = item.id;
    next.window = w;
    next.windows = count;
    next.ids = std::move(windows[w].ids);
    next.type_ids = std::move(windows[w].type_ids);
  }
  item.windows = count;
  item.ids = std::move(windows[0].ids);
  item.type_ids = std::move(windows[0].type_ids);
}

std::vector<tokenizer::Encoding> RowFeeder::encode(std::string_view text,
                                                   std::optional<std::string_view> pair) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<tokenizer::Encoding> out;
  if (options_.long_input == LongInput::kChunk) {
    // A pair whose first text leaves the second no room comes back truncated: counted so.
    out = tokenizer_->encode_windows(text, pair, options_.max_len, options_.stride);
  } else {
    out.push_back(tokenizer_->encode(text, pair, options_.max_len));
  }
  if (out[0].truncated) {
    // The tokenizer stops a budget's worth past the cut; what was lost needs the whole text.
    const std::size_t whole = tokenizer_->encode(text, pair, 0).ids.size();
    stats_.lost_tokens += whole - std::min(whole, out[0].ids.size());
    ++stats_.truncated;
    truncated_.store(stats_.truncated, std::memory_order_relaxed);
  }
  stats_.tokenize_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats_.invalid_utf8 += out[0].invalid_utf8;
  return out;
}

void RowFeeder::returned(const WorkItem& item) {
  ++stats_.windows;
  stats_.tokens += item.ids.size();
  tokens_read_.store(stats_.tokens, std::memory_order_relaxed);
}

std::optional<std::uint64_t> RowFeeder::rows_in_input() const {
  if (!at_end_.load(std::memory_order_acquire)) return std::nullopt;
  return rows_read_.load(std::memory_order_relaxed);
}

bool RowFeeder::next(WorkItem& item) {
  if (!windows_.empty()) {
    item = std::move(windows_.back());
    windows_.pop_back();
    returned(item);
    return true;
  }
  data::BadRow bad;
  while (true) {
    const auto t0 = std::chrono::steady_clock::now();
    auto result = reader_->next(row_, bad);
    stats_.read_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bytes_read_.store(reader_->bytes_read(), std::memory_order_relaxed);
    if (result == data::RowReader::Result::kEnd) {
      at_end_.store(true, std::memory_order_release);
      return false;
    }
    std::string reason;
    std::uint64_t line = 0;
    if (result == data::RowReader::Result::kRow) {
      line = row_.line;
      if (check(row_, reason)) {
        const std::uint64_t ordinal = stats_.rows++;
        const bool mine = share_.owner_of_next(ordinal, row_weight(row_)) == share_.rank();
        if (mine) rows_read_.fetch_add(1, std::memory_order_relaxed);
        const bool needed = mine || share_.needs_unowned(ordinal);
        const bool done = done_ != nullptr && ordinal < done_->size() && (*done_)[ordinal];
        if (!needed || done) {
          // Another rank's row, or already computed: keep the id for the merge, skip the
          // tokenizer. A pre-tokenised row was still validated, so that a row that was bad then
          // is bad now.
          ids_.push_back(row_.id);
          continue;
        }
        to_item(row_, item);
        item.ordinal = ordinal;
        item.position = ordinal;
        for (WorkItem& w : windows_) {
          w.ordinal = ordinal;
          w.position = ordinal;
        }
        returned(item);
        ids_.push_back(item.id);
        return true;
      }
    } else {
      line = bad.line;
      reason = bad.reason;
    }
    if (!options_.skip_bad_rows) {
      fail("{}:{}: {} (use --on-bad-row skip to skip such rows)", options_.input.string(), line,
           reason);
    }
    ++stats_.bad_rows;
    if (bad_rows_.size() < 1000) bad_rows_.push_back({line, reason});
  }
}

}  // namespace mcinfer::sched
