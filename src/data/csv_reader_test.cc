#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "data/csv_parser.h"
#include "data/rows.h"
#include "support/paths.h"

namespace mcinfer::data {
namespace {

using namespace std::string_literals;

struct Event {
  bool bad = false;
  std::uint64_t index = 0, line = 0;
  std::string id, text, reason;
  bool id_is_string = true;
};

std::vector<Event> read_all(std::string_view bytes, const ReaderOptions& options = {},
                            ColumnSpec columns = {}) {
  auto reader = RowReader::open_bytes(bytes, "in.csv", LineFormat::kCsv, columns, options);
  std::vector<Event> events;
  Row row;
  BadRow bad;
  for (;;) {
    auto r = reader->next(row, bad);
    if (r == RowReader::Result::kEnd) break;
    if (r == RowReader::Result::kBadRow) {
      events.push_back({true, bad.index, bad.line, "", "", bad.reason});
    } else {
      events.push_back({false, row.index, row.line, row.id.text, row.text, "", row.id.is_string});
    }
  }
  EXPECT_EQ(reader->bytes_read(), bytes.size());
  return events;
}

std::string error_of(std::string_view bytes, ColumnSpec columns = {}) {
  try {
    read_all(bytes, {}, columns);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Reference: tools/gen_data_fixtures.py records what Python's csv.reader makes of random
// RFC 4180 files (quotes, embedded separators and line breaks, mixed LF/CRLF/CR, blank
// lines, no final newline), with each record's first line.
TEST(CsvParser, MatchesPythonCsvReader) {
  Json files = read_json_file(testing::fixture("data/csv_files.json"));
  ASSERT_GE(files.size(), 500u);
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{1} << 20}) {
    for (const auto& f : files) {
      std::string text = f["text"];
      StreamBuffer in = StreamBuffer::from_bytes(text, chunk);
      CsvParser parser(in, 1 << 20);
      CsvRecord record;
      std::size_t i = 0;
      while (parser.next(record)) {
        ASSERT_LT(i, f["records"].size()) << text;
        const auto& want = f["records"][i];
        EXPECT_EQ(record.problem, CsvRecord::Problem::kNone) << text;
        EXPECT_EQ(record.line, want["line"].get<std::uint64_t>()) << text << " record " << i;
        std::vector<std::string> got(record.fields.begin(), record.fields.end());
        EXPECT_EQ(got, want["fields"].get<std::vector<std::string>>()) << text;
        ++i;
      }
      EXPECT_EQ(i, f["records"].size()) << text;
    }
  }
}

TEST(CsvRows, QuotedFieldsWithSeparatorsQuotesAndNewlines) {
  auto rows = read_all(
      "id,text\n"
      "1,\"a, b\"\n"
      "2,\"say \"\"hi\"\"\"\n"
      "3,\"two\nlines\"\n"
      "4,plain\n");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].text, "a, b");
  EXPECT_EQ(rows[1].text, "say \"hi\"");
  EXPECT_EQ(rows[2].text, "two\nlines");
  EXPECT_EQ(rows[2].line, 4u);
  EXPECT_EQ(rows[3].line, 6u);  // the row after a two-line row
  EXPECT_EQ(rows[3].id, "4");
  EXPECT_TRUE(rows[3].id_is_string);
}

TEST(CsvRows, CrlfMixedEndingsAndBom) {
  auto rows = read_all("\xEF\xBB\xBFid,text\r\n1,a\r\n2,b\n3,c\r4,d");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].id, "1");  // the BOM is not part of the first column's name
  EXPECT_EQ(rows[0].text, "a");
  EXPECT_EQ(rows[1].text, "b");
  EXPECT_EQ(rows[2].text, "c");
  EXPECT_EQ(rows[3].text, "d");
  EXPECT_EQ(rows[3].line, 5u);
}

