#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "data/json_cursor.h"
#include "data/rows.h"
#include "support/paths.h"

namespace mcinfer::data {
namespace {

using namespace std::string_literals;

struct Read {
  std::vector<Row> rows;
  std::vector<BadRow> bad;
  std::vector<bool> order;  // true: a row
};

Read read_all(std::string_view bytes, ColumnSpec columns = {}, ReaderOptions options = {}) {
  auto reader = RowReader::open_bytes(bytes, "in.jsonl", LineFormat::kJsonl, columns, options);
  Read out;
  Row row;
  BadRow bad;
  for (;;) {
    auto r = reader->next(row, bad);
    if (r == RowReader::Result::kEnd) break;
    out.order.push_back(r == RowReader::Result::kRow);
    if (r == RowReader::Result::kRow) {
      out.rows.push_back(row);
    } else {
      out.bad.push_back(bad);
    }
  }
  EXPECT_EQ(reader->bytes_read(), bytes.size());
  return out;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Reference: tools/gen_data_fixtures.py records json.loads of string literals with every
// escape, surrogate pairs and lone surrogates (as 'surrogatepass' UTF-8).
TEST(JsonCursor, StringsMatchPythonJson) {
  Json cases = read_json_file(testing::fixture("data/json_strings.json"));
  ASSERT_GE(cases.size(), 1000u);
  for (const auto& c : cases) {
    std::string literal = c["literal"];
    JsonCursor cursor(literal);
    std::string scratch;
    std::string got(cursor.string(scratch));
    EXPECT_EQ(got, from_hex(c["utf8"])) << literal;
    EXPECT_TRUE(cursor.at_end());
  }
}

TEST(JsonCursor, RejectsWhatJsonRejects) {
  for (std::string bad :
       {"01", "1.", ".5", "-", "1e", "+1", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "\"\\x\"",
        "\"\\u12\"", "tru", "nul", "[", "{", "\"open", "{1:2}", "[1 2]", "\"a\tb\""}) {
    bool threw = false;
    try {
      JsonCursor c(bad);
      c.skip_value();
      if (!c.at_end()) threw = true;
    } catch (const JsonSyntaxError&) {
      threw = true;
    }
    EXPECT_TRUE(threw) << bad;
  }
  for (std::string good : {"0", "-0.5e+10", "[]", "{}", "[[[]]]", "{\"a\":[1,{\"b\":null}]}",
                           "true", " false ", "\"\""}) {
    JsonCursor c(good);
    EXPECT_NO_THROW(c.skip_value()) << good;
    EXPECT_TRUE(c.at_end()) << good;
  }
}

TEST(JsonCursor, DeepNestingDoesNotRecurse) {
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  JsonCursor c(deep);
  EXPECT_NO_THROW(c.skip_value());
  std::string open = std::string(200000, '[');
  JsonCursor d(open);
  EXPECT_THROW(d.skip_value(), JsonSyntaxError);
}

TEST(JsonlRows, StringAndNumberIdsKeepTheirSpelling) {
  auto r = read_all(
      "{\"id\": \"a\\\"b\", \"text\": \"x\"}\n"
      "{\"id\": 5.0, \"text\": \"y\"}\n"
      "{\"id\": -0, \"text\": \"z\"}\n"
      "{\"id\": 1E+3, \"text\": \"w\"}\n");
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].id.text, "a\"b");
  EXPECT_TRUE(r.rows[0].id.is_string);
  EXPECT_EQ(r.rows[1].id.text, "5.0");
  EXPECT_FALSE(r.rows[1].id.is_string);
  EXPECT_EQ(r.rows[2].id.text, "-0");
  EXPECT_EQ(r.rows[3].id.text, "1E+3");
  EXPECT_EQ(r.rows[3].line, 4u);
}

TEST(JsonlRows, BadIdKinds) {
  auto r = read_all(
      "{\"id\": {}, \"text\": \"x\"}\n{\"id\": [1], \"text\": \"x\"}\n"
      "{\"id\": true, \"text\": \"x\"}\n{\"id\": null, \"text\": \"x\"}\n");
  ASSERT_EQ(r.bad.size(), 4u);
  EXPECT_EQ(r.bad[0].reason, "field 'id': expected a string or a number, got object");
  EXPECT_EQ(r.bad[1].reason, "field 'id': expected a string or a number, got array");
  EXPECT_EQ(r.bad[2].reason, "field 'id': expected a string or a number, got boolean");
  EXPECT_EQ(r.bad[3].reason, "field 'id': expected a string or a number, got null");
  EXPECT_EQ(r.bad[3].line, 4u);
}

TEST(JsonlRows, RowNumbersWhenTheFirstRowHasNoId) {
  auto r = read_all("{\"text\": \"a\"}\n\n{\"text\": \"b\"}\n{\"id\": 9, \"text\": \"c\"}\n");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].id.text, "0");
  EXPECT_FALSE(r.rows[0].id.is_string);
  EXPECT_EQ(r.rows[1].id.text, "1");
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_EQ(r.bad[0].line, 4u);
  EXPECT_NE(r.bad[0].reason.find("ids must be in every row or in none"), std::string::npos);

  auto s = read_all("{\"id\": 1, \"text\": \"a\"}\n{\"text\": \"b\"}\n");
  ASSERT_EQ(s.bad.size(), 1u);
  EXPECT_EQ(s.bad[0].reason, "missing field 'id' (the first row, line 1, has one)");
}

