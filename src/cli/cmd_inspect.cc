// mcinfer inspect: what a model directory holds and what one replica of it costs.

#include <fmt/format.h>

#include "api/choices.h"
#include "backends/registry.h"
#include "commands.h"
#include "core/json.h"
#include "mcinfer/run_settings.h"
#include "model/encoder_desc.h"
#include "model/model_dir.h"
#include "sched/run_plan.h"
#include "sched/run_report.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::cli {
namespace {

struct InspectOptions {
  std::string model_dir;
  bool json = false;
  backend::BackendOptions backend;
  TextFlags text;
};

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

// What run does to each text before the model (the tokenizer's build, the prompt) with these
// flags.
sched::TaskPlan text_plan_for(const model::ModelDir& dir, const TextFlags& flags) {
  const RunOptions given = flags.options();
  sched::TaskRequest request;
  request.prompt = given.prompt;
  request.prompt_name = given.prompt_name;
  request.tokenizer_compat = api::parse_choices(given, OptionSurface::kCli).tokenizer_compat;
  return sched::plan_task(dir, request);
}

void print_head(const model::ModelConfig& c) {
  if (c.head != model::Head::kSequenceClassification) {
    fmt::print("head             none\n");
    return;
  }
  fmt::print("head             sequence classification, {} labels, {}\n", c.num_labels,
             model::problem_type_name(c.problem_type));
  for (std::size_t i = 0; i < c.labels.size() && i < 20; ++i)
    fmt::print("  {:>4}  {}\n", i, c.labels[i]);
  if (c.labels.size() > 20) fmt::print("  ... {} more\n", c.labels.size() - 20);
}

// How each text is prepared, and which libraries saved the directory.
void print_text_and_origin(const model::ModelDir& dir, const model::ModelConfig& c,
                           const sched::TaskPlan& text_plan) {
  fmt::print("text             {}\n", sched::describe_text_plan(text_plan));
  fmt::print("saved by         transformers {}{}{}\n",
             dir.transformers_version().value_or("(not recorded)"),
             dir.st_behaviour().version.empty()
                 ? ""
                 : fmt::format(", sentence-transformers {}", dir.st_behaviour().version),
             c.torch_dtype.empty() ? "" : fmt::format("; dtype {}", c.torch_dtype));
}

void print_embedding(const model::ModelDir& dir, const model::EmbeddingPlan& plan) {
  fmt::print("pooling          {} ({})\n", plan.pooling.value.name(), plan.pooling.source);
  for (const auto& d : plan.dense) {
    fmt::print("dense            {}: {} -> {}, {}{} ({})\n", d.module, d.in_features,
               d.out_features, model::dense_activation_name(d.activation),
               d.bias ? "" : ", no bias", d.source);
  }
  if (plan.dense.empty()) fmt::print("dense            none\n");
  fmt::print("normalize        {} ({})\n", plan.normalize.value ? "yes" : "no",
             plan.normalize.source);
  fmt::print(
      "embedding        {} values per row{}\n", plan.output_dim,
      dir.strips_text() ? "; texts stripped of edge whitespace first (sentence-transformers)" : "");
}

// A SparseEncoder: what SpladePooling does with the MLM logits, and the top-k in force.
void print_sparse(const model::ModelDir& dir, const model::StSplade& sp,
                  const model::ModelConfig& c) {
  fmt::print(
      "sparse           SpladePooling {} of {} over the MLM logits ({})\n",
      model::kSpladePoolingNames.name(sp.pooling),
      sp.activation == model::SpladeActivation::kRelu ? "log1p(relu(x))" : "log1p(log1p(relu(x)))",
      sp.source);
  if (const auto k = dir.max_active_dims()) {
    fmt::print("top-k            {} (config_sentence_transformers.json: max_active_dims)\n", *k);
  } else {
    fmt::print("top-k            every nonzero (no max_active_dims; --sparse-top-k K)\n");
  }
  fmt::print("output           JSONL rows {{\"id\", \"indices\", \"values\"}} over {} tokens\n",
             c.vocab_size);
}

// What inspect reports, gathered once for both of its forms: what `run` applies with no flag,
// where each choice comes from, and what one replica costs.
struct Inspected {
  Inspected(const InspectOptions& o)
      : backend(backend::make_backend(o.backend)),
        dir(model::ModelDir::open(o.model_dir)),
        prepared(backend->prepare(dir, {}, &warnings)),
        c(prepared->config()),
        task(dir.default_task()),
        plan(dir.embedding_plan(std::nullopt, std::nullopt)),
        text_plan(text_plan_for(dir, o.text)),
        network(model::describe_model(dir).summary()) {
    std::optional<std::size_t> tokenizer_limit;
    if (const auto* tok = text_plan.tokenizer.get()) {
      tokenizer_limit = tok->model_max_length();
      specials = tok->special_tokens(false);
    }
    max_len = dir.max_len(tokenizer_limit, std::nullopt);
    // --long-input chunk: the content tokens of one window at the default max length.
    window = max_len.value > specials ? max_len.value - specials : 0;
    // A batch of 1,000 tokens whose longest sequence is as long as the model allows (the worst
    // case for the attention scores).
    longest = std::min<std::int64_t>(kPerTokens, c.max_sequence_length());
    activation = backend->replica_bytes(c, kPerTokens, longest, 1, model::Precision::kFp32);
    // The largest batch a run with the default flags gives a replica (dynamic schedule: the token
    // budget, or one row as long as the model allows): the working set the memory plan checks.
    largest_batch = std::max<std::int64_t>(mcinfer::RunSettings{}.batch_tokens,
                                           static_cast<std::int64_t>(max_len.value));
    largest_bytes =
        backend->replica_bytes(c, largest_batch, max_len.value, 1, model::Precision::kFp32);
  }

