// The option table (mcinfer/options.h): each option's spelling, kind and help, and where its value
// lands in RunOptions and ModelOptions. One parser per kind serves every surface.
#include "mcinfer/options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <type_traits>
#include <variant>

#include "core/error.h"

namespace mcinfer {
namespace {

// A value parsed from its text, by the option's kind.
using Value = std::variant<std::string, std::int64_t, double, bool>;

template <typename Options>
struct Binding {
  std::function<void(Options&, const Value&)> set;
  std::function<std::optional<std::string>(const Options&)> get;
};

struct Entry {
  OptionSpec spec;
  Binding<RunOptions> run;
  Binding<ModelOptions> model;  // empty where a Model does not have the option
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
void assign(T& field, const Value& value) {
  if constexpr (IsOptional<T>::value) {
    typename T::value_type inner{};
    assign(inner, value);
    field = std::move(inner);
  } else if constexpr (std::is_same_v<T, bool>) {
    field = std::get<bool>(value);
  } else if constexpr (std::is_same_v<T, double>) {
    field = std::get<double>(value);
  } else if constexpr (std::is_integral_v<T>) {
    field = static_cast<T>(std::get<std::int64_t>(value));  // range checked by parse()
  } else {
    field = T(std::get<std::string>(value));  // std::string, std::filesystem::path
  }
}

template <typename T>
std::optional<std::string> render(const T& field) {
  if constexpr (IsOptional<T>::value) {
    if (!field) return std::nullopt;
    return render(*field);
  } else if constexpr (std::is_same_v<T, bool>) {
    return field ? "true" : "false";
  } else if constexpr (std::is_same_v<T, double>) {
    return fmt::format("{}", field);  // the shortest text that reads back as the same double
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(field);
  } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
    return field.string();
  } else {
    return field;
  }
}

// A field of Options or of one of its bases.
template <typename Options, typename T, typename Owner>
requires std::is_base_of_v<Owner, Options> Binding<Options> field(T Owner::*member) {
  return {[member](Options& o, const Value& v) { assign(o.*member, v); },
          [member](const Options& o) { return render(o.*member); }};
}

// A text field where "" means unset (ModelOptions' task and pooling).
template <typename Options>
Binding<Options> text_or_unset(std::string Options::*member) {
  return {[member](Options& o, const Value& v) { o.*member = std::get<std::string>(v); },
          [member](const Options& o) -> std::optional<std::string> {
            if ((o.*member).empty()) return std::nullopt;
            return o.*member;
          }};
}

// replicas: 0 is auto.
template <typename Options>
Binding<Options> replicas() {
  return {
      [](Options& o, const Value& v) { o.replicas = static_cast<int>(std::get<std::int64_t>(v)); },
      [](const Options& o) -> std::optional<std::string> {
        return o.replicas == 0 ? "auto" : std::to_string(o.replicas);
      }};
}

Binding<RunOptions> on_bad_row() {
  return {
      [](RunOptions& o, const Value& v) { o.skip_bad_rows = std::get<std::string>(v) == "skip"; },
      [](const RunOptions& o) -> std::optional<std::string> {
        return o.skip_bad_rows ? "skip" : "error";
      }};
}

// An option of `run` and of Model, in the same field of a base both share.
template <typename T, typename Owner>
Entry both(OptionSpec spec, T Owner::*member) {
  return {spec, field<RunOptions>(member), field<ModelOptions>(member)};
}

template <typename T, typename Owner>
Entry run_only(OptionSpec spec, T Owner::*member) {
  return {spec, field<RunOptions>(member), {}};
}

constexpr unsigned kRunModel = kUseRun | kUseModel;

std::vector<Entry> make_table() {
  using K = OptionKind;
  using R = RunOptions;
  using M = ModelOptions;
  std::vector<Entry> t;
  // The job: the model and the files.
  t.push_back(run_only(
      {"model_dir", K::kPath, kUseRun,
       "Hugging Face model directory (config.json, *.safetensors, tokenizer)", "model_dir", true},
      &RunSettings::model_dir));
  t.push_back(run_only({"input",
                        K::kPath,
                        kUseRun,
                        "Input rows: .csv (with a header), .jsonl or .parquet",
                        {},
                        true},
                       &RunSettings::input));
  t.push_back(run_only({"output",
                        K::kPath,
                        kUseRun,
                        "Predictions: .csv, .jsonl or .parquet, written atomically at the end",
                        {},
                        true},
                       &RunSettings::output));
  // The input's columns.
  t.push_back(run_only({"format", K::kChoice, kUseRun | kUseTokenize,
                        "Input format when the extension does not say"},
                       &RunSettings::format));
  t.push_back(
      run_only({"id_col", K::kText, kUseRun | kUseTokenize, "Id column (absent: row numbers)"},
               &RunSettings::id_col));
  t.push_back(run_only({"text_col", K::kText, kUseRun | kUseTokenize, "Text column"},
                       &RunSettings::text_col));
  t.push_back(run_only(
      {"text_pair_col", K::kText, kUseRun | kUseTokenize, "Second text column, for sentence pairs"},
      &RunSettings::text_pair_col));
  // What the model computes and how long rows are handled.
  t.push_back({{"task", K::kChoice, kRunModel,
                "classify, embed or sparse (default: sparse for a SparseEncoder, classify for a "
                "model with a head, else embed)"},
               field<R>(&R::task),
               text_or_unset(&M::task)});
  t.push_back({{"pooling", K::kChoice, kRunModel,
                "Sentence embedding: mean, cls (first token), max, mean_sqrt_len, weightedmean "
                "or lasttoken (default: the sentence-transformers Pooling module, else mean)"},
               field<R>(&R::pooling),
               text_or_unset(&M::pooling)});
  t.push_back({{"normalize", K::kToggle, kRunModel,
                "L2-normalise embeddings, or not (default: yes when the sentence-transformers "
                "modules list Normalize); --normalize=false works too"},
               field<R>(&RunSettings::normalize),
               field<M>(&M::normalize)});
  t.push_back({{"activation", K::kChoice, kRunModel,
                "Classifier outputs (auto: a sentence-transformers cross-encoder's as "
                "CrossEncoder.predict applies it, else from problem_type)"},
               field<R>(&R::activation),
               field<M>(&M::activation)});
  t.push_back({{"outputs", K::kText, kRunModel,
                "Several outputs of one pass, in this order: classify: probs, logits, cls, mean "
                "(pooled hidden states); embed: mean, cls, max, normalized. CSV columns "
                "<output>.<label> / <output>.e<i>, one JSONL field per output"},
               field<R>(&RunSettings::outputs),
               field<M>(&M::outputs)});
  t.push_back({{"prompt", K::kText, kRunModel | kUseText,
                "Text prepended to every text (to the first of a pair), as "
                "sentence-transformers' encode(prompt=...); \"\": no prompt"},
               field<R>(&RunSettings::prompt),
               field<M>(&M::prompt)});
  t.push_back({{"prompt_name", K::kText, kRunModel | kUseText,
                "The prompt of that name in config_sentence_transformers.json, as encode("
                "prompt_name=...) (default: its default_prompt_name, if any)"},
               field<R>(&RunSettings::prompt_name),
               field<M>(&M::prompt_name)});
  t.push_back({{"tokenizer_compat", K::kChoice, kRunModel | kUseText,
                "auto: transformers 5's tokenizer when config.json was written by transformers "
                "5, else the files'; file: as tokenizer.json says; transformers5: as "
                "transformers 5 rebuilds it from the tokenizer class"},
               field<R>(&R::tokenizer_compat),
               field<M>(&M::tokenizer_compat)});
  t.push_back({{"max_len", K::kCount, kRunModel | kUseTokenize,
                "Tokens per sequence, special tokens included (default: the model's)"},
               field<R>(&RunSettings::max_len),
               field<M>(&M::max_len)});
  t.push_back({{"sparse_top_k", K::kPositive, kRunModel,
                "sparse: keep each row's K largest token weights (sentence-transformers' "
                "max_active_dims; default: the model's, else every nonzero)"},
               field<R>(&RunSettings::sparse_top_k),
               field<M>(&M::sparse_top_k)});
  t.push_back({{"truncate_dim", K::kPositive, kRunModel,
                "embed: keep the first N values of each embedding (Matryoshka), then normalise "
                "if the model normalises (sentence-transformers' truncate_dim)"},
               field<R>(&RunSettings::truncate_dim),
               field<M>(&M::truncate_dim)});
  t.push_back({{"long_input", K::kChoice, kRunModel,
                "Rows longer than --max-len: truncate (counted in the report), or chunk: cut into "
                "windows as Hugging Face's return_overflowing_tokens does, every window "
                "computed, one output per row reduced from them"},
               field<R>(&R::long_input),
               field<M>(&M::long_input)});
  t.push_back({{"stride", K::kCount, kRunModel | kUseTokenize,
                "chunk: tokens each window shares with the one before (HF's stride); tokenize: "
                "print every window"},
               field<R>(&RunSettings::stride),
               field<M>(&M::stride)});
  t.push_back({{"chunk_reduce", K::kChoice, kRunModel,
                "chunk: a row's output from its windows': mean, max, first, or token-weighted "
                "(mean weighted by each window's tokens)"},
               field<R>(&R::chunk_reduce),
               field<M>(&M::chunk_reduce)});
  t.push_back({{"chunk_values", K::kChoice, kRunModel,
                "chunk, classifiers: reduce the windows' logits (then the activation) or their "
                "probs"},
               field<R>(&R::chunk_values),
               field<M>(&M::chunk_values)});
  // The precision and its check.
  t.push_back({{"precision", K::kChoice, kRunModel,
                "fp32, bf16, int8, or auto: bf16 where the CPU has native bf16 dot products "
                "(avx512_bf16, AMX), else fp32 (auto never picks int8)"},
               field<R>(&R::precision),
               field<M>(&M::precision)});
  t.push_back(both({"check_precision", K::kCount, kRunModel,
                    "Rows sampled evenly from the input (a Model: from its first call's) and "
                    "compared against fp32 before a reduced-precision run (default 32; 0: no "
                    "check); with int8 they also choose which GEMMs stay out of int8"},
                   &PrecisionGate::check_precision_rows));
  t.push_back(both({"min_cosine",
                    K::kNumber,
                    kRunModel,
                    "Stop before writing anything (exit 4) if a sampled row's cosine to fp32 is "
                    "lower",
                    {},
                    false,
                    -1.0,
                    1.0},
                   &PrecisionGate::min_cosine));
  t.push_back(both({"min_agreement",
                    K::kNumber,
                    kRunModel,
                    "Stop (exit 4) if the agreement with fp32 is lower: classifiers the share of "
                    "sampled rows with the fp32 argmax (rerankers: row pairs ranked alike), "
                    "sparse encoders the mean share of a row's fp32 nonzeros among its largest "
                    "values",
                    {},
                    false,
                    0.0,
                    1.0},
                   &PrecisionGate::min_agreement));
  t.push_back(both({"int8_keep", K::kText, kRunModel,
                    "int8: GEMMs kept in bf16 (fp32 without native bf16), e.g. 11.ffn_out,3 (all "
                    "of layer 3) or none (default: chosen on the --check-precision rows)"},
                   &PrecisionGate::int8_keep));
  // Where and how the rows run.
  t.push_back({{"replicas", K::kReplicas, kRunModel,
                "Model replicas (threads), or auto: one per physical core"},
               replicas<R>(),
               replicas<M>()});
  t.push_back({{"threads_per_replica", K::kPositive, kRunModel, "Threads inside each replica"},
               field<R>(&RunSettings::threads_per_replica),
               field<M>(&M::threads_per_replica)});
  t.push_back({{"backend", K::kText, kRunModel | kUseInspect,
                "Device family: cpu (every core of this machine) or pjrt (TPU, GPU or CPU devices "
                "through a PJRT plugin)"},
               field<R>(&RunSettings::backend),
               field<M>(&M::backend)});
  t.push_back({{"plugin", K::kText, kRunModel | kUseInspect,
                "--backend pjrt: the plugin, a .so file or cpu, cuda, tpu"},
               field<R>(&RunSettings::plugin),
               field<M>(&M::plugin)});
  t.push_back({{"devices", K::kCount, kRunModel | kUseInspect,
                "--backend pjrt: devices to use (0, the default: all; a CPU plugin makes that "
                "many, by default one per physical core)"},
               field<R>(&RunSettings::devices),
               field<M>(&M::devices)});
  t.push_back(run_only({"schedule", K::kChoice, kUseRun,
                        "dynamic (length-sorted, token budget) or static (DistributedSampler)"},
                       &R::schedule));
  t.push_back(run_only({"batch_size", K::kPositive, kUseRun, "Rows per batch (static)"},
                       &RunSettings::batch_size));
  // A 64-bit count: the memory plan, not the parser, refuses a budget too large for the machine.
  t.push_back(run_only({"batch_tokens",
                        K::kPositive,
                        kUseRun,
                        "Padded tokens per batch (dynamic): rows x the longest row",
                        {},
                        false,
                        1,
                        1e15},
                       &RunSettings::batch_tokens));
  t.push_back(run_only({"shards_dir", K::kPath, kUseRun,
                        "Keep the per-replica shards here (default: temporary; a distributed "
                        "run: a directory every rank reaches)"},
                       &RunSettings::shards_dir));
  t.push_back(run_only({"rank", K::kCount, kUseRun,
                        "This process's rank in a distributed run (default: from the launcher: "
                        "Open MPI, MPICH, Slurm, Kubernetes Indexed Job, torchrun)"},
                       &RunSettings::rank));
  t.push_back(run_only({"world", K::kPositive, kUseRun,
                        "Processes sharing the input (default: from the launcher; 1: one "
                        "machine)"},
                       &RunSettings::world));
  t.push_back(run_only({"resume", K::kSwitch, kUseRun,
                        "Continue the interrupted run whose shards are in --shards-dir: only "
                        "rows not yet durable are run"},
                       &RunSettings::resume));
  t.push_back({{"on_bad_row", K::kChoice, kUseRun,
                "error: stop at the first bad row; skip: count and go on"},
               on_bad_row(),
               {}});
  t.push_back(run_only({"report", K::kPath, kUseRun, "Write a JSON run report here"},
                       &RunSettings::report_path));
  t.push_back(run_only({"quiet", K::kSwitch, kUseRun, "No progress or summary on stderr"},
                       &RunSettings::quiet));
  t.push_back({{"pin_threads", K::kSwitch, kRunModel,
                "Pin each replica's threads to cores of their own (--no-pin: do not)", "--no-pin"},
               field<R>(&RunSettings::pin_threads),
               field<M>(&M::pin_threads)});
  t.push_back(run_only(
      {"profile", K::kSwitch, kUseRun, "Time every op and stage; the report gets time_share"},
      &RunSettings::profile));
  return t;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = make_table();
  return table;
}

const std::vector<OptionSpec>& specs() {
  static const std::vector<OptionSpec> table = [] {
    std::vector<OptionSpec> out;
    for (const Entry& e : entries()) out.push_back(e.spec);
    return out;
  }();
  return table;
}

const Entry& entry_of(const OptionSpec& option) {
  for (const Entry& e : entries())
    if (e.spec.name == option.name) return e;
  fail_usage("internal: '{}' is not in the option table", option.name);
}

// A whole number, as the CLI spells it: digits only (a sign is refused: "-1" is not 2^64 - 1).
std::optional<std::int64_t> parse_whole(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

Value parse(const OptionSpec& option, std::string_view text, OptionSurface surface) {
  const std::string name = option_name(option, surface);
  switch (option.kind) {
    case OptionKind::kPath:
      if (text.empty()) fail_usage("{} must be a path, not ''", name);
      return std::string(text);
    case OptionKind::kText:
      return std::string(text);
    case OptionKind::kChoice:
    case OptionKind::kToggle:
    case OptionKind::kSwitch: {
      const std::vector<std::string> choices = option_choices(option);
      bool known = false;
      for (const std::string& c : choices) known = known || c == text;
      if (!known) fail_usage("{} must be {}, not '{}'", name, fmt::join(choices, ", "), text);
      if (option.kind == OptionKind::kChoice) return std::string(text);
      return text == "true";
    }
    case OptionKind::kReplicas:
      if (text == "auto") return std::int64_t{0};
      [[fallthrough]];
    case OptionKind::kCount:
    case OptionKind::kPositive: {
      const std::optional<std::int64_t> value = parse_whole(text);
      const bool positive = option.kind != OptionKind::kCount;
      // Most counts land in an int; a 64-bit one says its limit in `high`.
      const std::int64_t limit = option.high > 0 ? static_cast<std::int64_t>(option.high)
                                                 : std::numeric_limits<int>::max();
      if (!value || (positive && *value < 1) || *value > limit)
        fail_usage("{} must be a whole number{}{} up to {}, not '{}'", name,
                   positive ? ", 1 or more" : ", 0 or more",
                   option.kind == OptionKind::kReplicas ? " (or auto)" : "", limit, text);
      return *value;
    }
    case OptionKind::kNumber: {
      double value = 0;
      const char* end = text.data() + text.size();
      const auto [ptr, ec] = std::from_chars(text.data(), end, value);
      if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) ||
          value < option.low || value > option.high)
        fail_usage("{} must be a number from {} to {}, not '{}'", name, option.low, option.high,
                   text);
      return value;
    }
  }
  fail_usage("internal: option {} has no kind", name);
}

}  // namespace