TEST(JsonlRows, PretokenizedRows) {
  auto r = read_all(
      "{\"id\": 1, \"input_ids\": [101, 7592, 102], \"attention_mask\": [1, 1, 1], "
      "\"token_type_ids\": [0, 0, 0]}\n"
      "{\"id\": 2, \"input_ids\": [101, 102]}\n");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_TRUE(r.rows[0].pretokenized);
  EXPECT_EQ(r.rows[0].input_ids, (std::vector<std::int32_t>{101, 7592, 102}));
  EXPECT_EQ(r.rows[0].attention_mask, (std::vector<std::int32_t>{1, 1, 1}));
  EXPECT_EQ(r.rows[0].token_type_ids, (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_EQ(r.rows[0].text, "");
  EXPECT_TRUE(r.rows[1].attention_mask.empty());
}

TEST(JsonlRows, BadPretokenizedRows) {
  auto r = read_all(
      "{\"id\": 1, \"input_ids\": [1, 2], \"attention_mask\": [1]}\n"
      "{\"id\": 2, \"input_ids\": [1.5]}\n"
      "{\"id\": 3, \"input_ids\": [4294967296]}\n"
      "{\"id\": 4, \"input_ids\": []}\n"
      "{\"id\": 5, \"input_ids\": \"101 102\"}\n"
      "{\"id\": 6, \"input_ids\": [\"1\"]}\n");
  ASSERT_EQ(r.bad.size(), 6u);
  EXPECT_EQ(r.bad[0].reason, "field 'attention_mask' has 1 items, 'input_ids' has 2");
  EXPECT_EQ(r.bad[1].reason, "field 'input_ids': item 0: 1.5 is not an integer");
  EXPECT_EQ(r.bad[2].reason, "field 'input_ids': item 0: 4294967296 is out of the 32-bit range");
  EXPECT_EQ(r.bad[3].reason, "field 'input_ids' is empty");
  EXPECT_EQ(r.bad[4].reason, "field 'input_ids': expected an array of integers, got string");
  EXPECT_EQ(r.bad[5].reason, "field 'input_ids': item 0: expected an integer, got string");
}

TEST(JsonlRows, BadJsonAndWrongTypesAreBadRowsAndReadingGoesOn) {
  auto r = read_all(
      "{\"id\": 1, \"text\": \"ok\"}\n"
      "{\"id\": 2, \"text\": \"unterminated}\n"
      "[1, 2]\n"
      "{\"id\": 3, \"text\": 5}\n"
      "{\"id\": 4, \"text\": \"a\"} trailing\n"
      "{\"id\": 5, \"text\": \"a\", \"text\": \"b\"}\n"
      "{\"id\": 6, \"sentence\": \"a\", \"label\": 1}\n"
      "{\"id\": 7, \"text\": \"fine\"}\n");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].id.text, "7");
  EXPECT_EQ(r.rows[1].line, 8u);
  ASSERT_EQ(r.bad.size(), 6u);
  EXPECT_EQ(r.bad[0].line, 2u);
  EXPECT_EQ(r.bad[0].reason, "invalid JSON at column 19: the string never closes");
  EXPECT_EQ(r.bad[1].reason, "expected a JSON object, got array");
  EXPECT_EQ(r.bad[2].reason, "field 'text': expected a string, got number");
  EXPECT_NE(r.bad[3].reason.find("unexpected data after the object"), std::string::npos);
  EXPECT_EQ(r.bad[4].reason, "field 'text' appears twice");
  EXPECT_EQ(r.bad[5].reason,
            "missing field 'text' (and no 'input_ids'); fields found: id, sentence, label");
  EXPECT_EQ(r.bad[5].index, 6u);
}

