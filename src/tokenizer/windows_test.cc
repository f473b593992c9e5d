// --long-input chunk's windows against Hugging Face's overflowing windows
// (tests/fixtures/chunk/windows/, tools/gen_chunk_fixtures.py): every tokenizer type, long
// multilingual texts, texts at and one past the limit, strides 0, 1, max_len / 2 and the largest
// HF accepts; and the stride HF refuses refused here with a message.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "support/paths.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::tokenizer {
namespace {

using Ids = std::vector<std::int32_t>;

class HfWindows : public ::testing::TestWithParam<std::string> {};

TEST_P(HfWindows, SameWindowsAsHuggingFace) {
  const std::string variant = GetParam();
  const Json data = read_json_file(testing::fixture("chunk/windows/" + variant + ".json"));
  auto tok = Tokenizer::load(testing::fixture("tokenizer/models/" + variant));
  const auto prefix = data["prefix"].get<Ids>();
  const auto suffix = data["suffix"].get<Ids>();
  EXPECT_EQ(tok->special_tokens(false), data["specials"].get<std::size_t>());
  int cases = 0, multi = 0, at_limit = 0, past_limit = 0;
  for (const Json& record : data["texts"]) {
    const auto text = record["text"].get<std::string>();
    const auto ids = record["ids"].get<Ids>();
    const Ids body(ids.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                   ids.end() - static_cast<std::ptrdiff_t>(suffix.size()));
    for (const Json& c : record["cases"]) {
      const auto max_len = c["max_len"].get<std::size_t>();
      const auto stride = c["stride"].get<std::size_t>();
      const std::string where =
          fmt::format("{} max_len {} stride {}: {:.40}", variant, max_len, stride, text);
      const std::vector<Encoding> got = tok->encode_windows(text, std::nullopt, max_len, stride);
      const Json& want = c["windows"];
      ASSERT_EQ(got.size(), want.size()) << where;
      for (std::size_t w = 0; w < got.size(); ++w) {
        Ids expected = prefix;
        expected.insert(expected.end(), body.begin() + want[w][0].get<std::ptrdiff_t>(),
                        body.begin() + want[w][1].get<std::ptrdiff_t>());
        expected.insert(expected.end(), suffix.begin(), suffix.end());
        EXPECT_EQ(got[w].ids, expected) << where << " window " << w;
        EXPECT_EQ(got[w].type_ids, Ids(expected.size(), 0)) << where;
        EXPECT_LE(got[w].ids.size(), max_len) << where;
      }
      const std::size_t room = max_len - prefix.size() - suffix.size();
      ++cases;
      multi += got.size() > 1;
      at_limit += body.size() == room;
      past_limit += body.size() == room + 1;
      // A row that fits is one window, and it is the truncating encoding.
      if (got.size() == 1) {
        EXPECT_EQ(got[0].ids, tok->encode(text, std::nullopt, max_len).ids) << where;
      }
    }
    // The stride HF refuses (the whole window's content) is an error naming the limit.
    try {
      tok->encode_windows(text, std::nullopt, 16, 16 - prefix.size() - suffix.size());
      ADD_FAILURE() << variant << ": a stride of the whole window was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("stride must be below"), std::string::npos) << e.what();
    }
  }
  // Pairs: the first text whole in every window, windows of the second (HF's only_second).
  int pair_windows = 0, refused = 0;
  for (const Json& record : data["pairs"]) {
    const auto text = record["text"].get<std::string>();
    const auto pair = record["pair"].get<std::string>();
    for (const Json& c : record["cases"]) {
      const auto max_len = c["max_len"].get<std::size_t>();
      const auto stride = c["stride"].get<std::size_t>();
      const std::string where =
          fmt::format("{} pair, max_len {} stride {}: {:.30}", variant, max_len, stride, text);
      if (c.contains("refused")) {
        // HF refuses; mcinfer truncates the row as a row that is not chunked.
        const std::vector<Encoding> got = tok->encode_windows(text, pair, max_len, stride);
        ASSERT_EQ(got.size(), 1u) << where;
        EXPECT_TRUE(got[0].truncated) << where;
        EXPECT_EQ(got[0].ids, tok->encode(text, pair, max_len).ids) << where;
        ++refused;
        continue;
      }
      const std::vector<Encoding> got = tok->encode_windows(text, pair, max_len, stride);
      ASSERT_EQ(got.size(), c["windows"].size()) << where;
      for (std::size_t w = 0; w < got.size(); ++w) {
        EXPECT_EQ(got[w].ids, c["windows"][w].get<Ids>()) << where << " window " << w;
        if (!c["type_ids"].is_null()) {
          EXPECT_EQ(got[w].type_ids, c["type_ids"][w].get<Ids>()) << where << " window " << w;
        }
      }
      pair_windows += static_cast<int>(got.size());
    }
  }
  EXPECT_GT(pair_windows, 20);
  EXPECT_GT(refused, 0);
  EXPECT_GT(multi, cases / 2) << "the fixture's texts should mostly need several windows";
  EXPECT_GT(at_limit, 0) << "no text exactly at the limit";
  EXPECT_GT(past_limit, 0) << "no text one token past the limit";
}

INSTANTIATE_TEST_SUITE_P(Variants, HfWindows,
                         ::testing::Values("minilm_json", "wp_cased_json", "wp_uncased_vocab",
                                           "unigram_json", "unigram_spm", "bpe_json", "bpe_files"));

TEST(OverflowWindows, RangesAtTheEdges) {
  using R = std::vector<std::pair<std::size_t, std::size_t>>;
  auto ranges = [](std::size_t n, std::size_t window, std::size_t stride) {
    R out;
    for (const TokenRange& r : overflow_windows(n, window, stride))
      out.emplace_back(r.begin, r.end);
    return out;
  };
  EXPECT_EQ(ranges(0, 4, 0), (R{{0, 0}}));
  EXPECT_EQ(ranges(4, 4, 0), (R{{0, 4}}));
  EXPECT_EQ(ranges(5, 4, 0), (R{{0, 4}, {4, 5}}));
  EXPECT_EQ(ranges(8, 4, 0), (R{{0, 4}, {4, 8}}));
  EXPECT_EQ(ranges(5, 4, 3), (R{{0, 4}, {1, 5}}));
  EXPECT_EQ(ranges(9, 4, 2), (R{{0, 4}, {2, 6}, {4, 8}, {6, 9}}));
}

}  // namespace
}  // namespace mcinfer::tokenizer
