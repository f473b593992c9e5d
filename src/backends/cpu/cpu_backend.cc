#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/encoder.h"
#include "backends/cpu/weights.h"
#include "core/error.h"
#include "core/system.h"
#include "model/model_dir.h"

namespace mcinfer::cpu {
namespace {

class CpuModel;

class CpuReplica final : public backend::Replica, public backend::Int8Calibration {
 public:
  CpuReplica(std::shared_ptr<const Weights> weights, const ops::Device& device, int threads,
             ops::EpilogueMode epilogue)
      : encoder_(std::move(weights), device, threads, epilogue) {}

  void predict(std::span<const model::SequenceInput> batch, const model::TaskSpec& task,
               std::vector<float>& out) override {
    encoder_.predict(batch, task, out);
  }
  double last_flops() const override { return encoder_.last_flops(); }
  void attach_profile(backend::OpProfile* profile) override {
    encoder_.context().attach_profile(profile);
  }
  backend::Int8Calibration* int8_calibration() override { return this; }
  void observe_gemms(backend::GemmObserver observer) override {
    if (!observer) {
      encoder_.observe({});
      return;
    }
    encoder_.observe([observer = std::move(observer)](model::GemmId id, const ops::Linear& w,
                                                      const float* x, std::int64_t rows,
                                                      const float* y, ops::Activation) {
      observer({id, x, rows, w.in_features(), y, w.out_features()});
    });
  }
  void run_gemm(model::GemmId id, const float* x, std::int64_t rows, float* y) override {
    // ops::linear reads and writes padded_rows(rows) rows: stage through buffers that have them.
    const Weights& w = encoder_.weights();
    const ops::Linear& linear = w.linear(id);
    const std::int64_t in = linear.in_features(), out = linear.out_features();
    in_.resize_zeroed(static_cast<std::size_t>(ops::padded_rows(rows) * in));
    out_.resize(static_cast<std::size_t>(ops::padded_rows(rows) * out));
    std::memcpy(in_.data(), x, static_cast<std::size_t>(rows * in) * sizeof(float));
    ops::linear(encoder_.context(), linear, ops::ConstRows{in_.data(), ops::DType::kF32}, rows,
                ops::Rows{out_.data(), ops::DType::kF32}, w.activation(id));
    std::memcpy(y, out_.data(), static_cast<std::size_t>(rows * out) * sizeof(float));
  }

 private:
  Encoder encoder_;
  AlignedBuffer<float> in_, out_;
};

class CpuModel final : public backend::PreparedModel {
 public:
  CpuModel(std::shared_ptr<const Weights> weights, std::shared_ptr<const ops::Device> device,
           ops::EpilogueMode epilogue)
      : weights_(std::move(weights)), device_(std::move(device)), epilogue_(epilogue) {}

  const model::ModelConfig& config() const override { return weights_->config(); }
  model::Precision precision() const override { return weights_->precision(); }
  const backend::WeightStats& stats() const override { return weights_->stats(); }
  std::optional<backend::Int8Facts> int8_facts() const override {
    if (weights_->precision() != model::Precision::kInt8) return std::nullopt;
    return backend::Int8Facts{weights_->kept(), weights_->smoothed()};
  }
  std::unique_ptr<backend::Replica> make_replica(int threads) const override {
    return std::make_unique<CpuReplica>(weights_, *device_, threads, epilogue_);
  }
  const std::shared_ptr<const Weights>& weights() const { return weights_; }
  const ops::Device& device() const { return *device_; }

 private:
  std::shared_ptr<const Weights> weights_;
  std::shared_ptr<const ops::Device> device_;  // outlives every replica of this model
  ops::EpilogueMode epilogue_;
};

// The library's GEMMs alone on the shapes of the model's layer GEMMs: bf16 inputs for a bf16 model
// (the FFN's first GEMM writes bf16, as in the encoder), the s8 → s32 product without our epilogue
// for int8.
class CpuGemmProbe final : public backend::GemmProbe {
 public:
  CpuGemmProbe(const CpuModel& model, std::int64_t rows, int threads)
      : layer_(model.weights()->layers().at(0)), rows_(rows), ctx_(model.device(), threads) {
    std::int64_t width = 0;
    for (const ops::Linear& l : layer_.gemms)
      width = std::max({width, l.in_features(), l.out_features()});
    in_.resize(static_cast<std::size_t>(ops::padded_rows(rows) * width));
    out_.resize(in_.size());
    type_ = layer_.gemms.front().input_type();
    // Every input 0.00995, in f32 or in bf16 (bits 0x3C23), or 3 in s8: finite, realistic.
    std::fill(in_.data(), in_.data() + in_.size(), 0.00995f);
    if (type_ == ops::DType::kBf16) {
      std::vector<ops::Bf16> half(in_.size() * 2, 0x3C23);
      std::memcpy(in_.data(), half.data(), half.size() * sizeof(ops::Bf16));
    } else if (type_ == ops::DType::kS8) {
      std::memset(in_.data(), 3, in_.size() * sizeof(float));
    }
    for (const ops::Linear& l : layer_.gemms)
      flops_ += 2.0 * static_cast<double>(rows) * static_cast<double>(l.in_features()) *
                static_cast<double>(l.out_features());
  }

