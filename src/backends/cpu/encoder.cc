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
  // DeBERTa's c2p and p2c products per thread ([len, reach] each, reach ≤ 2·len).
  if (c.disentangled) bytes += static_cast<std::uint64_t>(threads) * 4 * len * len * 4;
  // ELECTRA's embeddings before their projection; MPNet's bias table [heads, 2·longest − 1].
  if (c.embedding_size > 0 && c.embedding_size != c.hidden_size)
    bytes += rows * static_cast<std::uint64_t>(c.embedding_size) * 4;
  if (c.relative_attention_buckets > 0)
    bytes += static_cast<std::uint64_t>(c.num_heads) * (2 * len) * 4;
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
         ffn_scales_.capacity_bytes() + embedded_.capacity_bytes() +
         relative_bias_.capacity() * sizeof(float) + ctx_.workspace_bytes();
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
  const EncoderDesc& d = w.desc();
  const std::int64_t h = d.hidden, t = tokens_, width = d.embeddings.width;
  const EmbeddingWeights& e = w.embeddings();
  ensure(x_, ops::padded_rows(t), h);
  // Embeddings narrower than the layers (ELECTRA) are summed and normalized at their width,
  // then projected.
  float* sum = x_.data();
  if (e.projection) {
    ensure(embedded_, ops::padded_rows(t), width);
    sum = embedded_.data();
  }
  ops::embedding_sum(ctx_, sum, t, width, e.word, packed_.ids.data(), e.position,
                     packed_.positions.data(), e.token_type,
                     e.token_type ? packed_.types.data() : nullptr);
  ops::residual_layer_norm(ctx_, sum, nullptr, t, width, e.norm.gamma, e.norm.beta,
                           d.embeddings.norm.eps);
  if (e.projection) ops::linear(ctx_, *e.projection, sum, t, x_.data());
  ops::ScoreBias bias;
  if (d.relative_bias) {
    const std::int64_t longest = packed_.longest();
    model::relative_bias_by_distance(*d.relative_bias, e.relative_bias, d.heads, longest,
                                     relative_bias_);
    bias = {relative_bias_.data(), 2 * longest - 1, longest - 1};
  }
  if (d.disentangled) {
    relative_origin_ = packed_.longest() - 1;
    model::relative_index_by_distance(*d.disentangled, packed_.longest(), relative_index_);
  }
  layers(bias);
  double attention_flops = 0;
  for (const auto& s : spans_)
    attention_flops += 4.0 * static_cast<double>(s.length) * s.length * h;
  double dense = 0;
  for (const GemmDesc& g : d.layers.front().gemms)
    dense += 2.0 * static_cast<double>(t) * static_cast<double>(g.linear.in * g.linear.out());
  last_flops_ = static_cast<double>(d.layers.size()) * (dense + attention_flops);
}

