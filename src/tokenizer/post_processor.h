#pragma once
// Special tokens around one or two sequences (HF's TemplateProcessing, which BertProcessing,
// RobertaProcessing and "no post-processor" are special cases of) and HF's truncation.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mcinfer::tokenizer {

struct TemplateItem {
  bool is_sequence = false;
  int sequence = 0;               // 0: A, 1: B (is_sequence)
  std::vector<std::int32_t> ids;  // special token ids (!is_sequence)
  std::uint32_t type_id = 0;
};

struct Template {
  std::vector<TemplateItem> single;
  std::vector<TemplateItem> pair;

  std::size_t added(bool is_pair) const;
  // Appends the processed ids and type ids of `a` (and `b` when is_pair).
  void apply(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>* b,
             std::vector<std::int32_t>& ids, std::vector<std::int32_t>& type_ids) const;

  static Template none();                                       // A / A B, types 0 / 1
  static Template bert(std::int32_t cls, std::int32_t sep);     // [CLS] A [SEP] B [SEP]
  static Template roberta(std::int32_t cls, std::int32_t sep);  // <s> A </s></s> B </s>
};

// HF's truncate_encodings with LongestFirst, right side, stride 0: how many tokens of each
// sequence to keep for a content budget of max_length (special tokens already subtracted).
void longest_first(std::size_t len_a, std::size_t len_b, std::size_t max_length,
                   std::size_t& keep_a, std::size_t& keep_b);

// [begin, end) of each window HF's Encoding::truncate cuts a sequence of `length` tokens into
// (right side): windows of `window` tokens starting every window - stride tokens, the last one
// ending at `length`; one window [0, length) when it fits. Requires stride < window.
struct TokenRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};
std::vector<TokenRange> overflow_windows(std::size_t length, std::size_t window,
                                         std::size_t stride);

}  // namespace mcinfer::tokenizer
