#pragma once
// Text -> token ids with exact Hugging Face parity. One Tokenizer is shared read-only by every
// thread of a run: encode() is const and thread-safe.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace mcinfer::tokenizer {

struct Encoding {
  std::vector<std::int32_t> ids;       // [length], special tokens included
  std::vector<std::int32_t> type_ids;  // [length], segment of each token (0 or 1)
  std::size_t invalid_utf8 = 0;        // U+FFFD replacements made in the input text(s)
  bool truncated = false;              // true when tokens were dropped to fit max_length
};

// How a pipeline is built from a directory's files. kFile: as its tokenizer.json (or the per-kind
// files, as transformers 4 converts them) says. kTransformers5: as transformers 5 builds it, which
// takes the vocabulary from the files but the pipeline from the tokenizer class: for
// XLMRobertaTokenizer, the SentencePiece normalizer alone (no right strip, no run-of-spaces
// replacement), then a whitespace split before the Metaspace pre-tokenizer; for
// DebertaV2Tokenizer, Strip on the right after the SentencePiece normalizer instead of on both
// sides before it, and [UNK] not normalized unless the files say so (load_deberta.cc); and
// lowercasing with the case pairs of the newer Unicode its tokenizers was built with (55 code
// points: Garay, Latin additions; unicode_lower_tf5.cc). The other classes mcinfer reads (BERT,
// RoBERTa, DistilBERT) build the same pipeline either way.
enum class Compat { kFile, kTransformers5 };
inline constexpr EnumNames<Compat, 2> kCompatNames{
    {{{Compat::kFile, "file"}, {Compat::kTransformers5, "transformers5"}}}};

// Where a batch's padding goes: tokenizer_config.json's padding_side, else tokenizer.json's
// padding direction, else the tokenizer class's own (GemmaTokenizer: left), else right.
// Qwen3-Embedding pads on the left, so its last token (the <|endoftext|> its tokenizer appends) is
// the pooled one.
enum class PaddingSide { kRight, kLeft };
inline constexpr EnumNames<PaddingSide, 2> kPaddingSideNames{
    {{{PaddingSide::kRight, "right"}, {PaddingSide::kLeft, "left"}}}};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads the tokenizer saved in a Hugging Face model directory (tokenizer.json, or the
  // per-kind files: vocab.txt / vocab.json + merges.txt / sentencepiece.bpe.model / spm.model,
  // with tokenizer_config.json and special_tokens_map.json). Throws Error naming file and field.
  static std::unique_ptr<Tokenizer> load(const std::filesystem::path& model_dir,
                                         Compat compat = Compat::kFile);

  // Encodes one text or a pair, adds special tokens and truncates to max_length tokens
  // (special tokens included; longest_first for pairs). max_length == 0: no truncation.
  virtual Encoding encode(std::string_view text, std::optional<std::string_view> pair,
                          std::size_t max_length) const = 0;

  // One text (or pair) encoded whole and cut into the windows Hugging Face tokenizers return for
  // max_length, stride and return_overflowing_tokens=True, with truncation=True for one text:
  // each window holds up to max_length - special_tokens(false) content tokens, starts `stride`
  // tokens before the previous one ends, and gets the special tokens. A pair is cut as HF's
  // truncation="only_second" cuts it: every window holds the whole first text and a window of
  // the second (HF's longest_first would pair windows of both, a cross product). What fits is
  // one window. A pair whose first text leaves the second no more room than the stride (HF
  // refuses it) is one window: encode()'s truncation, marked truncated. The first window
  // carries the invalid_utf8 count. Throws Error unless stride < the window's content.
  virtual std::vector<Encoding> encode_windows(std::string_view text,
                                               std::optional<std::string_view> pair,
                                               std::size_t max_length,
                                               std::size_t stride) const = 0;
  // Special tokens the post-processor adds to one sequence (pair: to two).
  virtual std::size_t special_tokens(bool pair) const = 0;

  // The token strings of encode(), as HF's convert_ids_to_tokens would print them.
  virtual std::vector<std::string> tokens(const Encoding& encoding) const = 0;

  virtual std::int32_t pad_id() const = 0;
  virtual PaddingSide padding_side() const = 0;
  // model_max_length from tokenizer_config.json, when present and sensible.
  virtual std::optional<std::size_t> model_max_length() const = 0;
  virtual std::string_view kind() const = 0;  // "wordpiece", "unigram" or "bpe"
};

}  // namespace mcinfer::tokenizer
