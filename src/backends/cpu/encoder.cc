#include "backends/cpu/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/task_outputs.h"

namespace mcinfer::cpu {

using namespace model;
namespace {

// Grows a buffer to `rows` × `cols`, zero-filling new storage so that the padded rows a GEMM
// reads past the batch are always finite.
template <typename T>
void ensure(AlignedBuffer<T>& buffer, std::int64_t rows, std::int64_t cols) {
  const std::size_t need = static_cast<std::size_t>(rows * cols);
  if (buffer.capacity_bytes() < need * sizeof(T)) buffer.resize_zeroed(need + need / 4);
  buffer.resize(need);
}

}  // namespace

Encoder::Encoder(std::shared_ptr<const Weights> weights, const ops::Device& device, int threads,
                 ops::EpilogueMode epilogue)
    : weights_(std::move(weights)), ctx_(device, threads, epilogue) {}

std::int64_t Encoder::output_dim(const TaskSpec& task) const {
  return model::output_dim(weights_->config(), task);
}

std::uint64_t Encoder::activation_bytes(const ModelConfig& c, std::int64_t tokens,
                                        std::int64_t max_len, int threads,
                                        ops::Precision precision) {
  const auto rows = static_cast<std::uint64_t>(ops::padded_rows(tokens));
  const auto h = static_cast<std::uint64_t>(c.hidden_size);
  const auto inter = static_cast<std::uint64_t>(c.intermediate_size);
  const auto len = static_cast<std::uint64_t>(max_len);
  // x, qkv, ctx, tmp, ffn + the packed ids, types and positions + one score block per thread.
  // bf16: x in f32; x, qkv, ctx, tmp and ffn in bf16; the attention's per-sequence blocks.
  std::uint64_t bytes = precision == ops::Precision::kBf16
                            ? rows * h * 4 + rows * (h + 3 * h + h + h + inter) * 2 +
                                  cpu::Bf16Attention::workspace_bytes_for(max_len, c.hidden_size,
                                                                          c.num_heads, threads)
                            : rows * (h + 3 * h + h + h + inter) * 4;
  if (precision == ops::Precision::kInt8) {
    // x and tmp in f32, their s8 copies and the FFN's middle rows in s8 (+ a bf16 or s8 one when
    // a plan keeps a GEMM out of int8), Q, K, V and the attention output in bf16, the s8 scratch
    // of the attention output, per-row scales.
    bytes = rows * h * 8 + rows * (h + inter) * 1 + rows * (3 * h + h) * 2 + rows * inter * 2 +
            rows * h + rows * 16 +
            cpu::Bf16Attention::workspace_bytes_for(max_len, c.hidden_size, c.num_heads, threads);
  }
  bytes += static_cast<std::uint64_t>(tokens) * 12;
  bytes += static_cast<std::uint64_t>(threads) * len * len * 4;
  return bytes + bytes / 4;  // buffers grow with 25% headroom
}

std::size_t Encoder::workspace_bytes() const {
  return x_.capacity_bytes() + qkv_.capacity_bytes() + ctx_buf_.capacity_bytes() +
         tmp_.capacity_bytes() + ffn_.capacity_bytes() + head_in_.capacity_bytes() +
         head_mid_.capacity_bytes() + x_bf16_.capacity_bytes() + ctx_bf16_.capacity_bytes() +
         ffn_bf16_.capacity_bytes() + qkv_bf16_.capacity_bytes() + tmp_bf16_.capacity_bytes() +
         x_s8_.capacity_bytes() + x_scales_.capacity_bytes() + ffn_s8_.capacity_bytes() +
         ffn_scales_.capacity_bytes() + ctx_.workspace_bytes();
}

void Encoder::pack(std::span<const SequenceInput> batch) {
  model::pack_batch(weights_->config(), batch, packed_);
  spans_.clear();
  for (const auto& s : packed_.spans) spans_.push_back({s.offset, s.length});
  tokens_ = packed_.tokens();
}

void Encoder::forward(std::span<const SequenceInput> batch) {
  pack(batch);
  const Weights& w = *weights_;
  const ModelConfig& c = w.config();
  const std::int64_t h = c.hidden_size, t = tokens_;
  const EmbeddingWeights& e = w.embeddings();
  ensure(x_, ops::padded_rows(t), h);
  ops::embedding_sum(ctx_, x_.data(), t, h, e.word, packed_.ids.data(), e.position,
                     packed_.positions.data(), e.token_type,
                     e.token_type ? packed_.types.data() : nullptr);
  ops::residual_layer_norm(ctx_, x_.data(), nullptr, t, h, e.norm.gamma, e.norm.beta,
                           c.layer_norm_eps);
  switch (w.precision()) {
    case ops::Precision::kBf16:
      layers_bf16();
      break;
    case ops::Precision::kInt8:
      layers_int8();
      break;
    default:
      layers_fp32();
  }
  double attention_flops = 0;
  for (const auto& s : spans_)
    attention_flops += 4.0 * static_cast<double>(s.length) * s.length * h;
  const double dense = 2.0 * static_cast<double>(t) * (4.0 * h * h + 2.0 * h * c.intermediate_size);
  last_flops_ = static_cast<double>(c.num_layers) * (dense + attention_flops);
}

void Encoder::layers_fp32() {
  const ModelConfig& c = weights_->config();
  const std::int64_t h = c.hidden_size, t = tokens_;
  const std::int64_t rows = ops::padded_rows(t);
  ensure(qkv_, rows, 3 * h);
  ensure(ctx_buf_, rows, h);
  ensure(tmp_, rows, h);
  ensure(ffn_, rows, c.intermediate_size);
  const int heads = static_cast<int>(c.num_heads);
  std::int64_t index = 0;
  for (const LayerWeights& layer : weights_->layers()) {
    auto seen = [&](GemmSlot slot, const ops::Linear& w, const float* x, const float* y,
                    ops::Activation act = ops::Activation::kNone) {
      if (observer_) observer_(GemmId{index, slot}, w, x, t, y, act);
    };
    ops::linear(ctx_, layer.qkv, x_.data(), t, qkv_.data());
    seen(GemmSlot::kQkv, layer.qkv, x_.data(), qkv_.data());
    ops::attention(ctx_, qkv_.data(), ctx_buf_.data(), spans_, heads, h);
    ops::linear(ctx_, layer.attn_out, ctx_buf_.data(), t, tmp_.data());
    seen(GemmSlot::kAttnOut, layer.attn_out, ctx_buf_.data(), tmp_.data());
    ops::residual_layer_norm(ctx_, x_.data(), tmp_.data(), t, h, layer.attn_norm.gamma,
                             layer.attn_norm.beta, c.layer_norm_eps);
    ops::linear(ctx_, layer.ffn_in, x_.data(), t, ffn_.data(), c.hidden_act);
    seen(GemmSlot::kFfnIn, layer.ffn_in, x_.data(), ffn_.data(), c.hidden_act);
    ops::linear(ctx_, layer.ffn_out, ffn_.data(), t, tmp_.data());
    seen(GemmSlot::kFfnOut, layer.ffn_out, ffn_.data(), tmp_.data());
    ++index;
    ops::residual_layer_norm(ctx_, x_.data(), tmp_.data(), t, h, layer.ffn_norm.gamma,
                             layer.ffn_norm.beta, c.layer_norm_eps);
  }
}

// The same layers with bf16 GEMM inputs: the residual stream x and LayerNorm stay f32 (each
// LayerNorm also writes x's bf16 copy), the FFN's GELU output is written in bf16 by the GEMM,
// and so are the projections that feed a residual add, as under torch.autocast (where a bf16
// Linear's output is bf16 and the add promotes it to f32): half the bytes of the f32 version
// for the memory-bound LayerNorm pass to read (LayerNorm was 7% of a bert-base batch).
// Attention runs on bf16 Q, K, V with f32 scores and softmax, writing the bf16 input of the
// output projection.
void Encoder::layers_bf16() {
  const ModelConfig& c = weights_->config();
  const std::int64_t h = c.hidden_size, t = tokens_;
  const std::int64_t rows = ops::padded_rows(t);
  const int heads = static_cast<int>(c.num_heads);
  ensure(qkv_bf16_, rows, 3 * h);
  ensure(tmp_bf16_, rows, h);
  ensure(x_bf16_, rows, h);
  ensure(ctx_bf16_, rows, h);
  ensure(ffn_bf16_, rows, c.intermediate_size);
  using ops::ConstRows, ops::Rows, ops::DType;
  const ConstRows x_in{x_bf16_.data(), DType::kBf16};
  ops::to_bf16(ctx_, x_.data(), x_bf16_.data(), t, h);
  for (const LayerWeights& layer : weights_->layers()) {
    ops::linear(ctx_, layer.qkv, x_in, t, Rows{qkv_bf16_.data(), DType::kBf16});
    ops::attention(ctx_, qkv_bf16_.data(), ctx_bf16_.data(), spans_, heads, h);
    ops::linear(ctx_, layer.attn_out, ConstRows{ctx_bf16_.data(), DType::kBf16}, t,
                Rows{tmp_bf16_.data(), DType::kBf16});
    ops::residual_layer_norm(ctx_, x_.data(), tmp_bf16_.data(), t, h, layer.attn_norm.gamma,
                             layer.attn_norm.beta, c.layer_norm_eps, x_bf16_.data());
    ops::linear(ctx_, layer.ffn_in, x_in, t, Rows{ffn_bf16_.data(), DType::kBf16}, c.hidden_act);
    ops::linear(ctx_, layer.ffn_out, ConstRows{ffn_bf16_.data(), DType::kBf16}, t,
                Rows{tmp_bf16_.data(), DType::kBf16});
    // The last layer's output feeds pooling and the head in f32 only.
    const bool last = &layer == &weights_->layers().back();
    ops::residual_layer_norm(ctx_, x_.data(), tmp_bf16_.data(), t, h, layer.ffn_norm.gamma,
                             layer.ffn_norm.beta, c.layer_norm_eps,
                             last ? nullptr : x_bf16_.data());
  }
}

// int8: the four dense GEMMs of each layer run on s8 rows (one scale per token) and s8 weights
// (one scale per output channel) with s32 sums; our epilogue applies both scales, the bias and
// the GELU. Each LayerNorm writes the residual stream in f32 and its s8 copy in one pass, and the
// first FFN GEMM's epilogue quantizes the GELU output for the second, so no separate pass reads
// a GEMM input back to quantize it except the attention output's (hidden wide). Attention runs in
// bf16 where the CPU has it, f32 otherwise. GEMMs a plan keeps out of int8 (Weights::kept()) are
// bf16 or f32 layers: each producer writes what its consumer reads, and an int8 consumer
// quantizes whatever it is given.
void Encoder::layers_int8() {
  const ModelConfig& c = weights_->config();
  const std::int64_t h = c.hidden_size, t = tokens_, inter = c.intermediate_size;
  const std::int64_t rows = ops::padded_rows(t);
  const int heads = static_cast<int>(c.num_heads);
  const float eps = c.layer_norm_eps;
  using ops::ConstRows, ops::Rows, ops::DType;
  const DType attention_type =
      ops::int8_fallback_precision() == ops::Precision::kBf16 ? DType::kBf16 : DType::kF32;
  ensure(tmp_, rows, h);
  Rows qkv{nullptr, attention_type}, context{nullptr, attention_type};
  if (attention_type == DType::kBf16) {
    ensure(qkv_bf16_, rows, 3 * h);
    ensure(ctx_bf16_, rows, h);
    qkv.data = qkv_bf16_.data();
    context.data = ctx_bf16_.data();
  } else {
    ensure(qkv_, rows, 3 * h);
    ensure(ctx_buf_, rows, h);
    qkv.data = qkv_.data();
    context.data = ctx_buf_.data();
  }
  // x_ = LayerNorm(x_ + y), with the copy of x that `next` reads (none after the last layer).
  auto norm = [&](const float* y, const Norm& n, const ops::Linear* next) -> ConstRows {
    switch (next ? next->input_type() : DType::kF32) {
      case DType::kS8:
        ensure(x_s8_, rows, h);
        ensure(x_scales_, rows, 1);
        ops::residual_layer_norm_s8(ctx_, x_.data(), y, t, h, n.gamma, n.beta, eps,
                                    next->input_multiplier(), x_s8_.data(), x_scales_.data());
        return {x_s8_.data(), DType::kS8, x_scales_.data()};
      case DType::kBf16:
        ensure(x_bf16_, rows, h);
        ops::residual_layer_norm(ctx_, x_.data(), y, t, h, n.gamma, n.beta, eps, x_bf16_.data());
        return {x_bf16_.data(), DType::kBf16};
      case DType::kF32:
        break;
    }
    ops::residual_layer_norm(ctx_, x_.data(), y, t, h, n.gamma, n.beta, eps);
    return {x_.data(), DType::kF32};
  };
  // The FFN's middle rows in the type ffn_in writes: what ffn_out reads when ffn_in is int8,
  // else ffn_in's own type (ffn_out, int8, then quantizes them).
  auto ffn_rows = [&](const LayerWeights& layer) -> Rows {
    const DType in = layer.ffn_in.input_type();
    switch (in == DType::kS8 ? layer.ffn_out.input_type() : in) {
      case DType::kS8:
        ensure(ffn_s8_, rows, inter);
        ensure(ffn_scales_, rows, 1);
        return {ffn_s8_.data(), DType::kS8, ffn_scales_.data(), layer.ffn_out.input_multiplier()};
      case DType::kBf16:
        ensure(ffn_bf16_, rows, inter);
        return {ffn_bf16_.data(), DType::kBf16};
      case DType::kF32:
        break;
    }
    ensure(ffn_, rows, inter);
    return {ffn_.data(), DType::kF32};
  };
  const auto& layers = weights_->layers();
  ConstRows x_in{x_.data(), DType::kF32};  // an int8 first layer quantizes it itself
  if (layers.front().qkv.input_type() == DType::kBf16) {
    ensure(x_bf16_, rows, h);
    ops::to_bf16(ctx_, x_.data(), x_bf16_.data(), t, h);
    x_in = {x_bf16_.data(), DType::kBf16};
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerWeights& layer = layers[i];
    ops::linear(ctx_, layer.qkv, x_in, t, qkv);
    if (attention_type == DType::kBf16) {
      ops::attention(ctx_, qkv_bf16_.data(), ctx_bf16_.data(), spans_, heads, h);
    } else {
      ops::attention(ctx_, qkv_.data(), ctx_buf_.data(), spans_, heads, h);
    }
    ops::linear(ctx_, layer.attn_out, ConstRows{context.data, context.type}, t,
                Rows{tmp_.data(), DType::kF32});
    x_in = norm(tmp_.data(), layer.attn_norm, &layer.ffn_in);
    const Rows mid = ffn_rows(layer);
    ops::linear(ctx_, layer.ffn_in, x_in, t, mid, c.hidden_act);
    ops::linear(ctx_, layer.ffn_out, ConstRows{mid.data, mid.type, mid.scales}, t,
                Rows{tmp_.data(), DType::kF32});
    x_in = norm(tmp_.data(), layer.ffn_norm, i + 1 < layers.size() ? &layers[i + 1].qkv : nullptr);
  }
}

void Encoder::classify(float* logits) {
  const auto& head = weights_->classifier();
  if (!head)
    fail("{}: the model has no classification head (architecture '{}'); use --task embed",
         weights_->directory().string(), weights_->config().architecture);
  const std::int64_t h = weights_->config().hidden_size;
  const std::int64_t batch = static_cast<std::int64_t>(spans_.size());
  const std::int64_t rows = ops::padded_rows(batch);
  ensure(head_in_, rows, h);
  ensure(head_mid_, rows, h);
  for (std::int64_t s = 0; s < batch; ++s) {
    std::memcpy(head_in_.data() + s * h, x_.data() + spans_[s].offset * h,
                static_cast<std::size_t>(h) * sizeof(float));
  }
  ops::linear(ctx_, head->dense, head_in_.data(), batch, head_mid_.data(), head->dense_act);
  const std::int64_t labels = head->out.out_features();
  if (rows == batch) {
    ops::linear(ctx_, head->out, head_mid_.data(), batch, logits);
    return;
  }
  // The GEMM writes padded rows; keep them out of the caller's buffer.
  std::vector<float> padded(static_cast<std::size_t>(rows * labels));
  ops::linear(ctx_, head->out, head_mid_.data(), batch, padded.data());
  std::memcpy(logits, padded.data(), static_cast<std::size_t>(batch * labels) * sizeof(float));
}

void Encoder::predict(std::span<const SequenceInput> batch, const TaskSpec& task,
                      std::vector<float>& out) {
  forward(batch);
  const float* logits = nullptr;
  if (model::needs_logits(task)) {
    logits_.resize(batch.size() * static_cast<std::size_t>(weights_->config().num_labels));
    classify(logits_.data());
    logits = logits_.data();
  }
  ops::ScopedOpTimer timer(ctx_, ops::OpKind::kPooling);
  model::write_task_outputs(weights_->config(), task, batch, packed_.spans, x_.data(), logits, out);
}

}  // namespace mcinfer::cpu