  void run() override {
    const ops::Linear* ffn_in = &layer_.gemm(model::GemmSlot::kFfnIn);
    for (const ops::Linear& gemm : layer_.gemms) {
      const ops::Linear* l = &gemm;
      if (type_ == ops::DType::kS8) {
        ctx_.gemm().library_s8(l->cpu_weights(), reinterpret_cast<const std::int8_t*>(in_.data()),
                               rows_, reinterpret_cast<std::int32_t*>(out_.data()));
        continue;
      }
      const bool bf16_out = type_ == ops::DType::kBf16 && l == ffn_in;
      ops::linear(ctx_, *l, ops::ConstRows{in_.data(), type_}, rows_,
                  ops::Rows{out_.data(), bf16_out ? ops::DType::kBf16 : ops::DType::kF32});
    }
  }
  double flops() const override { return flops_; }

 private:
  const LayerWeights& layer_;
  std::int64_t rows_;
  ops::Context ctx_;
  ops::DType type_ = ops::DType::kF32;
  AlignedBuffer<float> in_, out_;
  double flops_ = 0;
};

class CpuBackend final : public backend::Backend {
 public:
  CpuBackend(std::shared_ptr<const ops::Device> device, ops::EpilogueMode epilogue)
      : device_(std::move(device)), epilogue_(epilogue) {}

  std::string_view name() const override { return "cpu"; }
  std::string description() const override { return device_->description(); }
  model::PrecisionChoice resolve_precision(model::Precision requested) const override {
    return ops::resolve_precision(requested);
  }
  model::Precision int8_fallback_precision() const override {
    return ops::int8_fallback_precision();
  }
  std::shared_ptr<const backend::PreparedModel> prepare(
      const model::ModelDir& dir, const backend::PrepareOptions& options,
      std::vector<std::string>* warnings) const override {
    const model::EncoderDesc desc =
        options.description ? *options.description : model::describe_model(dir);
    return wrap(Weights::load(dir, *device_, warnings, options.precision, options.int8_keep,
                              options.int8_ranges, &desc));
  }
  std::shared_ptr<const backend::PreparedModel> synthetic(
      const model::ModelConfig& config, model::Precision precision) const override {
    return wrap(Weights::synthetic(config, *device_, 1, precision));
  }
  backend::BatchShape batch_shape() const override { return {}; }  // packed: real tokens only
  int replica_slots() const override { return sys::physical_cores(); }
  std::uint64_t replica_bytes(const model::ModelConfig& config, std::int64_t tokens,
                              std::int64_t max_len, int threads,
                              model::Precision precision) const override {
    return Encoder::activation_bytes(config, tokens, max_len, threads, precision);
  }
  std::unique_ptr<backend::GemmProbe> library_gemm_probe(const backend::PreparedModel& model,
                                                         std::int64_t rows,
                                                         int threads) const override {
    const auto* cpu = dynamic_cast<const CpuModel*>(&model);
    if (cpu == nullptr) fail("internal: a model of another backend given to the CPU backend");
    return std::make_unique<CpuGemmProbe>(*cpu, rows, threads);
  }

 private:
  std::shared_ptr<const backend::PreparedModel> wrap(std::shared_ptr<const Weights> w) const {
    return std::make_shared<CpuModel>(std::move(w), device_, epilogue_);
  }
  std::shared_ptr<const ops::Device> device_;
  ops::EpilogueMode epilogue_;
};

}  // namespace

std::unique_ptr<backend::Backend> make_cpu_backend(const CpuOptions& options) {
  std::optional<Isa> forced;
  if (options.isa) {
    forced = parse_isa(*options.isa);
    if (!forced) fail_usage("--isa must be {}, not '{}'", kIsaNames.choices(), *options.isa);
  }
  return std::make_unique<CpuBackend>(ops::Device::cpu(forced), options.epilogue_in_kernel
                                                                    ? ops::EpilogueMode::kOwnKernel
                                                                    : ops::EpilogueMode::kInGemm);
}

std::shared_ptr<const Weights> weights_of(const backend::PreparedModel& model) {
  const auto* cpu = dynamic_cast<const CpuModel*>(&model);
  return cpu ? cpu->weights() : nullptr;
}

}  // namespace mcinfer::cpu
