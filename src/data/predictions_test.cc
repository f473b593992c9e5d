#include "data/predictions.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "data/prediction_reader.h"

namespace mcinfer::data {
namespace {

PredictionSchema labels(std::vector<std::string> columns) {
  return {std::move(columns), false, {}};
}

TEST(Predictions, CsvHeaderAndRows) {
  auto schema = labels({"neg", "pos"});
  EXPECT_EQ(prediction_header(schema, LineFormat::kCsv), "id,neg,pos\n");
  EXPECT_EQ(prediction_header(schema, LineFormat::kJsonl), "");
  std::string out;
  append_prediction(schema, LineFormat::kCsv, RowId{"7", true}, std::vector<float>{0.1f, 0.9f},
                    out);
  append_prediction(schema, LineFormat::kCsv, RowId{"8", false}, std::vector<double>{0.25, 1e-300},
                    out);
  EXPECT_EQ(out, "7,0.1,0.9\n8,0.25,1e-300\n");
  EXPECT_EQ(prediction_header(labels({"a,b", "c"}), LineFormat::kCsv), "id,\"a,b\",c\n");
}

TEST(Predictions, CsvIdQuotingOnlyWhenNeeded) {
  auto q = [](std::string_view id) {
    std::string out;
    append_csv_field(id, out);
    return out;
  };
  EXPECT_EQ(q("plain id"), "plain id");
  EXPECT_EQ(q("a,b"), "\"a,b\"");
  EXPECT_EQ(q("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(q("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(q("cr\r"), "\"cr\r\"");
  EXPECT_EQ(q(" lead"), "\" lead\"");
  EXPECT_EQ(q("trail "), "\"trail \"");
  EXPECT_EQ(q("é😀"), "é😀");
  EXPECT_EQ(q(""), "");
}

TEST(Predictions, JsonlRowsAndEscaping) {
  std::string out;
  append_prediction(labels({"neg", "po\"s"}), LineFormat::kJsonl, RowId{"a\"\\\n\x01", true},
                    std::vector<float>{0.5f, 0.25f}, out);
  EXPECT_EQ(out, "{\"id\":\"a\\\"\\\\\\n\\u0001\",\"neg\":0.5,\"po\\\"s\":0.25}\n");
  out.clear();
  append_prediction(PredictionSchema{{"e0", "e1"}, true, {}}, LineFormat::kJsonl,
                    RowId{"5.0", false}, std::vector<double>{1.5, -2}, out);
  EXPECT_EQ(out, "{\"id\":5.0,\"embedding\":[1.5,-2]}\n");
}

TEST(Predictions, NonFiniteValuesAreVisible) {
  std::string csv, jsonl;
  std::vector<double> v{std::nan(""), std::numeric_limits<double>::infinity()};
  append_prediction(labels({"a", "b"}), LineFormat::kCsv, RowId{"1", true}, v, csv);
  append_prediction(labels({"a", "b"}), LineFormat::kJsonl, RowId{"1", true}, v, jsonl);
  EXPECT_EQ(csv, "1,nan,inf\n");
  EXPECT_EQ(jsonl, "{\"id\":\"1\",\"a\":null,\"b\":null}\n");
}

// Shortest round-trip: every printed float and double parses back to the same bits, and
// no shorter decimal would (checked against printing with one digit less).
TEST(Predictions, FloatsRoundTripExactly) {
  std::mt19937_64 rng(7);
  auto schema = labels({"v"});
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    float f = static_cast<float>(
        std::ldexp(static_cast<double>(rng() % 100000) / 7.0, static_cast<int>(rng() % 60) - 30));
    std::string out;
    append_prediction(schema, LineFormat::kCsv, RowId{"i", true}, std::vector<double>{d}, out);
    double back = 0;
    std::string_view text = std::string_view(out).substr(2, out.size() - 3);
    std::from_chars(text.data(), text.data() + text.size(), back);
    ASSERT_EQ(std::memcmp(&back, &d, sizeof d), 0) << out;
    out.clear();
    append_prediction(schema, LineFormat::kCsv, RowId{"i", true}, std::vector<float>{f}, out);
    text = std::string_view(out).substr(2, out.size() - 3);
    float fb = 0;
    std::from_chars(text.data(), text.data() + text.size(), fb);
    ASSERT_EQ(fb, f) << out;
    EXPECT_LE(text.size(), 15u) << out;  // shortest float forms stay short (no double noise)
  }
}

// What run writes, merge reads back: ids and values unchanged, both formats.
TEST(Predictions, ReadBackByPredictionReader) {
  std::vector<std::string> ids{"plain", "a,b", "q\"uote", " sp ", "new\nline", "é", ""};
  for (LineFormat format : {LineFormat::kCsv, LineFormat::kJsonl}) {
    for (bool embedding : {false, true}) {
      PredictionSchema schema{embedding ? std::vector<std::string>{"e0", "e1", "e2"}
                                        : std::vector<std::string>{"x", "y", "z"},
                              embedding,
                              {}};
      std::string text = prediction_header(schema, format);
      std::vector<std::vector<double>> values;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        values.push_back({0.1 * i, -1.0 / (i + 3), 1e10 * i});
        append_prediction(schema, format, RowId{ids[i], true}, values.back(), text);
      }
      auto reader = PredictionReader::open_bytes(text, "t", format);
      ASSERT_TRUE(reader->has_schema());
      EXPECT_EQ(reader->schema().columns, schema.columns);
      EXPECT_EQ(reader->schema().embedding, embedding);
      PredictionRow row;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        ASSERT_TRUE(reader->next(row));
        EXPECT_EQ(row.id, ids[i]);
        EXPECT_EQ(std::vector<double>(row.values.begin(), row.values.end()), values[i]);
      }
      EXPECT_FALSE(reader->next(row));
      EXPECT_FALSE(reader->warning().has_value());
    }
  }
}

}  // namespace
}  // namespace mcinfer::data