TEST(JsonlRows, NulAndControlCharacters) {
  auto r = read_all("{\"id\": 1, \"text\": \"a\0b\"}\n{\"id\": 2, \"text\": \"a\x01\"}\n\0\0\0\n"s);
  ASSERT_EQ(r.bad.size(), 3u);
  EXPECT_NE(r.bad[0].reason.find("NUL byte"), std::string::npos) << r.bad[0].reason;
  EXPECT_NE(r.bad[1].reason.find("control character"), std::string::npos) << r.bad[1].reason;
  EXPECT_NE(r.bad[2].reason.find("NUL byte"), std::string::npos) << r.bad[2].reason;
}

TEST(JsonlRows, EscapedNulAndInvalidUtf8PassThrough) {
  auto r = read_all("{\"id\": 1, \"text\": \"a\\u0000b\xFF\xC3\"}\n");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].text, "a\0b\xFF\xC3"s);
}

TEST(JsonlRows, BomCrlfBlankLinesAndNoFinalNewline) {
  auto r =
      read_all("\xEF\xBB\xBF{\"id\": 1, \"text\": \"a\"}\r\n  \r\n\n{\"id\": 2, \"text\": \"b\"}");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].line, 4u);
  EXPECT_EQ(r.rows[1].index, 1u);
  EXPECT_TRUE(read_all("").rows.empty());  // JSONL has no header: an empty file has no rows
}

TEST(JsonlRows, TextPairAndIdsOnly) {
  ColumnSpec pair;
  pair.text_pair_col = "second";
  auto r = read_all(
      "{\"id\": 1, \"text\": \"a\", \"second\": \"b\"}\n{\"id\": 2, \"text\": \"a\"}\n", pair);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].text_pair.value_or(""), "b");
  ASSERT_EQ(r.bad.size(), 1u);
  EXPECT_NE(r.bad[0].reason.find("missing field 'second'"), std::string::npos);

  ColumnSpec ids;
  ids.read_text = false;
  ids.id_col = "key";
  auto s = read_all("{\"key\": \"k1\", \"text\": 5}\n", ids);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].id.text, "k1");
}

TEST(JsonlRows, RowSizeLimit) {
  std::string big(3000, 'q');
  std::string text = "{\"id\": 1, \"text\": \"" + big + "\"}\n{\"id\": 2, \"text\": \"small\"}\n" +
                     "{\"id\": 3, \"text\": \"" + big + "\"}";
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{1} << 20}) {
    ReaderOptions options;
    options.max_row_bytes = 1024;
    options.chunk_bytes = chunk;
    auto r = read_all(text, {}, options);
    ASSERT_EQ(r.rows.size(), 1u);
    EXPECT_EQ(r.rows[0].text, "small");
    EXPECT_EQ(r.rows[0].line, 2u);
    ASSERT_EQ(r.bad.size(), 2u);
    EXPECT_EQ(r.bad[0].reason, "row larger than 1 KiB");
    EXPECT_EQ(r.bad[1].line, 3u);
  }
}

}  // namespace
}  // namespace mcinfer::data
