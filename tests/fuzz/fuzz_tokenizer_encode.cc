// Arbitrary bytes through every committed fixture tokenizer (WordPiece, BPE, Unigram, from
// each file format): never a crash, and the results keep their invariants -- as many type ids
// as ids, every id printable, truncation within max_length and a prefix of the full result.
//
// Input: byte 0 picks the tokenizer (low 4 bits) and a pair (bit 4); byte 1 is max_length;
// byte 2 places the split of a pair; the rest is the text.
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
    for (const char* name : {"minilm_json", "minilm_vocab", "wp_cased_json", "wp_uncased_vocab",
                             "unigram_json", "unigram_spm", "bpe_json", "bpe_files"}) {
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
    check(std::equal(enc.ids.begin(), enc.ids.begin() + static_cast<std::ptrdiff_t>(content + 1),
                     full.ids.begin()),
          "truncated ids are a prefix of the full ids");
    check(enc.truncated == (enc.ids.size() < full.ids.size()), "truncated flag");
  }
  return 0;
}
