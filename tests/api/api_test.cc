// The public C++ API (include/mcinfer/) as a program outside the library uses it: the consumer
// (consumer.cc, public headers only) against transformers on the text fixtures, token ids
// against the text path, and refusals named.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/json.h"
#include "data/rows.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/predictions.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;

struct ConsumerRun {
  testing::CliResult result;
  std::string header;                     // "# backend precision task replicas"
  std::vector<std::vector<double>> rows;  // one per input row
};

ConsumerRun run_consumer(const std::vector<std::string>& args, const std::string& input) {
  const fs::path dir = testing::scratch_dir("api");
  const fs::path in = dir / "stdin";
  std::ofstream(in, std::ios::binary) << input;
  testing::CliOptions options;
  options.stdin_path = in.string();
  options.program = MCINFER_API_CONSUMER_PATH;
  ConsumerRun run;
  run.result = testing::run_cli(args, options);
  std::istringstream out(run.result.out);
  std::string line;
  while (std::getline(out, line)) {
    if (line.rfind("#", 0) == 0) {
      run.header = line;
      continue;
    }
    std::istringstream values(line);
    run.rows.emplace_back();
    double v = 0;
    while (values >> v) run.rows.back().push_back(v);
  }
  return run;
}

// The fixture's input.csv as the consumer's stdin, and the ids of its rows.
std::string consumer_input(const fs::path& csv, bool pairs, std::vector<std::string>& ids) {
  data::ColumnSpec columns;
  if (pairs) columns.text_pair_col = "text_b";
  auto reader = data::RowReader::open(csv, data::InputFormat::kCsv, columns);
  data::Row row;
  data::BadRow bad;
  std::string input;
  while (reader->next(row, bad) == data::RowReader::Result::kRow) {
    ids.push_back(row.id.text);
    const long pair_bytes = row.text_pair ? static_cast<long>(row.text_pair->size()) : -1;
    input +=
        fmt::format("{} {}\n", row.text.size(), pair_bytes) + row.text + row.text_pair.value_or("");
  }
  return input;
}

class ApiText : public ::testing::TestWithParam<std::string> {};

TEST_P(ApiText, ConsumerPredictionsMatchTransformers) {
  const fs::path dir = testing::fixture("text/" + GetParam());
  const Json meta = read_json_file(dir / "reference.json");
  std::vector<std::string> args = {dir.string(), "--max-len", "64"};
  bool pairs = false;
  for (const auto& flag : meta["flags"]) {
    const std::string f = flag;
    if (f == "--text-pair-col") pairs = true;
    if (f == "--task" || f == "embed" || f == "--normalize") args.push_back(f);
  }
  std::vector<std::string> ids;
  const ConsumerRun run = run_consumer(args, consumer_input(dir / "input.csv", pairs, ids));
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.header.rfind("# cpu fp32 ", 0), 0u) << run.header;
  ASSERT_EQ(run.rows.size(), ids.size());
  // expected.csv holds one row per id, duplicates averaged (pandas groupby mean).
  std::map<std::string, std::pair<std::vector<double>, int>> by_id;
  for (std::size_t r = 0; r < ids.size(); ++r) {
    auto& [sum, n] = by_id[ids[r]];
    sum.resize(run.rows[r].size());
    for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += run.rows[r][c];
    ++n;
  }
  const testing::Table want = testing::read_table(dir / "expected.csv");
  ASSERT_EQ(by_id.size(), want.ids.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.ids.size(); ++i) {
    const auto& [sum, n] = by_id.at(want.ids[i]);
    ASSERT_EQ(sum.size(), want.values[i].size()) << want.ids[i];
    for (std::size_t c = 0; c < sum.size(); ++c)
      worst = std::max(worst, std::abs(sum[c] / n - want.values[i][c]));
  }
  EXPECT_LE(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ApiText,
                         ::testing::Values("bert_cls", "distilbert_cls", "roberta_cls",
                                           "xlmr_embed"));