std::span<const OptionSpec> option_table() { return specs(); }

const OptionSpec* find_option(std::string_view name) {
  for (const OptionSpec& s : specs())
    if (s.name == name) return &s;
  return nullptr;
}

std::string cli_name(const OptionSpec& option) {
  if (!option.cli.empty()) return std::string(option.cli);
  std::string flag = "--" + std::string(option.name);
  for (char& c : flag)
    if (c == '_') c = '-';
  return flag;
}

std::string option_name(const OptionSpec& option, OptionSurface surface) {
  return surface == OptionSurface::kCli ? cli_name(option) : std::string(option.name);
}

std::vector<std::string> option_choices(const OptionSpec& option) {
  if (option.kind == OptionKind::kToggle || option.kind == OptionKind::kSwitch)
    return {"true", "false"};
  if (option.kind != OptionKind::kChoice) return {};
  return run_flag_choices(cli_name(option));
}

RunOptions cli_run_defaults() {
  RunOptions o;
  o.precision = "auto";
  return o;
}

std::optional<std::string> option_default(const OptionSpec& option) {
  static const RunOptions defaults = cli_run_defaults();
  return get_option(defaults, option);
}

void set_option(RunOptions& options, const OptionSpec& option, std::string_view text,
                OptionSurface surface) {
  entry_of(option).run.set(options, parse(option, text, surface));
}

void set_option(ModelOptions& options, const OptionSpec& option, std::string_view text,
                OptionSurface surface) {
  const Entry& e = entry_of(option);
  if (!e.model.set)
    fail_usage("{} is an option of mcinfer run, not of a Model", option_name(option, surface));
  e.model.set(options, parse(option, text, surface));
}

std::optional<std::string> get_option(const RunOptions& options, const OptionSpec& option) {
  return entry_of(option).run.get(options);
}

std::optional<std::string> get_option(const ModelOptions& options, const OptionSpec& option) {
  const Entry& e = entry_of(option);
  if (!e.model.get) return std::nullopt;
  return e.model.get(options);
}

}  // namespace mcinfer
