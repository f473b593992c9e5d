#include "data/prediction_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace mcinfer::data {
namespace {

struct Table {
  std::vector<std::string> columns;
  bool embedding = false;
  bool has_schema = false;
  std::vector<std::string> ids;
  std::vector<std::vector<double>> values;
  std::vector<std::uint64_t> lines;
  std::optional<std::string> warning;
};

Table read(std::string_view bytes, LineFormat format) {
  Table t;
  for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{3}}) {
    ReaderOptions options;
    options.chunk_bytes = chunk;
    auto reader = PredictionReader::open_bytes(
        bytes, format == LineFormat::kCsv ? "s.csv" : "s.jsonl", format, options);
    Table u;
    u.has_schema = reader->has_schema();
    u.columns = reader->schema().columns;
    u.embedding = reader->schema().embedding;
    PredictionRow row;
    while (reader->next(row)) {
      u.ids.emplace_back(row.id);
      u.values.emplace_back(row.values.begin(), row.values.end());
      u.lines.push_back(row.line);
    }
    u.warning = reader->warning();
    if (chunk != (std::size_t{1} << 20)) {
      EXPECT_EQ(u.ids, t.ids);
      EXPECT_EQ(u.values, t.values);
    } else {
      t = u;
    }
  }
  return t;
}