  static constexpr std::int64_t kPerTokens = 1000;
  std::vector<std::string> warnings;  // before `prepared`, which adds to it
  std::unique_ptr<backend::Backend> backend;
  model::ModelDir dir;
  std::shared_ptr<const backend::PreparedModel> prepared;
  const model::ModelConfig& c;
  model::Sourced<model::TaskKind> task;
  model::EmbeddingPlan plan;
  sched::TaskPlan text_plan;
  std::vector<std::string> network;  // the description every backend runs, line by line
  std::size_t specials = 0;
  model::Sourced<std::size_t> max_len{0, ""};
  std::size_t window = 0;
  std::int64_t longest = 0, largest_batch = 0;
  std::uint64_t activation = 0, largest_bytes = 0;
};

Json inspect_json(const InspectOptions& o, const Inspected& in) {
  const model::ModelConfig& c = in.c;
  const backend::WeightStats& s = in.prepared->stats();
  Json labels = Json::array();
  for (const auto& l : c.labels) labels.push_back(l);
  Json report = {
      {"model_dir", o.model_dir},
      {"model_type", c.model_type},
      {"architecture", c.architecture.empty() ? c.family_name() : c.architecture},
      {"layers", c.num_layers},
      {"hidden_size", c.hidden_size},
      {"attention_heads", c.num_heads},
      {"head_dim", c.head_dim()},
      {"intermediate_size", c.intermediate_size},
      {"hidden_act", c.hidden_act_name},
      {"network", in.network},
      {"vocab_size", c.vocab_size},
      {"max_sequence_length", c.max_sequence_length()},
      {"parameters", s.parameters},
      {"dtype", s.dtype},
      {"weight_file_bytes", s.file_bytes},
      {"packed_gemm_bytes", s.packed_bytes},
      {"converted_bytes", s.converted_bytes},
      {"task", model::task_name(in.task.value)},
      {"task_source", in.task.source},
      {"embedding", in.plan.to_json()},
      {"max_len", in.max_len.value},
      {"max_len_source", in.max_len.source},
      {"strips_text", in.dir.strips_text()},
      {"text", sched::text_plan_json(in.text_plan)},
      {"saved_by",
       {{"transformers", in.dir.transformers_version().value_or("")},
        {"sentence_transformers", in.dir.st_behaviour().version},
        {"dtype", c.torch_dtype}}},
      {"num_labels", c.num_labels},
      {"labels", labels},
      {"activation_bytes_per_1000_tokens", in.activation},
      {"activation_bytes_largest_batch",
       {{"tokens", in.largest_batch}, {"longest", in.max_len.value}, {"bytes", in.largest_bytes}}},
      {"special_tokens", in.specials},
      {"window_content_tokens", in.window},
      {"warnings", in.warnings},
      {"backend",
       {{"name", in.backend->name()},
        {"description", in.backend->description()},
        {"replica_slots", in.backend->replica_slots()},
        {"devices", in.backend->device_lines()}}},
  };
  if (c.head == model::Head::kSequenceClassification)
    report["problem_type"] = std::string(model::problem_type_name(c.problem_type));
  if (const auto& a = in.text_plan.activation) {
    report["activation"] = {{"value", model::output_activation_name(a->value)},
                            {"source", a->source}};
  }
  if (const model::StSplade* sp = in.dir.splade()) {
    report["sparse"] = {{"pooling", model::kSpladePoolingNames.name(sp->pooling)},
                        {"activation", model::kSpladeActivationNames.name(sp->activation)},
                        {"source", sp->source},
                        {"top_k", in.dir.max_active_dims().value_or(0)},
                        {"values_per_row", c.vocab_size}};
  }
  return report;
}

void print_inspect(const InspectOptions& o, const Inspected& in) {
  const model::ModelConfig& c = in.c;
  const backend::WeightStats& s = in.prepared->stats();
  fmt::print("model            {}\n", o.model_dir);
  fmt::print("architecture     {} (model_type {})\n",
             c.architecture.empty() ? c.family_name() : c.architecture, c.model_type);
  fmt::print("layers           {}, hidden {}, {} heads of {}, intermediate {}, {}\n", c.num_layers,
             c.hidden_size, c.num_heads, c.head_dim(), c.intermediate_size, c.hidden_act_name);
  for (std::size_t i = 0; i < in.network.size(); ++i)
    fmt::print("{}{}\n", i == 0 ? "network          " : "                 ", in.network[i]);
  fmt::print("vocabulary       {} tokens, sequences up to {} tokens\n", c.vocab_size,
             c.max_sequence_length());
  fmt::print("parameters       {} ({:.1f} M), stored as {}\n", s.parameters, s.parameters / 1e6,
             s.dtype);
  fmt::print("weights          {} in the files; {} packed for the GEMM", human_bytes(s.file_bytes),
             human_bytes(s.packed_bytes));
  if (s.converted_bytes) fmt::print("; {} converted to float32", human_bytes(s.converted_bytes));
  fmt::print("\n");
  print_head(c);
  fmt::print("task             {} ({})\n", model::task_name(in.task.value), in.task.source);
  if (const auto& a = in.text_plan.activation) {
    fmt::print("activation       {} ({})\n", model::output_activation_name(a->value), a->source);
  }
  if (const model::StSplade* sp = in.dir.splade()) {
    print_sparse(in.dir, *sp, c);
  } else {
    print_embedding(in.dir, in.plan);
  }
  fmt::print("max length       {} tokens ({})\n", in.max_len.value, in.max_len.source);
  print_text_and_origin(in.dir, c, in.text_plan);
  fmt::print("backend          {}: {}\n", in.backend->name(), in.backend->description());
  for (const auto& line : in.backend->device_lines()) fmt::print("  {}\n", line);
  fmt::print("activations      {} per replica per 1,000 batch tokens (longest sequence {})\n",
             human_bytes(in.activation), in.longest);
  fmt::print(
      "                 {} per replica for the largest batch of a default run ({} tokens, rows up "
      "to {})\n",
      human_bytes(in.largest_bytes), in.largest_batch, in.max_len.value);
  if (in.dir.has_tokenizer()) {
    fmt::print(
        "long rows        --long-input chunk: windows of {} text tokens + {} special tokens; a row "
        "of T text tokens takes 1 + ceil((T - {}) / ({} - stride)) windows, each planned and "
        "computed as a row of up to {} tokens\n",
        in.window, in.specials, in.window, in.window, in.max_len.value);
  }
  for (const auto& w : in.warnings) fmt::print("note             {}\n", w);
}

int run_inspect(InspectOptions& o) {
  o.backend = sched::backend_options(o.text.options());  // the table's backend flags too
  const Inspected in(o);
  if (o.json) {
    fmt::print("{}\n", inspect_json(o, in).dump(2));
  } else {
    print_inspect(o, in);
  }
  return kExitOk;
}

}  // namespace

Action add_inspect_command(CLI::App& app, const Invocation& invocation) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* sub =
      app.add_subcommand("inspect", "Describe a model directory and the memory one replica needs");
  sub->add_option("model_dir", o->model_dir, "Hugging Face model directory")->required();
  sub->add_flag("--json", o->json, "Print JSON");
  add_text_flags(sub, o->text, kUseInspect);
  return [o] { return run_inspect(*o); };
}

}  // namespace mcinfer::cli