// Token ids give what the same rows' texts give (the encoding the tokenizer path made).
// Prompts through the public API (ModelOptions::prompt_name, prompt), as encode() applies them:
// sentence-transformers 6 and 3.3.1 directories (tests/fixtures/st, every case of each).
TEST(Api, PromptsAsEncodeAppliesThem) {
  for (const char* name : {"st6_bert_prompts", "roberta_prompts_cls_mean"}) {
    SCOPED_TRACE(name);
    const fs::path dir = testing::fixture(std::string("st/") + name);
    const Json meta = read_json_file(dir / "reference.json");
    testing::Reference ref(dir / "reference.safetensors");
    std::vector<std::string> ids;
    const std::string input = consumer_input(dir / "input.csv", false, ids);
    for (const Json& c : meta["cases"]) {
      SCOPED_TRACE(c["name"].get<std::string>());
      std::vector<std::string> args = {dir.string()};
      for (const char* key : {"prompt_name", "prompt"}) {
        if (!c["encode_args"].contains(key)) continue;
        args.push_back(std::string("--") +
                       (std::string(key) == "prompt" ? "prompt" : "prompt-name"));
        args.push_back(c["encode_args"][key]);
      }
      const ConsumerRun run = run_consumer(args, input);
      ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
      const auto want = ref.floats("embeddings_" + c["name"].get<std::string>());
      ASSERT_EQ(run.rows.size(), ids.size());
      const std::size_t dim = want.size() / ids.size();
      double worst = 0;
      for (std::size_t r = 0; r < ids.size(); ++r) {
        ASSERT_EQ(run.rows[r].size(), dim);
        for (std::size_t j = 0; j < dim; ++j)
          worst = std::max(worst, std::abs(run.rows[r][j] - want[r * dim + j]));
      }
      EXPECT_LE(worst, 1e-5);
    }
  }
}

// Token ids cannot carry a prompt: refused while one is in force, accepted with prompt "".
TEST(Api, TokenIdsRefusedWhileAPromptIsInForce) {
  const std::string model = testing::fixture("st/st6_bert_prompts").string();
  ConsumerRun run = run_consumer({model, "--ids"}, "4\n2 40 41 3\n");
  EXPECT_EQ(run.result.exit_code, 2) << run.result.err;
  EXPECT_NE(run.result.err.find("token ids cannot carry it"), std::string::npos) << run.result.err;
  run = run_consumer({model, "--ids", "--prompt", ""}, "4\n2 40 41 3\n");
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_EQ(run.rows.size(), 1u);
}

TEST(Api, TokenIdsAndRefusals) {
  const fs::path dir = testing::fixture("models/bert_cls_single");
  const ConsumerRun ok = run_consumer({dir.string(), "--ids"}, "3\n2 7 3\n4\n2 9 11 3\n");
  ASSERT_EQ(ok.result.exit_code, 0) << ok.result.err;
  ASSERT_EQ(ok.rows.size(), 2u);
  for (const auto& row : ok.rows) {
    double sum = 0;
    for (double v : row) sum += v;
    EXPECT_NEAR(sum, 1.0, 1e-6);  // softmax probabilities
  }
  const ConsumerRun bad = run_consumer({dir.string(), "--ids"}, "2\n2 99999\n");
  EXPECT_EQ(bad.result.exit_code, 2);
  EXPECT_NE(bad.result.err.find("row 0: token id 99999 at position 1 is outside the vocabulary"),
            std::string::npos)
      << bad.result.err;
  const ConsumerRun no_tokenizer = run_consumer({dir.string()}, "1 -1\na");
  EXPECT_EQ(no_tokenizer.result.exit_code, 2);
  EXPECT_NE(no_tokenizer.result.err.find("no tokenizer files"), std::string::npos)
      << no_tokenizer.result.err;
  const ConsumerRun task = run_consumer({dir.string(), "--task", "summarize", "--ids"}, "");
  EXPECT_EQ(task.result.exit_code, 2);
  // The option table's words (a Model's keyword), every task named.
  EXPECT_NE(task.result.err.find("task must be classify, embed, sparse, not 'summarize'"),
            std::string::npos)
      << task.result.err;
}

}  // namespace
}  // namespace mcinfer