std::string error_of(std::string_view bytes, LineFormat format) {
  try {
    read(bytes, format);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PredictionReader, CsvLabelsInAnyColumnOrder) {
  auto t = read("neg,id,pos\n0.25,a,0.75\n1e-3,\"b,c\",+2\n 3 ,d,-0\n", LineFormat::kCsv);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_FALSE(t.embedding);
  EXPECT_EQ(t.ids, (std::vector<std::string>{"a", "b,c", "d"}));
  EXPECT_EQ(t.values[1], (std::vector<double>{1e-3, 2}));
  EXPECT_EQ(t.values[2], (std::vector<double>{3, -0.0}));
  EXPECT_EQ(t.lines, (std::vector<std::uint64_t>{2, 3, 4}));
}

TEST(PredictionReader, CsvEmbeddingColumns) {
  auto t = read("id,e0,e1\n1,0.5,0.25\n", LineFormat::kCsv);
  EXPECT_TRUE(t.embedding);
  EXPECT_FALSE(read("id,e1,e0\n1,0.5,0.25\n", LineFormat::kCsv).embedding);
}

TEST(PredictionReader, CsvBadValuesNameFileLineAndColumn) {
  EXPECT_EQ(error_of("id,neg,pos\n1,0.1,0.9\n2,nan,0.5\n", LineFormat::kCsv),
            "s.csv:3: column 'neg': NaN is not a prediction");
  EXPECT_EQ(error_of("id,neg,pos\n1,0.1,-inf\n", LineFormat::kCsv),
            "s.csv:2: column 'pos': infinity is not a prediction");
  EXPECT_EQ(error_of("id,neg,pos\n1,abc,0.5\n", LineFormat::kCsv),
            "s.csv:2: column 'neg': 'abc' is not a number");
  EXPECT_EQ(error_of("id,neg,pos\n1,,0.5\n", LineFormat::kCsv),
            "s.csv:2: column 'neg': empty value");
  EXPECT_EQ(error_of("id,neg,pos\n1,1e999,0.5\n", LineFormat::kCsv),
            "s.csv:2: column 'neg': 1e999 is out of the range of a double");
  EXPECT_EQ(error_of("id,neg,pos\n1,0.5\n2,0.5,0.5\n", LineFormat::kCsv),
            "s.csv:2: expected 3 fields, got 2");
  EXPECT_EQ(error_of("neg,pos\n1,2\n", LineFormat::kCsv),
            "s.csv: no column 'id' in the header (columns found: neg, pos)");
  EXPECT_EQ(error_of("id,a,a\n", LineFormat::kCsv),
            "s.csv:1: column 'a' appears twice in the header (fields 2 and 3)");
  EXPECT_EQ(error_of("id\n1\n", LineFormat::kCsv), "s.csv: no value columns besides 'id'");
}

TEST(PredictionReader, TornLastLineIsDroppedWithAWarning) {
  for (std::string torn : {"3,0.5", "3,0.5,", "3,\"x", "3,0.5,1e", "3,0.5,-"}) {
    auto t = read("id,neg,pos\n1,0.1,0.9\n2,0.2,0.8\n" + torn, LineFormat::kCsv);
    EXPECT_EQ(t.ids, (std::vector<std::string>{"1", "2"})) << torn;
    ASSERT_TRUE(t.warning.has_value()) << torn;
    EXPECT_NE(t.warning->find("s.csv:4: last line is torn"), std::string::npos) << *t.warning;
  }
  // The same bad line with its newline is an error, not a torn line.
  EXPECT_EQ(error_of("id,neg,pos\n1,0.1,0.9\n3,0.5\n", LineFormat::kCsv),
            "s.csv:3: expected 3 fields, got 2");
  // A last line without newline that parses is kept, with a warning.
  auto t = read("id,neg,pos\n1,0.1,0.9", LineFormat::kCsv);
  EXPECT_EQ(t.ids, (std::vector<std::string>{"1"}));
  ASSERT_TRUE(t.warning.has_value());
  EXPECT_NE(t.warning->find("does not end with a line break"), std::string::npos);
  // An unclosed quote that swallows several lines is an error, never a silent drop.
  EXPECT_NE(error_of("id,neg,pos\n\"1,0.1,0.9\n2,0.2,0.8", LineFormat::kCsv).find("never closes"),
            std::string::npos);
}

TEST(PredictionReader, EmptyFileHasNoSchema) {
  auto t = read("", LineFormat::kCsv);
  EXPECT_FALSE(t.has_schema);
  EXPECT_TRUE(t.ids.empty());
  EXPECT_FALSE(read("", LineFormat::kJsonl).has_schema);
  auto torn = read("{\"id\": 1, \"neg\": 0.", LineFormat::kJsonl);
  EXPECT_FALSE(torn.has_schema);
  EXPECT_TRUE(torn.warning.has_value());
}

TEST(PredictionReader, JsonlLabelsKeysInAnyOrder) {
  auto t =
      read("{\"id\": 1, \"neg\": 0.25, \"pos\": 0.75}\n{\"pos\": 1, \"id\": \"x\", \"neg\": 0}\n",
           LineFormat::kJsonl);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_EQ(t.ids, (std::vector<std::string>{"1", "x"}));
  EXPECT_EQ(t.values[1], (std::vector<double>{0, 1}));
}

TEST(PredictionReader, JsonlEmbedding) {
  auto t = read("{\"id\": 1, \"embedding\": [0.5, -2e5]}\n{\"id\": 2, \"embedding\": [1, 2]}\n",
                LineFormat::kJsonl);
  EXPECT_TRUE(t.embedding);
  EXPECT_EQ(t.columns, (std::vector<std::string>{"e0", "e1"}));
  EXPECT_EQ(t.values[0], (std::vector<double>{0.5, -2e5}));
  EXPECT_EQ(error_of("{\"id\": 1, \"embedding\": [0.5]}\n{\"id\": 2, \"embedding\": [1, 2]}\n",
                     LineFormat::kJsonl),
            "s.jsonl:2: field 'embedding' has more than 1 items");
  EXPECT_EQ(error_of("{\"id\": 1, \"embedding\": [0.5, 1], \"pos\": 1}\n", LineFormat::kJsonl),
            "s.jsonl:1: field 'embedding' comes with other value fields");
}

// Several outputs of one run (`run --outputs probs,cls`): CSV columns <output>.<label|e<i>>,
// JSONL one field per output; both read back to the same columns and groups.
TEST(PredictionReader, OutputGroupsInCsvAndJsonl) {
  const std::vector<std::string> columns = {"probs.neg", "probs.pos", "cls.e0", "cls.e1", "cls.e2"};
  const std::vector<OutputGroup> groups = {{"probs", 2, true}, {"cls", 3, false}};
  auto csv =
      read("id,probs.neg,probs.pos,cls.e0,cls.e1,cls.e2\n1,0.25,0.75,1,2,3\n", LineFormat::kCsv);
  EXPECT_EQ(csv.columns, columns);
  auto jsonl = read(
      "{\"id\": 1, \"probs\": {\"neg\": 0.25, \"pos\": 0.75}, \"cls\": [1, 2, 3]}\n"
      "{\"cls\": [4, 5, 6], \"id\": 2, \"probs\": {\"pos\": 0.5, \"neg\": 0.5}}\n",
      LineFormat::kJsonl);
  EXPECT_EQ(jsonl.columns, columns);
  EXPECT_FALSE(jsonl.embedding);
  EXPECT_EQ(jsonl.values[0], csv.values[0]);
  EXPECT_EQ(jsonl.values[1], (std::vector<double>{0.5, 0.5, 4, 5, 6}));
  for (auto format : {LineFormat::kCsv, LineFormat::kJsonl}) {
    const std::string bytes =
        format == LineFormat::kCsv
            ? "id,probs.neg,probs.pos,cls.e0,cls.e1,cls.e2\n"
            : "{\"id\": 1, \"probs\": {\"neg\": 0.25, \"pos\": 0.75}, \"cls\": [1, 2, 3]}\n";
    auto reader = PredictionReader::open_bytes(bytes, "s", format);
    EXPECT_EQ(reader->schema().groups, groups);
    // Written back, the same bytes.
    PredictionSchema schema = reader->schema();
    std::string out = prediction_header(schema, format);
    if (format == LineFormat::kJsonl) {
      append_prediction(schema, format, RowId{"1", false}, std::vector<double>{0.25, 0.75, 1, 2, 3},
                        out);
      EXPECT_EQ(out, "{\"id\":1,\"probs\":{\"neg\":0.25,\"pos\":0.75},\"cls\":[1,2,3]}\n");
    } else {
      EXPECT_EQ(out, "id,probs.neg,probs.pos,cls.e0,cls.e1,cls.e2\n");
    }
  }
  // Only the outputs' own names make groups, and only consecutive columns: a classifier's labels
  // "a.b" and "a.c" stay columns.
  EXPECT_TRUE(output_groups_of({"a.b", "a.c"}).empty());
  EXPECT_TRUE(output_groups_of({"cls.e0", "mean.e0", "cls.e1"}).empty());
  EXPECT_TRUE(output_groups_of({"cls.e0", "neg"}).empty());
  EXPECT_EQ(output_groups_of({"mean.e0", "mean.e1", "probs.x"}),
            (std::vector<OutputGroup>{{"mean", 2, false}, {"probs", 1, true}}));
  EXPECT_EQ(output_groups_of({"mean.e1", "mean.e0"}),
            (std::vector<OutputGroup>{{"mean", 2, true}}));  // not e0..e{n-1}: labels
}

TEST(PredictionReader, JsonlOutputGroupsBadRows) {
  const std::string first =
      "{\"id\": 1, \"probs\": {\"neg\": 0.25, \"pos\": 0.75}, \"cls\": [1, 2]}\n";
  auto bad = [&](const std::string& row) {
    return error_of(first + row + "\n", LineFormat::kJsonl);
  };
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5}, \"cls\": [1, 2]}"),
            "s.jsonl:2: field 'probs': missing 'pos'");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5, \"pos\": 1, \"x\": 0}, \"cls\": [1, 2]}"),
            "s.jsonl:2: field 'probs': unexpected label 'x' (the first row, line 1, has 2 labels)");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5, \"neg\": 1}, \"cls\": [1, 2]}"),
            "s.jsonl:2: field 'probs': 'neg' appears twice");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5, \"pos\": 1}, \"cls\": [1, 2, 3]}"),
            "s.jsonl:2: field 'cls' has more than 2 items");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5, \"pos\": 1}, \"cls\": [1]}"),
            "s.jsonl:2: field 'cls' has 1 items, expected 2");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5, \"pos\": 1}}"),
            "s.jsonl:2: missing field 'cls'");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": [0.5, 1], \"cls\": [1, 2]}"),
            "s.jsonl:2: field 'probs': expected object as in the first row (line 1), got array");
  EXPECT_EQ(bad("{\"id\": 2, \"probs\": {\"neg\": 0.5, \"pos\": 1}, \"cls\": [1, 2], "
                "\"cls\": [1, 2]}"),
            "s.jsonl:2: field 'cls' appears twice");
  EXPECT_EQ(error_of("{\"id\": 1, \"cls\": [1], \"pos\": 1}\n", LineFormat::kJsonl),
            "s.jsonl:1: field 'cls' comes with other value fields");
  EXPECT_EQ(error_of("{\"id\": 1, \"cls\": [1], \"scores\": [1]}\n", LineFormat::kJsonl),
            "s.jsonl:1: field 'scores': an array or object field must be one of probs, logits, "
            "cls, mean, max, normalized (embedding alone is an embedding)");
  EXPECT_EQ(error_of("{\"id\": 1, \"cls\": []}\n", LineFormat::kJsonl),
            "s.jsonl:1: field 'cls' is empty");
}