TEST(CsvRows, NoIdColumnMeansRowNumbers) {
  auto rows = read_all("text\nfirst\n\nsecond\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, "0");
  EXPECT_FALSE(rows[0].id_is_string);
  EXPECT_EQ(rows[1].id, "1");  // blank lines are not rows
  EXPECT_EQ(rows[1].line, 4u);
}

TEST(CsvRows, MissingTextColumnListsColumnsFound) {
  std::string e = error_of("id,sentence,label\n1,a,2\n");
  EXPECT_NE(e.find("in.csv"), std::string::npos) << e;
  EXPECT_NE(e.find("no column 'text'"), std::string::npos) << e;
  EXPECT_NE(e.find("id, sentence, label"), std::string::npos) << e;
}

TEST(CsvRows, DuplicateUsedColumnIsAnError) {
  std::string e = error_of("id,text,text\n1,a,b\n");
  EXPECT_NE(e.find("column 'text' appears twice"), std::string::npos) << e;
}

TEST(CsvRows, EmptyFileIsAnErrorHeaderOnlyIsZeroRows) {
  EXPECT_NE(error_of("").find("no header"), std::string::npos);
  EXPECT_NE(error_of("\n\r\n").find("no header"), std::string::npos);
  EXPECT_NE(error_of("\xEF\xBB\xBF").find("no header"), std::string::npos);
  EXPECT_TRUE(read_all("id,text\n").empty());
  EXPECT_TRUE(read_all("id,text").empty());
}

TEST(CsvRows, RaggedRowsAreBadRowsAndReadingGoesOn) {
  auto rows = read_all("id,text\n1,a,extra\n2\n3,c\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].bad);
  EXPECT_EQ(rows[0].line, 2u);
  EXPECT_EQ(rows[0].reason, "expected 2 fields, got 3");
  EXPECT_TRUE(rows[1].bad);
  EXPECT_EQ(rows[1].reason, "expected 2 fields, got 1");
  EXPECT_FALSE(rows[2].bad);
  EXPECT_EQ(rows[2].index, 2u);  // bad rows are counted
  EXPECT_EQ(rows[2].text, "c");
}

TEST(CsvRows, UnclosedQuoteAtEndOfFile) {
  auto rows = read_all("id,text\n1,ok\n2,\"never\ncloses\n3,x\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[1].bad);
  EXPECT_EQ(rows[1].line, 3u);
  EXPECT_EQ(rows[1].reason, "field 'text': the quote opened on line 3 never closes");
}

TEST(CsvRows, BytesAfterClosingQuote) {
  auto rows = read_all("id,text\n1,\"a\"b\n2,c\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].bad);
  EXPECT_NE(rows[0].reason.find("field 'text': unexpected 'b' after the closing quote"),
            std::string::npos)
      << rows[0].reason;
  EXPECT_FALSE(rows[1].bad);
  EXPECT_EQ(rows[1].text, "c");
}

TEST(CsvRows, QuoteInsideUnquotedFieldIsKept) {
  auto rows = read_all("id,text\n1,a 5\" screen\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].text, "a 5\" screen");
}

TEST(CsvRows, NulByteIsABadRowNamingTheField) {
  auto rows = read_all("id,text\n1,a\0b\n2,c\n"s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].bad);
  EXPECT_NE(rows[0].reason.find("field 'text': NUL byte"), std::string::npos) << rows[0].reason;
  EXPECT_FALSE(rows[1].bad);
}

TEST(CsvRows, InvalidUtf8PassesThrough) {
  auto rows = read_all("id,text\n1,a\xFF\xC3(b\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].bad);
  EXPECT_EQ(rows[0].text, "a\xFF\xC3(b");
}

TEST(CsvRows, TrailingCommaIsAnEmptyField) {
  auto rows = read_all("id,text,pair\n1,a,\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].bad);
}

TEST(CsvRows, TextPairColumn) {
  ColumnSpec columns;
  columns.text_pair_col = "second";
  auto reader =
      RowReader::open_bytes("id,text,second\n1,a,b\n", "p.csv", LineFormat::kCsv, columns, {});
  Row row;
  BadRow bad;
  ASSERT_EQ(reader->next(row, bad), RowReader::Result::kRow);
  ASSERT_TRUE(row.text_pair.has_value());
  EXPECT_EQ(*row.text_pair, "b");
  columns.text_pair_col = "missing";
  EXPECT_THROW(RowReader::open_bytes("id,text\n", "p.csv", LineFormat::kCsv, columns, {}), Error);
}

TEST(CsvRows, IdsOnlyDoesNotNeedText) {
  ColumnSpec columns;
  columns.read_text = false;
  auto rows = read_all("id,other\n7,x\n", {}, columns);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, "7");
  EXPECT_EQ(rows[0].text, "");
}

TEST(CsvRows, RowSizeLimitIsABadRowAndReadingGoesOn) {
  std::string big(1000, 'x');
  std::string text = "id,text\n1,a\n2," + big + "\n3,\"" + big + "\nstill\"\n4,d\n";
  for (std::size_t chunk :
       {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1} << 20}) {
    ReaderOptions options;
    options.max_row_bytes = 100;
    options.chunk_bytes = chunk;
    auto rows = read_all(text, options);
    ASSERT_EQ(rows.size(), 4u) << "chunk " << chunk;
    EXPECT_FALSE(rows[0].bad);
    EXPECT_TRUE(rows[1].bad);
    EXPECT_EQ(rows[1].reason, "row larger than 100 bytes");
    EXPECT_EQ(rows[1].line, 3u);
    EXPECT_TRUE(rows[2].bad);
    EXPECT_EQ(rows[2].line, 4u);
    EXPECT_FALSE(rows[3].bad) << "chunk " << chunk;
    EXPECT_EQ(rows[3].line, 6u);
    EXPECT_EQ(rows[3].text, "d");
  }
}

TEST(CsvRows, HugeUnclosedQuoteNamesWhereItOpened) {
  std::string text = "id,text\n1,\"" + std::string(5000, 'y') + "\n";
  ReaderOptions options;
  options.max_row_bytes = 256;
  options.chunk_bytes = 64;
  auto rows = read_all(text, options);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].reason, "row larger than 256 bytes (the quote opened on line 2 never closes)");
}

// The default limit on a real file: a 70 MiB line is refused without holding it twice.
TEST(CsvRows, DefaultLimitOnAFile) {
  auto dir = testing::scratch_dir("csv_default_limit");
  auto path = dir / "big.csv";
  {
    std::ofstream out(path, std::ios::binary);
    out << "id,text\n1," << std::string(std::size_t{70} << 20, 'z') << "\n2,after\n";
  }
  auto reader = RowReader::open(path, InputFormat::kCsv, ColumnSpec{});
  Row row;
  BadRow bad;
  ASSERT_EQ(reader->next(row, bad), RowReader::Result::kBadRow);
  EXPECT_EQ(bad.reason, "row larger than 64 MiB");
  EXPECT_EQ(bad.line, 2u);
  ASSERT_EQ(reader->next(row, bad), RowReader::Result::kRow);
  EXPECT_EQ(row.text, "after");
  EXPECT_EQ(reader->next(row, bad), RowReader::Result::kEnd);
  EXPECT_EQ(reader->bytes_read(), reader->file_size());
  std::filesystem::remove_all(dir);
}

TEST(CsvRows, FileErrorsNameThePath) {
  try {
    RowReader::open("/nonexistent/x.csv", InputFormat::kCsv, ColumnSpec{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.csv"), std::string::npos);
  }
  EXPECT_THROW(RowReader::open("/tmp", InputFormat::kCsv, ColumnSpec{}), Error);
}

TEST(CsvRows, ResolveFormat) {
  EXPECT_EQ(resolve_input_format("a.csv", std::nullopt), InputFormat::kCsv);
  EXPECT_EQ(resolve_input_format("a.CSV", std::nullopt), InputFormat::kCsv);
  EXPECT_EQ(resolve_input_format("a.jsonl", std::nullopt), InputFormat::kJsonl);
  EXPECT_EQ(resolve_input_format("a.ndjson", std::nullopt), InputFormat::kJsonl);
  EXPECT_EQ(resolve_input_format("a.parquet", std::nullopt), InputFormat::kParquet);
  EXPECT_EQ(resolve_input_format("a.PQ", std::nullopt), InputFormat::kParquet);
  EXPECT_EQ(resolve_input_format("a.txt", std::string("csv")), InputFormat::kCsv);
  EXPECT_EQ(resolve_input_format("a.txt", std::string("parquet")), InputFormat::kParquet);
  EXPECT_THROW(resolve_input_format("a.txt", std::nullopt), UsageError);
  EXPECT_THROW(resolve_input_format("a.tsv", std::nullopt), UsageError);
  EXPECT_THROW(resolve_input_format("a.csv", std::string("xml")), UsageError);
  try {
    resolve_input_format("a.csv", std::string("xml"), "--input-format");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--input-format"), std::string::npos) << e.what();
  }
  EXPECT_EQ(resolve_output_format("b.pq"), OutputFormat::kParquet);
  EXPECT_EQ(resolve_output_format("b.json"), OutputFormat::kJsonl);
  EXPECT_THROW(resolve_output_format("b.txt"), UsageError);
  EXPECT_EQ(run_output_format("b.txt"), OutputFormat::kCsv);
  EXPECT_EQ(shard_format(OutputFormat::kParquet, RowKind::kEmbedding), LineFormat::kCsv);
  EXPECT_EQ(shard_format(OutputFormat::kJsonl, RowKind::kColumns), LineFormat::kJsonl);
  // Sparse rows are never shards of vocabulary-wide dense rows: JSONL whatever the output.
  EXPECT_EQ(shard_format(OutputFormat::kParquet, RowKind::kSparse), LineFormat::kJsonl);
  EXPECT_EQ(shard_format(OutputFormat::kJsonl, RowKind::kSparse), LineFormat::kJsonl);
  EXPECT_FALSE(line_format(OutputFormat::kParquet));
}

}  // namespace
}  // namespace mcinfer::data
