#include "core/utf8.h"

#include <gtest/gtest.h>

#include "core/json.h"
#include "support/paths.h"

namespace mcinfer {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Reference: tools/gen_utf8_cases.py records what CPython's decode("utf-8", "replace") does.
TEST(Utf8, MatchesPythonReplaceDecoding) {
  Json cases = read_json_file(testing::fixture("core/utf8_cases.json"));
  ASSERT_GT(cases.size(), 3000u);
  for (const auto& c : cases) {
    std::string in = from_hex(c["in"]);
    std::string expected = from_hex(c["out"]);
    std::size_t replacements = 0;
    std::string got = utf8::sanitize(in, &replacements);
    ASSERT_EQ(got, expected) << "input " << c["in"];
    ASSERT_EQ(replacements, c["replacements"].get<std::size_t>()) << "input " << c["in"];
    ASSERT_EQ(utf8::is_valid(in), c["replacements"].get<int>() == 0) << "input " << c["in"];
  }
}

TEST(Utf8, DecodeValidRoundTrips) {
  std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  std::size_t pos = 0;
  std::string rebuilt;
  std::vector<char32_t> cps;
  while (pos < text.size()) cps.push_back(utf8::decode_valid(text, pos));
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600}));
  for (char32_t cp : cps) utf8::append_code_point(cp, rebuilt);
  EXPECT_EQ(rebuilt, text);
}

}  // namespace
}  // namespace mcinfer