// Every precision runs this loop: each GEMM's input type is the one its weights were prepared
// for (fp32, bf16 or int8 per GEMM: an int8 plan keeps some in the fallback precision), and each
// producer writes what its consumer reads. The residual stream x and LayerNorm stay f32; each
// LayerNorm also writes the copy of x the next GEMM reads (bf16, or s8 with per-row scales, in
// the same pass). bf16 models write the projections that feed a residual add in bf16, as under
// torch.autocast (a bf16 Linear's output is bf16 and the add promotes it to f32): half the bytes
// for the memory-bound LayerNorm pass (7% of a bert-base batch). The FFN's middle rows are
// written by the first FFN GEMM's epilogue in the type the second reads (an int8 one quantizes
// them there). Attention runs on f32 Q, K, V for fp32 models, bf16 ones otherwise (int8: where
// the CPU has bf16). Calibration's observer sees each GEMM of an fp32 model.
void Encoder::layers(ops::ScoreBias bias) {
  const EncoderDesc& d = weights_->desc();
  const std::int64_t h = d.hidden, t = tokens_, inter = d.intermediate;
  const std::int64_t rows = ops::padded_rows(t);
  using ops::ConstRows, ops::Rows, ops::DType;
  const DType attention_type = weights_->attention_type();
  const DType residual_type =
      weights_->precision() == ops::Precision::kBf16 ? DType::kBf16 : DType::kF32;
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
  Rows projected{nullptr, residual_type};
  if (residual_type == DType::kBf16) {
    ensure(tmp_bf16_, rows, h);
    projected.data = tmp_bf16_.data();
  } else {
    ensure(tmp_, rows, h);
    projected.data = tmp_.data();
  }
  // x_ = LayerNorm(x_ + projected), with the copy of x that `next` reads (none after the last
  // layer).
  auto norm = [&](const Norm& n, float eps, const ops::Linear* next) -> ConstRows {
    const DType want = next ? next->input_type() : DType::kF32;
    if (residual_type == DType::kBf16) {
      const bool copy = want == DType::kBf16;
      if (copy) ensure(x_bf16_, rows, h);
      ops::residual_layer_norm(ctx_, x_.data(), static_cast<const ops::Bf16*>(projected.data), t, h,
                               n.gamma, n.beta, eps, copy ? x_bf16_.data() : nullptr);
      if (copy) return {x_bf16_.data(), DType::kBf16};
      return {x_.data(), DType::kF32};
    }
    const auto* y = static_cast<const float*>(projected.data);
    switch (want) {
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
  // else ffn_in's own type (an int8 ffn_out then quantizes them).
  auto ffn_rows = [&](const ops::Linear& ffn_in, const ops::Linear& ffn_out) -> Rows {
    const DType in = ffn_in.input_type();
    switch (in == DType::kS8 ? ffn_out.input_type() : in) {
      case DType::kS8:
        ensure(ffn_s8_, rows, inter);
        ensure(ffn_scales_, rows, 1);
        return {ffn_s8_.data(), DType::kS8, ffn_scales_.data(), ffn_out.input_multiplier()};
      case DType::kBf16:
        ensure(ffn_bf16_, rows, inter);
        return {ffn_bf16_.data(), DType::kBf16};
      case DType::kF32:
        break;
    }
    ensure(ffn_, rows, inter);
    return {ffn_.data(), DType::kF32};
  };
  // One GEMM, shown to the observer when its input and output are f32.
  auto gemm = [&](std::int64_t layer, const GemmDesc& g, const ops::Linear& w, ConstRows x,
                  Rows y) {
    ops::linear(ctx_, w, x, t, y, g.linear.activation);
    if (observer_ && x.type == DType::kF32 && y.type == DType::kF32) {
      observer_(GemmId{layer, g.slot}, w, static_cast<const float*>(x.data), t,
                static_cast<const float*>(y.data), g.linear.activation);
    }
  };
  const auto& layers = weights_->layers();
  ConstRows x_in{x_.data(), DType::kF32};  // an int8 first layer quantizes it itself
  if (layers.front().gemm(GemmSlot::kQkv).input_type() == DType::kBf16) {
    ensure(x_bf16_, rows, h);
    ops::to_bf16(ctx_, x_.data(), x_bf16_.data(), t, h);
    x_in = {x_bf16_.data(), DType::kBf16};
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerWeights& layer = layers[i];
    const LayerDesc& ld = d.layers[i];
    const auto index = static_cast<std::int64_t>(i);
    const ops::Linear& ffn_in = layer.gemm(GemmSlot::kFfnIn);
    const ops::Linear& ffn_out = layer.gemm(GemmSlot::kFfnOut);
    gemm(index, ld.gemm(GemmSlot::kQkv), layer.gemm(GemmSlot::kQkv), x_in, qkv);
    ops::RelativeTerms relative;
    relative.scale_terms = d.score_terms;
    if (d.disentangled)
      relative = layer.relative.terms(relative_index_.data(), relative_origin_, d.score_terms);
    ops::attention(ctx_, ConstRows{qkv.data, qkv.type}, context, spans_, static_cast<int>(ld.heads),
                   h, bias, relative);
    gemm(index, ld.gemm(GemmSlot::kAttnOut), layer.gemm(GemmSlot::kAttnOut),
         ConstRows{context.data, context.type}, projected);
    x_in = norm(layer.attention_norm, ld.attention_norm.eps, &ffn_in);
    const Rows mid = ffn_rows(ffn_in, ffn_out);
    gemm(index, ld.gemm(GemmSlot::kFfnIn), ffn_in, x_in, mid);
    gemm(index, ld.gemm(GemmSlot::kFfnOut), ffn_out, ConstRows{mid.data, mid.type, mid.scales},
         projected);
    x_in = norm(layer.ffn_norm, ld.ffn_norm.eps,
                i + 1 < layers.size() ? &layers[i + 1].gemm(GemmSlot::kQkv) : nullptr);
  }
}

void Encoder::classify(float* logits) {
  const auto& head = weights_->classifier();
  if (!head)
    fail("{}: the model has no classification head (architecture '{}'); use --task embed",
         weights_->directory().string(), weights_->config().architecture);
  const std::int64_t h = weights_->desc().hidden;
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
