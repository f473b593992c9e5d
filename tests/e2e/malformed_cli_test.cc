// Hostile and broken inputs through `mcinfer run`: each gives a clear message naming the file
// (and line), a non-zero exit, no crash, and no output file.
#include <gtest/gtest.h>

#include <fstream>

#include "support/cli.h"
#include "support/paths.h"
#include "support/safetensors_writer.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;

const fs::path kModel = testing::fixture("text/roberta_cls");

struct Outcome {
  testing::CliResult result;
  bool output_exists;
};

Outcome run_on(const fs::path& model, const fs::path& input, std::vector<std::string> extra = {}) {
  auto output = input.parent_path() / "out.csv";
  fs::remove(output);
  std::vector<std::string> args = {"run",      model.string(),  "--input", input.string(),
                                   "--output", output.string(), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  Outcome o{testing::run_cli(args), false};
  o.output_exists = fs::exists(output);
  return o;
}

void expect_refused(const Outcome& o, const std::string& where, const std::string& what) {
  EXPECT_EQ(o.result.exit_code, 1) << o.result.err;
  EXPECT_NE(o.result.err.find(where), std::string::npos) << o.result.err;
  EXPECT_NE(o.result.err.find(what), std::string::npos) << o.result.err;
  EXPECT_FALSE(o.output_exists);
  EXPECT_EQ(o.result.err.find("Sanitizer"), std::string::npos) << o.result.err;
}

fs::path write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(MalformedCsv, UnbalancedQuote) {
  auto dir = testing::scratch_dir("malformed_quote");
  auto in = write(dir / "in.csv", "id,text\n1,fine\n2,\"opens here\n3,and never\n4,closes\n");
  expect_refused(run_on(kModel, in), in.string() + ":3:", "quote");
}

TEST(MalformedCsv, NulBytes) {
  auto dir = testing::scratch_dir("malformed_nul");
  // The 25 bytes include the literal's final NUL: a second bad row on line 4. The error must
  // name line 3 however the replicas race to read (one once read on past line 3 while another
  // was failing on it, and line 4 was reported: issue 11).
  auto in = write(dir / "in.csv", std::string("id,text\n1,ok\n2,bad\0byte\n", 25));
  expect_refused(run_on(kModel, in, {"--replicas", "4"}), in.string() + ":3:", "NUL");
}

TEST(MalformedCsv, MixedLineEndingsAreReadAsRfc4180Allows) {
  // CRLF and LF in one file is not an error: RFC 4180 readers (and pandas) accept both.
  auto dir = testing::scratch_dir("malformed_endings");
  auto in = write(dir / "in.csv", "id,text\r\n1,one\n2,two\r\n3,\"three\r\nlines\"\n");
  auto o = run_on(kModel, in);
  EXPECT_EQ(o.result.exit_code, 0) << o.result.err;
  EXPECT_EQ(testing::read_file(dir / "out.csv").substr(0, 5), "id,LA");
}

TEST(MalformedCsv, HeaderOnlyAndEmptyFiles) {
  auto dir = testing::scratch_dir("malformed_empty");
  auto header_only = write(dir / "header.csv", "id,text\n");
  expect_refused(run_on(kModel, header_only), header_only.string(),
                 "no rows to run (only a header)");
  auto empty = write(dir / "empty.csv", "");
  expect_refused(run_on(kModel, empty), empty.string(), "no header");
  auto wrong_column = write(dir / "cols.csv", "id,body\n1,x\n");
  expect_refused(run_on(kModel, wrong_column), wrong_column.string(), "text");
}

class MalformedModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = testing::scratch_dir(std::string("malformed_model_") +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    model = dir / "model";
    fs::create_directories(model);
    for (const auto& f : fs::directory_iterator(kModel))
      fs::copy(f.path(), model / f.path().filename());
    input = write(dir / "in.csv", "id,text\n1,hello\n");
  }
  fs::path dir, model, input;
};

TEST_F(MalformedModel, TruncatedSafetensors) {
  fs::resize_file(model / "model.safetensors", fs::file_size(model / "model.safetensors") / 3);
  expect_refused(run_on(model, input), "model.safetensors", "run past the end");
}

TEST_F(MalformedModel, LyingHeader) {
  auto tensors = testing::read_tensors(model / "model.safetensors");
  tensors[0].shape[0] += 1;  // claims more elements than its bytes hold
  testing::write_tensors(model / "model.safetensors", tensors);
  expect_refused(run_on(model, input), "model.safetensors", "bytes but data_offsets give");
}

TEST_F(MalformedModel, ConfigDisagreesWithWeights) {
  std::string config = testing::read_file(model / "config.json");
  auto pos = config.find("\"hidden_size\": 32");
  ASSERT_NE(pos, std::string::npos);
  config.replace(pos, 17, "\"hidden_size\": 64");
  write(model / "config.json", config);
  expect_refused(run_on(model, input), "model.safetensors", "config.json implies");
}

TEST_F(MalformedModel, BrokenTokenizerFile) {
  write(model / "vocab.json", "{\"a\": 0, ");
  expect_refused(run_on(model, input), "vocab.json", "JSON");
}

}  // namespace
}  // namespace mcinfer
