#pragma once
// Pre-tokenizers of HF tokenizers (BertPreTokenizer, ByteLevel with GPT-2's split, Metaspace,
// Whitespace, WhitespaceSplit, Punctuation, Sequence): a normalized segment -> words for the
// model.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mcinfer::tokenizer {

// Words of one segment: each span indexes `buf`. Pre-tokenizers append to both.
struct Words {
  std::string buf;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> spans;  // offset, length
  void clear() {
    buf.clear();
    spans.clear();
  }
  std::string_view word(std::size_t k) const {
    return std::string_view(buf).substr(spans[k].first, spans[k].second);
  }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Appends the words of `in` to `out`. `at_origin`: `in` starts at offset 0 of the text
  // (Metaspace's prepend_scheme "first").
  virtual void split(std::string_view in, bool at_origin, Words& out) const = 0;
  // True when the words are raw bytes still to be mapped through GPT-2's byte alphabet.
  virtual bool byte_level() const { return false; }
};

enum class PrependScheme { kAlways, kFirst, kNever };

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer();
std::unique_ptr<PreTokenizer> make_byte_level(bool add_prefix_space, bool use_regex);
std::unique_ptr<PreTokenizer> make_metaspace(char32_t replacement, PrependScheme scheme,
                                             bool split);
std::unique_ptr<PreTokenizer> make_whitespace();
std::unique_ptr<PreTokenizer> make_whitespace_split();
// HF's Punctuation with behavior "Isolated" (DebertaV2Tokenizer's split_by_punct): every
// punctuation character (BertPreTokenizer's: ASCII punctuation or P*) becomes a word of its own,
// the text between them another; nothing is dropped.
std::unique_ptr<PreTokenizer> make_punctuation();
// Throws Error (naming `origin`) when a ByteLevel step is not the last one.
std::unique_ptr<PreTokenizer> make_pre_tokenizer_sequence(
    std::vector<std::unique_ptr<PreTokenizer>> steps, const std::string& origin);

// GPT-2's pre-tokenization regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// as Oniguruma (Unicode 14.0) runs it: appends (base + offset, length) of each match of `in`.
void gpt2_split(std::string_view in, std::uint32_t base,
                std::vector<std::pair<std::uint32_t, std::uint32_t>>& spans);

// GPT-2's byte -> printable code point map (bytes_to_unicode).
char32_t byte_level_char(unsigned char b);

}  // namespace mcinfer::tokenizer
