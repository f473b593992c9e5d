// The Split pre-tokenizer against tokenizers' own (tools/gen_decoder_tokenizers.py wrote the pieces
// it gives for each behavior and invert), the Oniguruma classes against what tokenizers' Oniguruma
// matches over all of Unicode (tools/gen_onig_classes.py), and the boundary errors.

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "core/error.h"
#include "core/json.h"
#include "core/utf8.h"
#include "support/paths.h"
#include "tokenizer/loader.h"
#include "tokenizer/split.h"

namespace mcinfer::tokenizer {
namespace {

using testing::fixture;

std::vector<std::string> pieces_of(const PreTokenizer& split, const std::string& text) {
  Words words;
  split.split(text, true, words);
  std::vector<std::string> out;
  for (std::size_t k = 0; k < words.spans.size(); ++k) out.emplace_back(words.word(k));
  return out;
}

SplitPattern pattern_of(const Json& j) {
  SplitPattern p;
  if (j.contains("String")) {
    p.literal = true;
    p.text = j.at("String").get<std::string>();
  } else {
    p.text = j.at("Regex").get<std::string>();
  }
  return p;
}

TEST(Split, EveryBehaviorAndInvertMatchesTokenizers) {
  std::istringstream in(testing::read_file(fixture("tokenizer/split_cases.jsonl")));
  std::string line;
  std::map<std::string, std::size_t> checked;
  std::size_t failures = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Json c = parse_json(line, "split_cases.jsonl");
    const std::string behavior_name = c.at("behavior").get<std::string>();
    auto behavior = kSplitBehaviorNames.parse(behavior_name);
    ASSERT_TRUE(behavior) << behavior_name;
    auto split =
        make_split(pattern_of(c.at("pattern")), *behavior, c.at("invert").get<bool>(), "case");
    const auto want = c.at("pieces").get<std::vector<std::string>>();
    const auto got = pieces_of(*split, c.at("text").get<std::string>());
    ++checked[behavior_name];
    if (got != want && ++failures <= 20) {
      ADD_FAILURE() << c.at("pattern").dump() << " " << behavior_name << " invert "
                    << c.at("invert") << " on " << Json(c.at("text")).dump() << ": expected "
                    << Json(want).dump() << " got " << Json(got).dump();
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_EQ(checked.size(), 5u);  // every behavior
  for (const auto& [name, n] : checked) EXPECT_GE(n, 500u) << name;
}

// Every code point but the surrogates and NUL, as tools/gen_onig_classes.py writes them.
const std::string& all_code_points() {
  static const std::string text = [] {
    std::string s;
    for (char32_t c = 1; c < 0x110000; ++c) {
      if (c < 0xD800 || c > 0xDFFF) utf8::append_code_point(c, s);
    }
    return s;
  }();
  return text;
}

std::string ranges_matched(const PreTokenizer& split) {
  Words words;
  split.split(all_code_points(), true, words);
  std::vector<std::pair<char32_t, char32_t>> ranges;
  for (std::size_t k = 0; k < words.spans.size(); ++k) {
    std::string_view w = words.word(k);
    for (std::size_t pos = 0; pos < w.size();) {
      char32_t c = utf8::decode_valid(w, pos);
      if (!ranges.empty() && ranges.back().second + 1 == c) {
        ranges.back().second = c;
      } else {
        ranges.emplace_back(c, c);
      }
    }
  }
  std::string out;
  for (auto [a, b] : ranges) {
    if (!out.empty()) out += ' ';
    out += a == b ? fmt::format("{:X}", static_cast<std::uint32_t>(a))
                  : fmt::format("{:X}-{:X}", static_cast<std::uint32_t>(a),
                                static_cast<std::uint32_t>(b));
  }
  return out;
}

TEST(Split, ClassesMatchOnigurumaOverAllOfUnicode) {
  std::istringstream in(testing::read_file(fixture("tokenizer/onig_classes.tsv")));
  std::string line;
  std::size_t exact = 0, refused = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    const std::string pattern = line.substr(0, tab), want = line.substr(tab + 1);
    for (bool negated : {false, true}) {
      // Negated: the same class as [^...] (\S, \P{..}), matched where the class does not.
      std::string spelled = pattern;
      if (negated) spelled[1] = static_cast<char>(std::toupper(spelled[1]));
      std::unique_ptr<PreTokenizer> split;
      try {
        split = make_split({false, spelled}, SplitBehavior::kRemoved, !negated, "case");
      } catch (const Error& e) {
        // Only the categories whose members Oniguruma's newer Unicode moved out.
        EXPECT_TRUE(pattern == "\\p{C}" || pattern == "\\p{Cn}" || pattern == "\\p{Mn}")
            << e.what();
        EXPECT_NE(std::string(e.what()).find("no exact PCRE2 form"), std::string::npos);
        ++refused;
        continue;
      }
      EXPECT_EQ(ranges_matched(*split), want) << spelled;
      ++exact;
    }
  }
  EXPECT_GE(exact, 2u * 37u);
  EXPECT_EQ(refused, 6u);
}

TEST(Split, RewritesWhatOnigurumaReadsDifferently) {
  EXPECT_EQ(onig_to_pcre2("(?m:a.b)(?im)x", "f"), "(?s:a.b)(?is)x");
  EXPECT_EQ(onig_to_pcre2("\\u00e9\\v", "f"), "\\x{00e9}\\x{B}");
  EXPECT_EQ(onig_to_pcre2("[^\\h]", "f"), "[^\\x{30}-\\x{39}\\x{41}-\\x{46}\\x{61}-\\x{66}]");
  for (const char* bad : {"[\\S]", "[a[b]]", "[[:alpha:]]", "[a&&b]", "\\p{Han}", "\\p{Cn}"}) {
    EXPECT_THROW(onig_to_pcre2(bad, "f"), Error) << bad;
  }
}

std::unique_ptr<Tokenizer> with_pre_tokenizer(const std::string& pre) {
  const std::string json = R"({"version":"1.0","pre_tokenizer":)" + pre +
                           R"(,"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2},"merges":[]}})";
  return tokenizer_from_json(json, "tokenizer.json", ConfigFiles{});
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Split, InvalidPatternsAndBehaviorsAreRefusedByField) {
  const std::string bad_regex = error_of([] {
    with_pre_tokenizer(R"({"type":"Split","pattern":{"Regex":"a(b"},"behavior":"Isolated"})");
  });
  EXPECT_NE(bad_regex.find("tokenizer.json: field 'pre_tokenizer.pattern.Regex'"),
            std::string::npos)
      << bad_regex;
  EXPECT_NE(bad_regex.find("missing closing parenthesis"), std::string::npos) << bad_regex;
  EXPECT_NE(bad_regex.find("at offset 3"), std::string::npos) << bad_regex;
  // The offset is the pattern's as written, not the rewritten one's.
  const std::string later = error_of([] {
    with_pre_tokenizer(
        R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+\\p{L}(?<"},"behavior":"Removed"}]})");
  });
  EXPECT_NE(later.find("field 'pre_tokenizer.pretokenizers[0].pattern.Regex'"), std::string::npos)
      << later;
  EXPECT_NE(later.find("at offset 1"), std::string::npos) << later;
  const std::string behavior = error_of([] {
    with_pre_tokenizer(R"({"type":"Split","pattern":{"String":" "},"behavior":"Dropped"})");
  });
  EXPECT_NE(behavior.find("field 'pre_tokenizer.behavior': unknown behavior 'Dropped'"),
            std::string::npos)
      << behavior;
  const std::string pattern = error_of([] {
    with_pre_tokenizer(R"({"type":"Split","pattern":{"Glob":"*"},"behavior":"Removed"})");
  });
  EXPECT_NE(pattern.find("field 'pre_tokenizer.pattern'"), std::string::npos) << pattern;
  const std::string han = error_of([] {
    with_pre_tokenizer(R"({"type":"Split","pattern":{"Regex":"\\p{Han}"},"behavior":"Removed"})");
  });
  EXPECT_NE(han.find("field 'pre_tokenizer.pattern.Regex'"), std::string::npos) << han;
  EXPECT_NE(han.find("'\\p{Han}'"), std::string::npos) << han;
}

TEST(Split, CatastrophicPatternIsRefusedNotLeftRunning) {
  auto tok = with_pre_tokenizer(
      R"({"type":"Split","pattern":{"Regex":"(a+)+\\d"},"behavior":"Isolated"})");
  const auto start = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { tok->encode(std::string(64, 'a') + "b", std::nullopt, 0); });
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(e.find("field 'pre_tokenizer.pattern.Regex'"), std::string::npos) << e;
  EXPECT_NE(e.find("match limit"), std::string::npos) << e;
  EXPECT_LT(seconds, 30.0);
}

TEST(Split, PaddingSideFromConfigFileOrClass) {
  EXPECT_EQ(Tokenizer::load(fixture("tokenizer/models/qwen2_json"))->padding_side(),
            PaddingSide::kLeft);  // tokenizer_config.json's padding_side
  EXPECT_EQ(Tokenizer::load(fixture("tokenizer/models/gemma_json"))->padding_side(),
            PaddingSide::kLeft);  // GemmaTokenizer's own
  EXPECT_EQ(Tokenizer::load(fixture("tokenizer/models/bpe_json"))->padding_side(),
            PaddingSide::kRight);
}

}  // namespace
}  // namespace mcinfer::tokenizer
