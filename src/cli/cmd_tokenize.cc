// mcinfer tokenize: the token ids (or pieces) a model's tokenizer gives, one JSON array per
// line; the same tokenizer and truncation `run` uses.

#include <fmt/format.h>

#include <iostream>

#include "api/choices.h"
#include "commands.h"
#include "core/error.h"
#include "core/json.h"
#include "data/rows.h"
#include "model/model_dir.h"
#include "sched/row_feeder.h"
#include "sched/run_plan.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::cli {
namespace {

struct TokenizeFlags {
  std::string model_dir, input;
  bool pair = false;
  bool tokens = false;
  bool no_truncation = false;
  // The table's options (mcinfer/options.h): the text flags, the input's columns and format,
  // --max-len and --stride, parsed and refused as `run` parses them.
  TextFlags text;
};

void print_encoding(const tokenizer::Tokenizer& tok, const tokenizer::Encoding& enc, bool as_tokens,
                    std::string& out) {
  out.clear();
  out.push_back('[');
  if (as_tokens) {
    auto pieces = tok.tokens(enc);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (i) out.push_back(',');
      out += Json(pieces[i]).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
  } else {
    for (std::size_t i = 0; i < enc.ids.size(); ++i) {
      if (i) out.push_back(',');
      out += std::to_string(enc.ids[i]);
    }
  }
  out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

int run_tokenize(const TokenizeFlags& f) {
  const RunOptions given = f.text.options();
  // absent: as run (0 is refused, not "the default"); set: every window, as run's chunks.
  const std::optional<std::size_t> stride =
      f.text.table.given("stride") ? std::optional(given.stride) : std::nullopt;
  if (stride && f.no_truncation) fail_usage("--stride cuts windows: not with --no-truncation");
  // The tokenizer files, and config.json only as far as it goes: what AutoTokenizer.save_pretrained
  // writes has none.
  const auto dir = model::ModelDir::open(f.model_dir, model::ModelDir::Use::kTokenize);
  if (!dir.has_tokenizer()) {
    fail(
        "{}: no tokenizer files (tokenizer.json, vocab.txt, vocab.json, sentencepiece.bpe.model or "
        "spm.model)",
        f.model_dir);
  }
  sched::TaskRequest request;
  request.prompt = given.prompt;
  request.prompt_name = given.prompt_name;
  request.tokenizer_compat = api::parse_choices(given, OptionSurface::kCli).tokenizer_compat;
  sched::TaskPlan plan;
  sched::plan_text(dir, request, plan);
  const tokenizer::Tokenizer* tok = plan.tokenizer.get();
  fmt::print(stderr, "mcinfer: {}\n", sched::describe_text_plan(plan));
  std::size_t max_len = 0;  // 0: no truncation
  if (!f.no_truncation) {
    max_len = dir.max_len(tok->model_max_length(), given.max_len).value;
  }
  // As run does: the prompt before the first text, and the strip of sentence-transformers < 5.4.
  std::string buffer;
  auto prepare_first = [&](std::string_view text) {
    return sched::prepare_text(text, plan.prompt.value, plan.strip_text, buffer);
  };
  auto prepare = [&](std::string_view text) {
    return plan.strip_text ? model::strip_python_whitespace(text) : text;
  };
  std::string out;
  std::size_t invalid = 0;
  auto emit = [&](std::string_view text, std::optional<std::string_view> pair) {
    std::vector<tokenizer::Encoding> encodings;
    if (stride) {
      encodings = tok->encode_windows(text, pair, max_len, *stride);
    } else {
      encodings.push_back(tok->encode(text, pair, max_len));
    }
    for (const auto& enc : encodings) {
      invalid += enc.invalid_utf8;
      print_encoding(*tok, enc, f.tokens, out);
    }
  };
  if (!f.input.empty()) {
    if (f.pair && !given.text_pair_col) fail_usage("--pair with --input needs --text-pair-col");
    data::ColumnSpec columns;
    columns.id_col = given.id_col;
    columns.text_col = given.text_col;
    columns.text_pair_col = given.text_pair_col;
    auto reader =
        data::RowReader::open(f.input, data::resolve_input_format(f.input, given.format), columns);
    data::Row row;
    data::BadRow bad;
    for (;;) {
      auto r = reader->next(row, bad);
      if (r == data::RowReader::Result::kEnd) break;
      if (r == data::RowReader::Result::kBadRow) fail("{}:{}: {}", f.input, bad.line, bad.reason);
      std::optional<std::string_view> pair;
      if (row.text_pair) pair = prepare(*row.text_pair);
      emit(prepare_first(row.text), pair);
    }
  } else {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      std::optional<std::string_view> pair;
      std::string_view text = line;
      if (f.pair) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos)
          fail_usage("--pair: a line without a tab between the two texts");
        text = std::string_view(line).substr(0, tab);
        pair = prepare(std::string_view(line).substr(tab + 1));
      }
      emit(prepare_first(text), pair);
    }
  }
  std::fflush(stdout);
  if (invalid)
    fmt::print(stderr, "mcinfer: replaced {} invalid UTF-8 sequence(s) with U+FFFD\n", invalid);
  return kExitOk;
}

}  // namespace

Action add_tokenize_command(CLI::App& app, const Invocation&) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* sub =
      app.add_subcommand("tokenize", "Print the token ids of each line (stdin) or row (--input)");
  sub->add_option("model_dir", f->model_dir, "Hugging Face model directory with tokenizer files")
      ->required();
  sub->add_flag("--no-truncation", f->no_truncation, "Do not truncate");
  sub->add_flag("--pair", f->pair,
                "Two texts per line, separated by a tab (or --text-pair-col with --input)");
  sub->add_flag("--tokens", f->tokens, "Print the token strings instead of ids");
  sub->add_option("--input", f->input,
                  "Read rows from a CSV or JSONL file instead of lines from stdin");
  add_text_flags(sub, f->text, kUseTokenize);
  return [f] { return run_tokenize(*f); };
}

}  // namespace mcinfer::cli