TEST(PredictionReader, JsonlBadRows) {
  const std::string first = "{\"id\": 1, \"neg\": 0.25, \"pos\": 0.75}\n";
  EXPECT_EQ(error_of(first + "{\"id\": 2, \"neg\": null, \"pos\": 1}\n", LineFormat::kJsonl),
            "s.jsonl:2: column 'neg': null is not a prediction (a NaN or infinity written as "
            "null?)");
  EXPECT_EQ(error_of(first + "{\"id\": 2, \"neg\": 0.5}\n", LineFormat::kJsonl),
            "s.jsonl:2: missing field 'pos'");
  EXPECT_EQ(
      error_of(first + "{\"id\": 2, \"neg\": 0.5, \"pos\": 1, \"x\": 2}\n", LineFormat::kJsonl),
      "s.jsonl:2: unexpected field 'x' (the first row, line 1, has: id, neg, pos)");
  EXPECT_EQ(error_of(first + "{\"neg\": 0.5, \"pos\": 1}\n", LineFormat::kJsonl),
            "s.jsonl:2: missing field 'id'");
  EXPECT_EQ(error_of(first + "{\"id\": 2, \"neg\": \"0.5\", \"pos\": 1}\n", LineFormat::kJsonl),
            "s.jsonl:2: column 'neg': expected a number, got string");
  EXPECT_EQ(error_of(first + "{\"id\": [2], \"neg\": 0.5, \"pos\": 1}\n", LineFormat::kJsonl),
            "s.jsonl:2: field 'id': expected a string or a number, got array");
  EXPECT_EQ(
      error_of(first + "{\"id\": 2, \"neg\": 0.5, \"neg\": 0.5, \"pos\": 1}\n", LineFormat::kJsonl),
      "s.jsonl:2: field 'neg' appears twice");
  auto torn = read(first + "{\"id\": 2, \"neg\": 0.5, \"po", LineFormat::kJsonl);
  EXPECT_EQ(torn.ids, (std::vector<std::string>{"1"}));
  ASSERT_TRUE(torn.warning.has_value());
  EXPECT_NE(torn.warning->find("s.jsonl:2: last line is torn"), std::string::npos);
}

}  // namespace
}  // namespace mcinfer::data
