#include "tokenizer/pipeline.h"

#include <limits>

#include "core/error.h"
#include "core/utf8.h"

namespace mcinfer::tokenizer {
namespace {

// Offsets inside the pipeline are 32-bit.
void check_text_size(std::string_view text, std::optional<std::string_view> pair) {
  constexpr std::size_t kMaxText = std::size_t{1} << 31;
  if (text.size() >= kMaxText || (pair && pair->size() >= kMaxText)) {
    fail("text of {} bytes is longer than the {} bytes a tokenizer accepts",
         std::max(text.size(), pair ? pair->size() : 0), kMaxText - 1);
  }
}

}  // namespace

Pipeline::Pipeline(PipelineParts parts)
    : kind_(std::move(parts.kind)),
      normalizer_(std::move(parts.normalizer)),
      pre_tokenizer_(std::move(parts.pre_tokenizer)),
      model_(std::move(parts.model)),
      post_(std::move(parts.post)),
      padding_side_(parts.padding_side),
      model_max_length_(parts.model_max_length),
      normalized_token_names_(parts.normalized_token_names) {
  added_.add_tokens(parts.added_tokens, *model_, normalizer_.get());
  map_bytes_ =
      pre_tokenizer_ != nullptr && pre_tokenizer_->byte_level() && !model_->takes_raw_bytes();
  pad_id_ = 0;
  if (parts.pad_token) {
    std::int32_t id = token_to_id(*parts.pad_token);
    if (id >= 0) pad_id_ = id;
  }
}

std::int32_t Pipeline::token_to_id(std::string_view token) const {
  std::int32_t id = added_.find(token);
  return id >= 0 ? id : model_->token_to_id(token);
}

void Pipeline::tokenize_words(std::string_view piece, bool at_origin, std::size_t limit,
                              std::vector<std::int32_t>& ids) const {
  if (pre_tokenizer_ == nullptr) {
    model_->tokenize(piece, ids, limit);
    return;
  }
  Words words;
  pre_tokenizer_->split(piece, at_origin, words);
  std::string mapped;
  for (std::size_t w = 0; w < words.spans.size() && ids.size() < limit; ++w) {
    std::string_view word = words.word(w);
    if (map_bytes_) {
      mapped.clear();
      for (unsigned char b : word) utf8::append_code_point(byte_level_char(b), mapped);
      word = mapped;
    }
    model_->tokenize(word, ids, limit);
  }
}

void Pipeline::encode_sequence(std::string_view text, std::size_t limit,
                               std::vector<std::int32_t>& ids) const {
  std::vector<Piece> raw;
  if (added_.has_raw()) {
    added_.split(text, false, raw);
  } else if (!text.empty()) {
    raw.push_back({0, text.size(), -1});
  }
  std::string normalized;
  std::vector<Piece> sub;
  for (const Piece& p : raw) {
    if (ids.size() >= limit) break;
    if (p.id >= 0) {
      ids.push_back(p.id);
      continue;
    }
    std::string_view segment = text.substr(p.start, p.end - p.start);
    if (segment.empty()) continue;
    if (normalizer_ != nullptr) {
      normalizer_->normalize(segment, normalized);
      segment = normalized;
    }
    if (segment.empty()) continue;
    if (!added_.has_normalized()) {
      tokenize_words(segment, p.start == 0, limit, ids);
      continue;
    }
    sub.clear();
    added_.split(segment, true, sub);
    for (const Piece& q : sub) {
      if (ids.size() >= limit) break;
      if (q.id >= 0) {
        ids.push_back(q.id);
      } else if (q.end > q.start) {
        tokenize_words(segment.substr(q.start, q.end - q.start), p.start == 0 && q.start == 0,
                       limit, ids);
      }
    }
  }
  if (ids.size() > limit) ids.resize(limit);
}

Encoding Pipeline::encode(std::string_view text, std::optional<std::string_view> pair,
                          std::size_t max_length) const {
  check_text_size(text, pair);
  Encoding enc;
  std::size_t bad_a = 0, bad_b = 0;
  std::string a_text = utf8::sanitize(text, &bad_a);
  std::string b_text;
  if (pair) b_text = utf8::sanitize(*pair, &bad_b);
  enc.invalid_utf8 = bad_a + bad_b;

  const bool is_pair = pair.has_value();
  const std::size_t added = post_.added(is_pair);
  constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();
  // HF subtracts the special tokens from max_length in unsigned arithmetic: a max_length
  // below their count wraps around and means no truncation at all.
  const bool truncate = max_length > 0 && max_length >= added;
  const std::size_t budget = truncate ? max_length - added : kAll;

  std::vector<std::int32_t> a, b;
  if (!truncate) {
    encode_sequence(a_text, kAll, a);
    if (is_pair) encode_sequence(b_text, kAll, b);
  } else if (!is_pair) {
    encode_sequence(a_text, budget + 1, a);
    if (a.size() > budget) {
      a.resize(budget);
      enc.truncated = true;
    }
  } else {
    // Lengths beyond budget + 1 never change HF's split, except for which one is longer when
    // both exceed an odd budget: only then are both encoded in full.
    encode_sequence(a_text, budget + 1, a);
    encode_sequence(b_text, budget + 1, b);
    if (a.size() > budget && b.size() > budget && budget % 2 == 1) {
      a.clear();
      b.clear();
      encode_sequence(a_text, kAll, a);
      encode_sequence(b_text, kAll, b);
    }
    std::size_t keep_a, keep_b;
    longest_first(a.size(), b.size(), budget, keep_a, keep_b);
    if (keep_a < a.size() || keep_b < b.size()) enc.truncated = true;
    a.resize(keep_a);
    b.resize(keep_b);
  }
  enc.ids.reserve(a.size() + b.size() + added);
  enc.type_ids.reserve(a.size() + b.size() + added);
  post_.apply(a, is_pair ? &b : nullptr, enc.ids, enc.type_ids);
  return enc;
}

std::vector<Encoding> Pipeline::encode_windows(std::string_view text,
                                               std::optional<std::string_view> pair,
                                               std::size_t max_length, std::size_t stride) const {
  const bool is_pair = pair.has_value();
  const std::size_t added = post_.added(is_pair);
  if (max_length <= added || stride >= max_length - added) {
    fail(
        "a stride of {} tokens needs windows of more content: --max-len {} leaves {} tokens "
        "per window after the {} special tokens, so the stride must be below that",
        stride, max_length, max_length > added ? max_length - added : 0, added);
  }
  check_text_size(text, pair);
  constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();
  std::size_t bad_a = 0, bad_b = 0;
  std::vector<std::int32_t> a, b;
  encode_sequence(utf8::sanitize(text, &bad_a), kAll, a);
  if (is_pair) encode_sequence(utf8::sanitize(*pair, &bad_b), kAll, b);
  // The sequence cut into windows, and the room a window has for it.
  const std::vector<std::int32_t>& cut = is_pair ? b : a;
  std::size_t room = max_length - added;
  if (is_pair && a.size() + b.size() > room) {
    room = room > a.size() ? room - a.size() : 0;
    if (room <= stride) return {encode(text, pair, max_length)};
  } else if (is_pair) {
    room = b.size();  // the pair fits: one window
  }
  std::vector<Encoding> windows;
  std::vector<std::int32_t> part;
  for (const TokenRange& r : overflow_windows(cut.size(), room, stride)) {
    part.assign(cut.begin() + static_cast<std::ptrdiff_t>(r.begin),
                cut.begin() + static_cast<std::ptrdiff_t>(r.end));
    Encoding& enc = windows.emplace_back();
    enc.ids.reserve(a.size() * is_pair + part.size() + added);
    enc.type_ids.reserve(enc.ids.capacity());
    post_.apply(is_pair ? a : part, is_pair ? &part : nullptr, enc.ids, enc.type_ids);
  }
  windows.front().invalid_utf8 = bad_a + bad_b;
  return windows;
}

std::vector<std::string> Pipeline::tokens(const Encoding& encoding) const {
  std::vector<std::string> out;
  out.reserve(encoding.ids.size());
  for (std::int32_t id : encoding.ids) {
    const std::string* normalized =
        normalized_token_names_ ? added_.normalized_content(id) : nullptr;
    if (normalized != nullptr) {
      out.push_back(*normalized);
    } else if (const std::string* s = added_.content(id)) {
      out.push_back(*s);
    } else if (const std::string* t = model_->id_to_token(id)) {
      out.push_back(*t);
    } else {
      out.emplace_back();
    }
  }
  return out;
}

}  // namespace mcinfer::tokenizer
