// Arbitrary bytes through every committed fixture tokenizer (WordPiece, BPE, Unigram, from
// each file format): never a crash, and the results keep their invariants -- as many type ids
// as ids, every id printable, truncation within max_length and a prefix of the full result,
// and the overflowing windows of --long-input chunk cover the text exactly.
//
// Input: byte 0 picks the tokenizer (low 4 bits) and a pair (bit 4); byte 1 is max_length;
// byte 2 places the split of a pair (one text: picks the windows' stride); the rest is the text.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace {

using mcinfer::tokenizer::Tokenizer;

std::filesystem::path fixtures() {
  if (const char* env = std::getenv("MCINFER_SOURCE_DIR")) {
    return std::filesystem::path(env) / "tests/fixtures/tokenizer/models";
  }
  return std::filesystem::path(MCINFER_SOURCE_DIR) / "tests/fixtures/tokenizer/models";
}

const std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
  static const std::vector<std::unique_ptr<Tokenizer>> all = [] {
    std::vector<std::unique_ptr<Tokenizer>> v;
    for (const char* name :
         {"minilm_json", "minilm_vocab", "wp_cased_json", "wp_uncased_vocab", "unigram_json",
          "unigram_spm", "bpe_json", "bpe_files", "qwen2_json", "gemma_json"}) {
      v.push_back(Tokenizer::load(fixtures() / name));
    }
    return v;
  }();
  return all;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

// The special tokens before the content (Qwen2's template adds none there, BERT's one): where
// "a" (one content token or more, none of them special) first parts from the empty text's ids.
std::size_t specials_before(const Tokenizer& tok, std::size_t specials) {
  const auto empty = tok.encode("", std::nullopt, 0).ids;
  const auto a = tok.encode("a", std::nullopt, 0).ids;
  std::size_t front = 0;
  while (front < specials && front < a.size() && a[front] == empty[front]) ++front;
  return front;
}

// --long-input chunk's windows of one text: the first is the truncated encoding, every window
// but the last holds a full window of content, consecutive windows share exactly `stride`
// tokens, and the windows stitched together are the whole text's content.
void check_windows(const Tokenizer& tok, std::string_view text, std::size_t max_len,
                   std::size_t specials, std::size_t front, std::uint8_t stride_byte,
                   const mcinfer::tokenizer::Encoding& truncated,
                   const mcinfer::tokenizer::Encoding& full) {
  const std::size_t room = max_len - specials;
  const std::size_t stride = stride_byte % room;
  const auto windows = tok.encode_windows(text, std::nullopt, max_len, stride);
  check(!windows.empty() && windows[0].ids == truncated.ids, "the first window is the truncation");
  std::vector<std::int32_t> stitched, previous;
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const auto& ids = windows[w].ids;
    check(ids.size() <= max_len && ids.size() >= specials, "a window within max_length");
    check(ids.size() == windows[w].type_ids.size(), "one type id per window id");
    const std::vector<std::int32_t> content(
        ids.begin() + static_cast<std::ptrdiff_t>(front),
        ids.end() - static_cast<std::ptrdiff_t>(specials - front));
    if (w + 1 < windows.size()) check(content.size() == room, "a full window before the last");
    if (w > 0) {
      check(std::equal(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(stride),
                       previous.end() - static_cast<std::ptrdiff_t>(stride)),
            "consecutive windows share the stride");
    }
    stitched.insert(stitched.end(), content.begin() + static_cast<std::ptrdiff_t>(w ? stride : 0),
                    content.end());
    previous = content;
  }
  const std::vector<std::int32_t> whole(
      full.ids.begin() + static_cast<std::ptrdiff_t>(front),
      full.ids.end() - static_cast<std::ptrdiff_t>(specials - front));
  check(stitched == whole, "the windows stitched are the whole content");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const auto& all = tokenizers();
  const Tokenizer& tok = *all[(data[0] & 15) % all.size()];
  const bool is_pair = data[0] & 16;
  const std::size_t max_len = data[1];
  std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  std::optional<std::string_view> pair;
  std::string_view text = rest;
  if (is_pair) {
    std::size_t cut = rest.size() * data[2] / 255;
    text = rest.substr(0, cut);
    pair = rest.substr(cut);
  }
  auto enc = tok.encode(text, pair, max_len);
  check(enc.ids.size() == enc.type_ids.size(), "one type id per id");
  auto strings = tok.tokens(enc);
  check(strings.size() == enc.ids.size(), "one token string per id");
  for (const auto& s : strings) check(!s.empty(), "every id has a token string");

  const std::size_t specials =
      tok.encode("", is_pair ? std::optional<std::string_view>("") : std::nullopt, 0).ids.size();
  if (max_len > 0 && max_len >= specials) check(enc.ids.size() <= max_len, "within max_length");
  if (!is_pair && max_len > 0) {
    // The truncated content is the start of the full content.
    auto full = tok.encode(text, std::nullopt, 0);
    check(enc.invalid_utf8 == full.invalid_utf8, "same replacement count");
    check(enc.ids.size() <= full.ids.size(), "truncation only removes");
    std::size_t content = enc.ids.size() - specials;
    const std::size_t front = specials_before(tok, specials);
    check(
        std::equal(enc.ids.begin(), enc.ids.begin() + static_cast<std::ptrdiff_t>(front + content),
                   full.ids.begin()),
        "truncated ids are a prefix of the full ids");
    check(enc.truncated == (enc.ids.size() < full.ids.size()), "truncated flag");
    if (max_len > specials) check_windows(tok, text, max_len, specials, front, data[2], enc, full);
  }
  return 0;
}
