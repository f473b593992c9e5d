#include "backends/pjrt/pjrt_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <mutex>

#include "backends/pjrt/encoder_program.h"
#include "backends/pjrt/pjrt_api.h"
#include "core/error.h"
#include "core/system.h"
#include "model/model_dir.h"
#include "model/packing.h"
#include "model/task_outputs.h"
#include "model/tensors.h"

namespace mcinfer::pjrt {
namespace {

using model::ModelConfig;
using model::Precision;

// Sequences of a compiled shape are a multiple of this (the dynamic schedule cuts batches to
// it; a window's last batch is padded up to it); a batch of more than kMaxRows runs in parts.
constexpr std::int64_t kRowMultiple = 8;
constexpr std::int64_t kMaxRows = 512;
// A SparseEncoder's program holds [kSparsePositionsPerTrip, rows, vocab] f32 logits per loop trip
// (ProgramSpec::sparse): its rows per run are capped so that those stay within this.
constexpr std::int64_t kSparseLogitBytes = std::int64_t{128} << 20;

// The rows of one run: kMaxRows, or fewer for token weights (kSparseLogitBytes).
std::int64_t max_rows(bool sparse, std::int64_t vocab) {
  if (!sparse) return kMaxRows;
  const std::int64_t fit =
      kSparseLogitBytes / (kSparsePositionsPerTrip * std::max<std::int64_t>(vocab, 1) * 4);
  return std::clamp(fit / kRowMultiple * kRowMultiple, kRowMultiple, kMaxRows);
}

// The key of a compiled program: its shape and outputs (a SparseSpec's pooling and activation).
using ProgramKey = std::tuple<std::int64_t, std::int64_t, bool, bool, int>;
int sparse_key(const std::optional<model::SparseSpec>& sparse) {
  if (!sparse) return 0;
  return 1 + 2 * static_cast<int>(sparse->pooling) + static_cast<int>(sparse->activation);
}

// One weight slot in host memory, in its device element type.
struct HostWeight {
  std::vector<std::byte> bytes;
  ElementType type = ElementType::kF32;
  Dims dims;
};

std::uint16_t to_bf16(float value) {
  // Round to nearest even, as torch's .to(bfloat16) does; NaN stays NaN.
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  return static_cast<std::uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

HostWeight host_weight(const WeightSlot& slot, std::vector<float> values, Precision precision) {
  HostWeight w;
  w.dims = slot.dims;
  if (slot.gemm && precision == Precision::kBf16) {
    w.type = ElementType::kBf16;
    w.bytes.resize(values.size() * 2);
    auto* out = reinterpret_cast<std::uint16_t*>(w.bytes.data());
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_bf16(values[i]);
  } else {
    w.bytes.resize(values.size() * 4);
    std::memcpy(w.bytes.data(), values.data(), w.bytes.size());
  }
  return w;
}

// Everything a model's replicas share: the client, the weights on the host until every device
// that runs a replica has its copy, the compiled programs by shape. Thread-safe.
class ModelState {
 public:
  ModelState(std::shared_ptr<const Client> client, ModelConfig config, model::EncoderDesc desc,
             Precision precision, bool head, std::vector<WeightSlot> slots,
             std::vector<HostWeight> weights, std::string source, int used_devices,
             bool loop_layers)
      : client_(std::move(client)),
        config_(std::move(config)),
        precision_(precision),
        head_(head),
        desc_(std::move(desc)),
        slots_(std::move(slots)),
        weights_(std::move(weights)),
        source_(std::move(source)),
        devices_(client_->devices().size()),
        used_devices_(static_cast<std::size_t>(used_devices)),
        loop_layers_(loop_layers) {}

  const Client& client() const { return *client_; }
  const ModelConfig& config() const { return config_; }
  const model::EncoderDesc& desc() const { return desc_; }
  Precision precision() const { return precision_; }
  bool head() const { return head_; }
  const std::string& source() const { return source_; }
  std::uint64_t weight_bytes() const {
    std::uint64_t n = 0;
    for (const HostWeight& w : weights_) n += w.bytes.size();
    return n;
  }

  // The weights on device `index`, uploaded by the first replica there.
  const std::vector<DeviceBuffer>& weights_on(std::size_t index) {
    std::lock_guard lock(mutex_);
    std::vector<DeviceBuffer>& buffers = devices_.at(index);
    if (!buffers.empty() || weights_.empty()) return buffers;
    const DeviceInfo info = client_->memory_of(index);
    const std::uint64_t need = weight_bytes();
    if (info.memory_limit >= 0 &&
        need > static_cast<std::uint64_t>(info.memory_limit -
                                          std::max<std::int64_t>(0, info.memory_in_use))) {
      fail(
          "PJRT device {} ({}): the weights need {:.1f} MiB but the device has {:.1f} MiB free "
          "of {:.1f} MiB",
          info.id, info.kind, need / 1048576.0,
          (info.memory_limit - info.memory_in_use) / 1048576.0, info.memory_limit / 1048576.0);
    }
    // All or nothing: a failed upload (out of memory) leaves no half set behind for the next
    // replica to take as complete.
    std::vector<DeviceBuffer> uploaded;
    for (const HostWeight& w : weights_)
      uploaded.push_back(client_->upload(w.bytes.data(), w.type, w.dims, index));
    buffers = std::move(uploaded);
    return buffers;
  }

  // The program for [rows, length] with the outputs asked for, compiled once and shared.
  std::shared_ptr<const Executable> program(std::int64_t rows, std::int64_t length, bool hidden,
                                            bool logits,
                                            const std::optional<model::SparseSpec>& sparse) {
    const ProgramKey key{rows, length, hidden, logits, sparse_key(sparse)};
    std::promise<std::shared_ptr<const Executable>> mine;
    std::shared_future<std::shared_ptr<const Executable>> compiled;
    bool compile_here = false;
    {
      std::lock_guard lock(mutex_);
      auto it = programs_.find(key);
      if (it == programs_.end()) {
        it = programs_.emplace(key, mine.get_future().share()).first;
        compile_here = true;
      }
      compiled = it->second;
    }
    if (compile_here) {
      try {
        ProgramSpec spec{rows, length, precision_, hidden, logits, loop_layers_, sparse};
        const auto start = std::chrono::steady_clock::now();
        auto exe = client_->compile(encoder_program(desc_, slots_, spec));
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        {
          std::lock_guard lock(mutex_);
          compile_seconds_ += seconds;
          ++compiled_;
        }
        const std::size_t outputs = static_cast<std::size_t>(hidden) +
                                    static_cast<std::size_t>(logits) +
                                    static_cast<std::size_t>(sparse.has_value());
        if (exe->outputs() != outputs)
          fail("PJRT plugin {}: the compiled model has {} outputs, not {}",
               client_->plugin().path().string(), exe->outputs(), outputs);
        mine.set_value(std::move(exe));
      } catch (...) {
        mine.set_exception(std::current_exception());
      }
    }
    return compiled.get();
  }

  std::vector<std::pair<std::string, double>> counters() const {
    std::lock_guard lock(mutex_);
    return {{"programs_compiled", static_cast<double>(compiled_)},
            {"compile_seconds", compile_seconds_}};
  }

  // Replicas go round the devices in use: one each with --replicas auto.
  std::size_t next_device() { return next_device_++ % used_devices_; }

 private:
  std::shared_ptr<const Client> client_;
  ModelConfig config_;
  Precision precision_;
  bool head_;
  model::EncoderDesc desc_;
  std::vector<WeightSlot> slots_;
  std::vector<HostWeight> weights_;
  std::string source_;  // the model directory, for messages
  mutable std::mutex mutex_;
  std::vector<std::vector<DeviceBuffer>> devices_;  // [device][slot]
  int compiled_ = 0;                                // programs compiled so far
  double compile_seconds_ = 0;  // their compile time, summed over the threads that compiled
  std::map<ProgramKey, std::shared_future<std::shared_ptr<const Executable>>> programs_;
  std::size_t used_devices_;
  bool loop_layers_;
  std::atomic<std::size_t> next_device_{0};
};

// One replica on one device: packs its batch like the CPU backend, pads it to a compiled shape,
// runs it and hands the results to model::write_task_outputs. Used by one thread at a time;
// shares the model's state (weights, programs) with every other replica.
class PjrtReplica final : public backend::Replica {
 public:
  PjrtReplica(std::shared_ptr<ModelState> state, std::size_t device)
      : state_(std::move(state)), device_(device), weights_(&state_->weights_on(device)) {}

  void predict(std::span<const model::SequenceInput> batch, const model::TaskSpec& task,
               std::vector<float>& out) override {
    const ModelConfig& c = state_->config();
    model::pack_batch(c, batch, packed_);
    if (task.kind == model::TaskKind::kSparse) return predict_sparse(task.sparse, out);
    const bool hidden = model::needs_hidden(task), logits = model::needs_logits(task);
    if (logits && !state_->head())
      fail("{}: the model has no classification head (architecture '{}'); use --task embed",
           state_->source(), c.architecture);
    const auto n = static_cast<std::int64_t>(batch.size());
    hidden_.resize(hidden ? static_cast<std::size_t>(packed_.tokens() * c.hidden_size) : 0);
    logits_.resize(logits ? static_cast<std::size_t>(n * c.num_labels) : 0);
    const std::int64_t length = length_bucket(packed_.longest(), c.max_sequence_length());
    run_all(length, hidden, logits, std::nullopt, nullptr);
    model::write_task_outputs(c, task, batch, packed_.spans, hidden ? hidden_.data() : nullptr,
                              logits ? logits_.data() : nullptr, out);
  }
  // SpladePooling's rows straight from the device ([batch, vocab]), then the run's top-k.
  void predict_sparse(const model::SparseSpec& spec, std::vector<float>& out) {
    const ModelConfig& c = state_->config();
    if (!state_->desc().mlm_head)
      fail("{}: the model has no MLM head (not a SparseEncoder directory); --task sparse needs one",
           state_->source());
    const auto n = static_cast<std::int64_t>(packed_.spans.size());
    out.resize(static_cast<std::size_t>(n * c.vocab_size));
    run_all(length_bucket(packed_.longest(), c.max_sequence_length()), false, false, spec,
            out.data());
    model::keep_top_k(out.data(), n, c.vocab_size, spec.top_k);
  }

  // The packed batch in runs of at most max_rows sequences, and its work counted; with `sparse`,
  // the rows' token weights into sparse_out [batch, vocab].
  void run_all(std::int64_t length, bool hidden, bool logits,
               const std::optional<model::SparseSpec>& sparse, float* sparse_out) {
    const ModelConfig& c = state_->config();
    const auto n = static_cast<std::int64_t>(packed_.spans.size());
    const std::int64_t most = max_rows(sparse.has_value(), c.vocab_size);
    last_computed_ = 0;
    for (std::int64_t first = 0; first < n;) {
      const std::int64_t count = std::min(most, n - first);
      const std::int64_t rows = padded_rows(count);
      run(first, count, rows, length, hidden, logits, sparse, sparse_out);
      last_computed_ += rows * length;
      first += count;
    }
    double flops = 0;
    for (const auto& s : packed_.spans) {
      const double t = static_cast<double>(s.length), h = static_cast<double>(c.hidden_size);
      flops +=
          c.num_layers * (2.0 * t * (4 * h * h + 2 * h * c.intermediate_size) + 4.0 * t * t * h);
      if (sparse) flops += 2.0 * t * (h * h + h * static_cast<double>(c.vocab_size));
    }
    last_flops_ = flops;
  }
  double last_flops() const override { return last_flops_; }
  std::int64_t last_computed_tokens() const override { return last_computed_; }
  void attach_profile(backend::OpProfile*) override {}  // the device runs one fused program

 private:
  // Sequences [first, first + count) of the packed batch, padded to [rows, length].
  void run(std::int64_t first, std::int64_t count, std::int64_t rows, std::int64_t length,
           bool hidden, bool logits, const std::optional<model::SparseSpec>& sparse,
           float* sparse_out) {
    const ModelConfig& c = state_->config();
    const auto cells = static_cast<std::size_t>(rows * length);
    ids_.assign(cells, static_cast<std::int32_t>(c.pad_token_id));
    types_.assign(cells, 0);
    positions_.assign(cells, 0);
    lengths_.assign(static_cast<std::size_t>(rows), 1);  // padding rows: one key, never NaN
    for (std::int64_t r = 0; r < count; ++r) {
      const auto& span = packed_.spans[static_cast<std::size_t>(first + r)];
      const auto at = static_cast<std::size_t>(r * length);
      std::copy_n(packed_.ids.begin() + span.offset, span.length, ids_.begin() + at);
      std::copy_n(packed_.types.begin() + span.offset, span.length, types_.begin() + at);
      std::copy_n(packed_.positions.begin() + span.offset, span.length, positions_.begin() + at);
      lengths_[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(span.length);
    }
    const Client& client = state_->client();
    const Dims dims{rows, length}, row_dims{rows};
    std::vector<DeviceBuffer> inputs;
    inputs.push_back(client.upload(ids_.data(), ElementType::kS32, dims, device_));
    if (c.type_vocab_size > 0)
      inputs.push_back(client.upload(types_.data(), ElementType::kS32, dims, device_));
    inputs.push_back(client.upload(positions_.data(), ElementType::kS32, dims, device_));
    inputs.push_back(client.upload(lengths_.data(), ElementType::kS32, row_dims, device_));
    const model::EncoderDesc& desc = state_->desc();
    if (desc.relative_bias || desc.disentangled) {
      // MPNet's bucket of key − query, or DeBERTa's table row of query − key.
      if (buckets_length_ != length) {
        buckets_.resize(static_cast<std::size_t>(length * length));
        for (std::int64_t i = 0; i < length; ++i)
          for (std::int64_t j = 0; j < length; ++j)
            buckets_[static_cast<std::size_t>(i * length + j)] = static_cast<std::int32_t>(
                desc.relative_bias ? model::relative_bucket(j - i, *desc.relative_bias)
                                   : model::relative_index(i - j, *desc.disentangled));
        buckets_length_ = length;
      }
      const Dims pair_dims{length, length};
      inputs.push_back(client.upload(buckets_.data(), ElementType::kS32, pair_dims, device_));
    }
    std::vector<PJRT_Buffer*> args;
    for (const DeviceBuffer& w : *weights_) args.push_back(w.get());
    for (const DeviceBuffer& in : inputs) args.push_back(in.get());
    const auto exe = state_->program(rows, length, hidden, logits, sparse);
    const auto outputs = exe->execute(client.devices()[device_].device, args);
    std::size_t next = 0;
    if (hidden) {
      const std::int64_t h = c.hidden_size;
      padded_.resize(static_cast<std::size_t>(rows * length * h));
      outputs[next++].to_host(padded_.data(), padded_.size() * sizeof(float));
      for (std::int64_t r = 0; r < count; ++r) {
        const auto& span = packed_.spans[static_cast<std::size_t>(first + r)];
        std::copy_n(padded_.data() + r * length * h, span.length * h,
                    hidden_.data() + span.offset * h);
      }
    }
    if (logits) {
      const std::int64_t labels = c.num_labels;
      padded_.resize(static_cast<std::size_t>(rows * labels));
      outputs[next++].to_host(padded_.data(), padded_.size() * sizeof(float));
      std::copy_n(padded_.data(), count * labels, logits_.data() + first * labels);
    }
    if (sparse) {
      const std::int64_t vocab = c.vocab_size;
      padded_.resize(static_cast<std::size_t>(rows * vocab));
      outputs[next++].to_host(padded_.data(), padded_.size() * sizeof(float));
      std::copy_n(padded_.data(), count * vocab, sparse_out + first * vocab);
    }
  }

  std::shared_ptr<ModelState> state_;
  std::size_t device_;
  const std::vector<DeviceBuffer>* weights_;  // owned by state_
  model::PackedBatch packed_;
  std::vector<std::int32_t> ids_, types_, positions_;  // [rows, length]
  std::vector<std::int32_t> lengths_;                  // [rows]
  std::vector<std::int32_t> buckets_;  // [length, length]: relative position buckets
  std::int64_t buckets_length_ = 0;
  std::vector<float> padded_;  // one output as the device wrote it: [rows, length, hidden]
  std::vector<float> hidden_;  // [tokens, hidden]: the packed kept tokens
  std::vector<float> logits_;  // [batch, labels]
  double last_flops_ = 0;
  std::int64_t last_computed_ = 0;  // [rows, length] positions of the last batch's runs
};

class PjrtModel final : public backend::PreparedModel {
 public:
  PjrtModel(std::shared_ptr<ModelState> state, backend::WeightStats stats)
      : state_(std::move(state)), stats_(std::move(stats)) {}
  const ModelConfig& config() const override { return state_->config(); }
  Precision precision() const override { return state_->precision(); }
  const backend::WeightStats& stats() const override { return stats_; }
  std::unique_ptr<backend::Replica> make_replica(int) const override {
    return std::make_unique<PjrtReplica>(state_, state_->next_device());
  }
  std::vector<std::pair<std::string, double>> counters() const override {
    return state_->counters();
  }

 private:
  std::shared_ptr<ModelState> state_;
  backend::WeightStats stats_;
};

class PjrtBackend final : public backend::Backend {
 public:
  PjrtBackend(std::shared_ptr<const Client> client, int devices, std::optional<bool> loop_layers)
      : client_(std::move(client)),
        loop_layers_(loop_layers),
        devices_(devices > 0 && !is_cpu() ? std::min<int>(devices, device_count())
                                          : device_count()) {}

  std::string_view name() const override { return "pjrt"; }
  std::string description() const override {
    const auto& d = client_->devices();
    const std::string& version = client_->platform_version();
    return fmt::format("PJRT {}{}, {} of {} device(s): {}; plugin {} (API {}.{})",
                       client_->platform(), version == client_->platform() ? "" : " " + version,
                       devices_, d.size(), d.front().kind, client_->plugin().path().string(),
                       client_->plugin().api_major(), client_->plugin().api_minor());
  }
  std::vector<std::string> device_lines() const override {
    std::vector<std::string> lines;
    for (int i = 0; i < devices_; ++i) {
      const DeviceInfo d = client_->memory_of(static_cast<std::size_t>(i));
      std::string memory;
      if (d.memory_limit >= 0) memory = fmt::format(", {:.1f} GiB", d.memory_limit / 1073741824.0);
      lines.push_back(fmt::format("device {}: {}{} ({})", d.id, d.kind, memory, d.description));
    }
    return lines;
  }
  model::PrecisionChoice resolve_precision(Precision requested) const override {
    switch (requested) {
      case Precision::kInt8:
        fail_usage(
            "--precision int8 runs on the cpu backend only; --backend pjrt runs fp32 or "
            "bf16");
      case Precision::kFp32:
        return {Precision::kFp32, "", "fp32 as asked"};
      case Precision::kBf16:
        return {Precision::kBf16, "", fmt::format("bf16 as asked, on {}", client_->platform())};
      case Precision::kAuto:
        break;
    }
    // XLA's CPU compiler emulates bf16 dot products: no faster than fp32 there.
    if (is_cpu()) return {Precision::kFp32, "", "fp32 (a CPU PJRT device has no native bf16)"};
    return {Precision::kBf16, client_->platform(),
            fmt::format("bf16 (native on {}); --precision fp32 for exact transformers parity",
                        client_->devices().front().kind)};
  }
  Precision int8_fallback_precision() const override { return Precision::kFp32; }

  std::shared_ptr<const backend::PreparedModel> prepare(
      const model::ModelDir& dir, const backend::PrepareOptions& options,
      std::vector<std::string>* warnings) const override {
    const ModelConfig& config = dir.config();
    const model::EncoderDesc desc =
        options.description ? *options.description : model::describe_model(dir);
    const model::ModelTensors tensors =
        model::ModelTensors::open(dir.path(), config, warnings, &desc);
    const bool head = tensors.head().has_value();
    const bool stacked = stacks_layers(tensors.desc(), loop_layers());
    const auto slots = weight_slots(tensors.desc(), head, stacked);
    const auto sources = slot_tensors(tensors, head, stacked);
    std::vector<HostWeight> weights;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      std::vector<float> values(static_cast<std::size_t>(elements(slots[i].dims)));
      std::int64_t filled = 0;
      for (const model::Tensor* part : sources[i]) {
        if (part == nullptr) {
          model::fill_sinusoidal(values.data(), config.max_position_embeddings, config.hidden_size);
          filled = static_cast<std::int64_t>(values.size());
          continue;
        }
        if (filled + part->numel() > static_cast<std::int64_t>(values.size()))
          fail("internal: weight {} holds {} values, its tensors more", slots[i].name,
               values.size());
        model::copy_as_f32(*part, values.data() + filled);
        filled += part->numel();
        tensors.release(*part);
      }
      if (filled != static_cast<std::int64_t>(values.size()))
        fail("internal: weight {} holds {} values, its tensors {}", slots[i].name, values.size(),
             filled);
      weights.push_back(host_weight(slots[i], std::move(values), options.precision));
    }
    backend::WeightStats stats;
    stats.parameters = tensors.stats().parameters;
    stats.file_bytes = tensors.stats().file_bytes;
    stats.dtype = tensors.stats().dtype;
    return make_model(config, tensors.desc(), options.precision, head, stacked, slots,
                      std::move(weights), dir.path().string(), stats);
  }

  std::shared_ptr<const backend::PreparedModel> synthetic(const ModelConfig& config,
                                                          Precision precision) const override {
    const bool head = config.head == model::Head::kSequenceClassification;
    const model::EncoderDesc desc = model::describe_encoder(config);
    const bool stacked = stacks_layers(desc, loop_layers());
    const auto slots = weight_slots(desc, head, stacked);
    std::vector<HostWeight> weights;
    std::uint64_t state = 0x9E3779B97F4A7C15ULL;
    backend::WeightStats stats;
    for (const WeightSlot& slot : slots) {
      std::vector<float> values(static_cast<std::size_t>(elements(slot.dims)));
      for (float& v : values) {  // xorshift: reproducible small weights
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        v = (static_cast<float>(state >> 40) / 16777216.0f - 0.5f) * 0.08f;
      }
      stats.parameters += static_cast<std::int64_t>(values.size());
      weights.push_back(host_weight(slot, std::move(values), precision));
    }
    stats.dtype = "F32";
    return make_model(config, desc, precision, head, stacked, slots, std::move(weights),
                      "(synthetic " + config.model_type + ")", stats);
  }

  backend::BatchShape batch_shape() const override {
    // Any batch is accepted (PjrtReplica::predict pads it to these); batches cut to them leave
    // only the length bucket's step as padding.
    // (The model's position table caps a bucket; the schedule never sees a longer row.)
    return {
        backend::BatchShape::Kind::kBuckets,
        [](std::int64_t n) { return length_bucket(n, std::numeric_limits<std::int64_t>::max()); },
        kRowMultiple};
  }
  int replica_slots() const override { return devices_; }
  std::uint64_t replica_bytes(const ModelConfig& c, std::int64_t tokens, std::int64_t max_len, int,
                              Precision) const override {
    // Host side: the padded inputs and the hidden states copied back, twice (padded + packed).
    const std::int64_t padded = std::max(tokens, length_bucket(max_len, c.max_sequence_length()));
    return static_cast<std::uint64_t>(padded) * static_cast<std::uint64_t>(c.hidden_size) * 8 +
           static_cast<std::uint64_t>(padded) * 16;
  }

 private:
  bool is_cpu() const { return client_->platform() == "cpu"; }
  bool loop_layers() const { return loop_layers_.value_or(!is_cpu()); }
  int device_count() const { return static_cast<int>(client_->devices().size()); }

  std::shared_ptr<const backend::PreparedModel> make_model(
      const ModelConfig& config, const model::EncoderDesc& desc, Precision precision, bool head,
      bool stacked, std::vector<WeightSlot> slots, std::vector<HostWeight> weights,
      std::string source, backend::WeightStats stats) const {
    if (precision != Precision::kFp32 && precision != Precision::kBf16)
      fail_usage("--backend pjrt runs fp32 or bf16, not {}", model::precision_name(precision));
    auto state =
        std::make_shared<ModelState>(client_, config, desc, precision, head, std::move(slots),
                                     std::move(weights), std::move(source), devices_, stacked);
    stats.packed_bytes = state->weight_bytes();
    return std::make_shared<PjrtModel>(std::move(state), std::move(stats));
  }

  std::shared_ptr<const Client> client_;
  std::optional<bool> loop_layers_;
  int devices_;
};

}  // namespace

std::int64_t length_bucket(std::int64_t longest, std::int64_t max_positions) {
  std::int64_t step = longest <= 64 ? 8 : longest <= 128 ? 16 : longest <= 256 ? 32 : 64;
  for (std::int64_t octave = 1024; longest > octave; octave *= 2) step *= 2;
  const std::int64_t bucket = (std::max<std::int64_t>(longest, 1) + step - 1) / step * step;
  return std::min(bucket, std::max(longest, max_positions));
}

std::int64_t padded_rows(std::int64_t count) {
  return (std::max<std::int64_t>(count, 1) + kRowMultiple - 1) / kRowMultiple * kRowMultiple;
}

std::unique_ptr<backend::Backend> make_pjrt_backend(const PjrtOptions& options) {
  if (options.devices < 0) fail_usage("--devices must be at least 1, not {}", options.devices);
  const auto path = resolve_plugin(options.plugin);
  auto plugin = Plugin::load(path);
  // cpu_device_count is a CPU plugin's option; other plugins may refuse options they do not know.
  const bool cpu_plugin =
      options.plugin == "cpu" || path.filename().string().find("cpu") != std::string::npos;
  // A CPU plugin's devices are what --devices says, by default one per physical core (as a TPU
  // host has one per chip core).
  const int cpu_devices = options.devices > 0 ? options.devices : sys::physical_cores();
  auto client = std::make_shared<const Client>(plugin, cpu_plugin ? cpu_devices : 0);
  return std::make_unique<PjrtBackend>(std::move(client), options.devices, options.loop_layers);
}

}  // namespace mcinfer::pjrt
