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
  const auto n_threads = static_cast<std::uint64_t>(threads < 1 ? 1 : threads);
  // ModernBERT's rotary positions take the tiled attention at every length.
  const bool tiled = c.modernbert.has_value();
  const std::uint64_t bf16_attention = cpu::Bf16Attention::workspace_bytes_for(
      tokens, max_len, c.hidden_size, c.num_heads, threads, tiled);
  // x, qkv, ctx, tmp, ffn + the packed ids, types and positions + the attention's scratch.
  // bf16: x in f32; x, qkv, ctx, tmp and ffn in bf16; the attention's per-sequence blocks.
  std::uint64_t bytes = precision == ops::Precision::kBf16
                            ? rows * h * 4 + rows * (h + 3 * h + h + h + inter) * 2 + bf16_attention
                            : rows * (h + 3 * h + h + h + inter) * 4;
  if (precision == ops::Precision::kInt8) {
    // x and tmp in f32, their s8 copies and the FFN's middle rows in s8 (+ a bf16 or s8 one when
    // a plan keeps a GEMM out of int8), Q, K, V and the attention output in bf16, the s8 scratch
    // of the attention output, per-row scales.
    bytes = rows * h * 8 + rows * (h + inter) * 1 + rows * (3 * h + h) * 2 + rows * inter * 2 +
            rows * h + rows * 16 + bf16_attention;
  }
  // ModernBERT: the normalized copy of x and the gated FFN's [a | g] rows, both f32.
  if (c.modernbert) bytes += rows * (h + 2 * inter) * 4;
  // DeBERTa's c2p and p2c products per thread ([len, reach] each, reach ≤ 2·len).
  if (c.disentangled) bytes += n_threads * 4 * len * len * 4;
  // ELECTRA's embeddings before their projection; MPNet's bias table [heads, 2·longest − 1].
  if (c.embedding_size > 0 && c.embedding_size != c.hidden_size)
    bytes += rows * static_cast<std::uint64_t>(c.embedding_size) * 4;
  if (c.relative_attention_buckets > 0)
    bytes += static_cast<std::uint64_t>(c.num_heads) * (2 * len) * 4;
  bytes += static_cast<std::uint64_t>(tokens) * 12;
  // The f32 attention's scratch per thread (cpu::attention_scratch_floats): a [len, len] block
  // for the rows the one-block path takes, the tiled path's bounded block for the others.
  std::int64_t square_len = tiled ? 0 : max_len;
  if (!tiled && c.relative_attention_buckets == 0 && !c.disentangled)
    square_len = std::min<std::int64_t>(max_len, cpu::kTiledFromLen);
  const std::int64_t d = c.hidden_size / c.num_heads;
  const auto square =
      static_cast<std::uint64_t>(square_len) * static_cast<std::uint64_t>(square_len);
  const std::uint64_t tiled_floats = static_cast<std::int64_t>(len) > square_len
                                         ? static_cast<std::uint64_t>(cpu::tiled_scratch_floats(d))
                                         : 0;
  bytes += n_threads * std::max(square, tiled_floats) * 4;
  return bytes + bytes / 4;  // buffers grow with 25% headroom
}

std::size_t Encoder::workspace_bytes() const {
  return x_.capacity_bytes() + qkv_.capacity_bytes() + ctx_buf_.capacity_bytes() +
         tmp_.capacity_bytes() + ffn_.capacity_bytes() + head_in_.capacity_bytes() +
         head_mid_.capacity_bytes() + x_bf16_.capacity_bytes() + ctx_bf16_.capacity_bytes() +
         ffn_bf16_.capacity_bytes() + qkv_bf16_.capacity_bytes() + tmp_bf16_.capacity_bytes() +
         x_s8_.capacity_bytes() + x_scales_.capacity_bytes() + ffn_s8_.capacity_bytes() +
         ffn_scales_.capacity_bytes() + embedded_.capacity_bytes() + normed_.capacity_bytes() +
         gate_.capacity_bytes() + gate_bf16_.capacity_bytes() +
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
  if (d.norm_placement == NormPlacement::kPre) {
    pre_norm_layers();
  } else {
    layers(bias);
  }
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
Encoder::LayerRows Encoder::layer_rows() {
  using ops::DType;
  const std::int64_t h = weights_->desc().hidden, rows = ops::padded_rows(tokens_);
  const DType attention_type = weights_->attention_type();
  LayerRows r{{nullptr, attention_type}, {nullptr, attention_type}, {nullptr, DType::kF32}};
  if (attention_type == DType::kBf16) {
    ensure(qkv_bf16_, rows, 3 * h);
    ensure(ctx_bf16_, rows, h);
    r.qkv.data = qkv_bf16_.data();
    r.context.data = ctx_bf16_.data();
  } else {
    ensure(qkv_, rows, 3 * h);
    ensure(ctx_buf_, rows, h);
    r.qkv.data = qkv_.data();
    r.context.data = ctx_buf_.data();
  }
  if (weights_->precision() == ops::Precision::kBf16) {
    ensure(tmp_bf16_, rows, h);
    r.projected = {tmp_bf16_.data(), DType::kBf16};
  } else {
    ensure(tmp_, rows, h);
    r.projected.data = tmp_.data();
  }
  return r;
}

void Encoder::layers(ops::ScoreBias bias) {
  const EncoderDesc& d = weights_->desc();
  const std::int64_t h = d.hidden, t = tokens_, inter = d.intermediate;
  const std::int64_t rows = ops::padded_rows(t);
  using ops::ConstRows, ops::Rows, ops::DType;
  const LayerRows buffers = layer_rows();
  const ops::Rows qkv = buffers.qkv, context = buffers.context, projected = buffers.projected;
  const DType residual_type = projected.type;
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
  auto gemm = [&](std::int64_t layer, const GemmDesc& g, const ops::Linear& w, ConstRows x,
                  Rows y) { run_gemm(layer, g, w, x, y, g.linear.activation); };
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
    ops::AttentionRules rules;
    rules.bias = bias;
    rules.relative.scale_terms = d.score_terms;
    if (d.disentangled)
      rules.relative =
          layer.relative.terms(relative_index_.data(), relative_origin_, d.score_terms);
    ops::attention(ctx_, ConstRows{qkv.data, qkv.type}, context, spans_, static_cast<int>(ld.heads),
                   h, rules);
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

void Encoder::run_gemm(std::int64_t layer, const GemmDesc& g, const ops::Linear& w,
                       ops::ConstRows x, ops::Rows y, ops::Activation act) {
  ops::linear(ctx_, w, x, tokens_, y, act);
  if (observer_ && x.type == ops::DType::kF32 && y.type == ops::DType::kF32) {
    observer_(GemmId{layer, g.slot}, w, static_cast<const float*>(x.data), tokens_,
              static_cast<const float*>(y.data), act);
  }
}

ops::ConstRows Encoder::normalized(const Norm& n, float eps, const ops::Linear& next) {
  using ops::DType;
  const std::int64_t h = weights_->desc().hidden, t = tokens_, rows = ops::padded_rows(t);
  const DType want = next.input_type();
  if (!n.present()) {
    if (want != DType::kBf16) return {x_.data(), DType::kF32};  // an int8 layer quantizes f32
    ensure(x_bf16_, rows, h);
    ops::to_bf16(ctx_, x_.data(), x_bf16_.data(), t, h);
    return {x_bf16_.data(), DType::kBf16};
  }
  ensure(normed_, rows, h);
  std::memcpy(normed_.data(), x_.data(), static_cast<std::size_t>(t * h) * sizeof(float));
  const float* none = nullptr;
  switch (want) {
    case DType::kS8:
      ensure(x_s8_, rows, h);
      ensure(x_scales_, rows, 1);
      ops::residual_layer_norm_s8(ctx_, normed_.data(), none, t, h, n.gamma, n.beta, eps,
                                  next.input_multiplier(), x_s8_.data(), x_scales_.data());
      return {x_s8_.data(), DType::kS8, x_scales_.data()};
    case DType::kBf16:
      ensure(x_bf16_, rows, h);
      ops::residual_layer_norm(ctx_, normed_.data(), none, t, h, n.gamma, n.beta, eps,
                               x_bf16_.data());
      return {x_bf16_.data(), DType::kBf16};
    case DType::kF32:
      break;
  }
  ops::residual_layer_norm(ctx_, normed_.data(), none, t, h, n.gamma, n.beta, eps);
  return {normed_.data(), DType::kF32};
}

// Pre-norm (ModernBERT): x += Wo(attention(Wqkv(norm(x)))), the attention rotating queries and
// keys as it packs them; x += Wo(gate(Wi(norm(x))));
// the residual stream x stays f32 and is never normalized in place; each norm writes the copy
// its GEMM reads. The gated FFN's first GEMM writes f32 [a | g]; the gate writes what the second
// GEMM reads (an int8 one quantizes the f32 rows itself).
void Encoder::pre_norm_layers() {
  using ops::ConstRows, ops::Rows, ops::DType;
  const Weights& w = *weights_;
  const EncoderDesc& d = w.desc();
  const std::int64_t h = d.hidden, t = tokens_, inter = d.intermediate;
  const std::int64_t rows = ops::padded_rows(t);
  const LayerRows buffers = layer_rows();
  const ops::Rows qkv = buffers.qkv, context = buffers.context, projected = buffers.projected;
  // A bf16 model's gated FFN writes its [a | g] rows in bf16, as autocast's Linear does: half the
  // bytes of the layer's widest output, written by the GEMM and read back by the gate.
  Rows gate{nullptr, DType::kF32};
  if (w.precision() == ops::Precision::kBf16) {
    ensure(gate_bf16_, rows, 2 * inter);
    gate = {gate_bf16_.data(), DType::kBf16};
  } else {
    ensure(gate_, rows, 2 * inter);
    gate.data = gate_.data();
  }
  for (std::size_t i = 0; i < w.layers().size(); ++i) {
    const LayerWeights& layer = w.layers()[i];
    const LayerDesc& ld = d.layers[i];
    const auto index = static_cast<std::int64_t>(i);
    const ops::Linear& qkv_w = layer.gemm(GemmSlot::kQkv);
    const ops::Linear& ffn_in = layer.gemm(GemmSlot::kFfnIn);
    const ops::Linear& ffn_out = layer.gemm(GemmSlot::kFfnOut);
    const GemmDesc& ffn_in_desc = ld.gemm(GemmSlot::kFfnIn);
    run_gemm(index, ld.gemm(GemmSlot::kQkv), qkv_w,
             normalized(layer.attention_norm, ld.attention_norm.eps, qkv_w), qkv,
             ops::Activation::kNone);
    ops::AttentionRules rules;
    rules.window = ld.window;
    if (layer.rotary) rules.rotary = {layer.rotary, packed_.positions.data()};
    ops::attention(ctx_, ConstRows{qkv.data, qkv.type}, context, spans_, static_cast<int>(ld.heads),
                   h, rules);
    run_gemm(index, ld.gemm(GemmSlot::kAttnOut), layer.gemm(GemmSlot::kAttnOut),
             ConstRows{context.data, context.type}, projected, ops::Activation::kNone);
    ops::residual_add(ctx_, x_.data(), ConstRows{projected.data, projected.type}, t, h);
    run_gemm(index, ffn_in_desc, ffn_in, normalized(layer.ffn_norm, ld.ffn_norm.eps, ffn_in), gate,
             ops::Activation::kNone);
    Rows mid{nullptr, ffn_out.input_type() == DType::kBf16 ? DType::kBf16 : DType::kF32};
    if (mid.type == DType::kBf16) {
      ensure(ffn_bf16_, rows, inter);
      mid.data = ffn_bf16_.data();
    } else {
      ensure(ffn_, rows, inter);
      mid.data = ffn_.data();
    }
    ops::gated_activation(ctx_, gate, t, inter, ffn_in_desc.linear.activation, mid);
    run_gemm(index, ld.gemm(GemmSlot::kFfnOut), ffn_out, ConstRows{mid.data, mid.type}, projected,
             ops::Activation::kNone);
    ops::residual_add(ctx_, x_.data(), ConstRows{projected.data, projected.type}, t, h);
  }
  const Norm& final_norm = w.final_norm();
  if (final_norm.present()) {
    const float* none = nullptr;
    ops::residual_layer_norm(ctx_, x_.data(), none, t, h, final_norm.gamma, final_norm.beta,
                             d.final_norm.eps);
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
    float* in = head_in_.data() + s * h;
    const float* first = x_.data() + spans_[s].offset * h;
    std::memcpy(in, first, static_cast<std::size_t>(h) * sizeof(float));
    if (!head->mean_pooling) continue;
    // ModernBERT's classifier_pooling "mean": the mean over the sequence's tokens.
    const std::int64_t len = spans_[s].length;
    for (std::int64_t i = 1; i < len; ++i)
      for (std::int64_t c = 0; c < h; ++c) in[c] += first[i * h + c];
    for (std::int64_t c = 0; c < h; ++c) in[c] /= static_cast<float>(len);
  }
  ops::linear(ctx_, head->dense, head_in_.data(), batch, head_mid_.data(), head->dense_act);
  if (head->norm.present()) {
    const float* none = nullptr;
    ops::residual_layer_norm(ctx_, head_mid_.data(), none, batch, h, head->norm.gamma,
                             head->norm.beta, head->norm_eps);
  }
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

namespace {

// Token rows of MLM logits computed at a time: the vocabulary projection's output exists for
// this many tokens only (30522 × 64 floats for BERT's vocabulary, 7.8 MB), never for a batch.
constexpr std::int64_t kSparseBlock = 64;

// One token's logits through SpladePooling's activation, folded into its sequence's row.
void fold_splade(const model::SparseSpec& spec, const float* logits, float* row,
                 std::int64_t vocab) {
  if (spec.pooling == model::SpladePooling::kMax) {
    for (std::int64_t v = 0; v < vocab; ++v)
      row[v] = std::max(row[v], model::splade_activation(spec.activation, logits[v]));
  } else {
    for (std::int64_t v = 0; v < vocab; ++v)
      row[v] += model::splade_activation(spec.activation, logits[v]);
  }
}

}  // namespace

// The MLM head on every kept token (padding is never packed, which is SpladePooling's attention
// mask), then its logits a block of tokens at a time, each block folded into its sequences'
// rows at once. The activation is never below 0, so a row starting at 0 is max pooling's -inf
// start for any sequence with a token.
void Encoder::sparse(const model::SparseSpec& spec, float* out) {
  const auto& head = weights_->mlm_head();
  if (!head) {
    fail("{}: the model has no MLM head (not a SparseEncoder directory); --task sparse needs one",
         weights_->directory().string());
  }
  const std::int64_t h = weights_->desc().hidden;
  const std::int64_t vocab = head->decoder.out_features();
  const std::int64_t t = tokens_;
  const auto batch = static_cast<std::int64_t>(spans_.size());
  // Room past the last token for the padded rows a block's GEMM reads.
  ensure(mlm_in_, ops::padded_rows(t) + ops::padded_rows(kSparseBlock), h);
  ensure(vocab_block_, ops::padded_rows(kSparseBlock), vocab);
  ops::linear(ctx_, head->transform, x_.data(), t, mlm_in_.data(), head->transform_act);
  const float* none = nullptr;
  ops::residual_layer_norm(ctx_, mlm_in_.data(), none, t, h, head->norm.gamma, head->norm.beta,
                           head->norm_eps);
  std::fill(out, out + batch * vocab, 0.0f);
  std::int64_t seq = 0;
  for (std::int64_t first = 0; first < t; first += kSparseBlock) {
    const std::int64_t rows = std::min(kSparseBlock, t - first);
    ops::linear(ctx_, head->decoder, mlm_in_.data() + first * h, rows, vocab_block_.data());
    for (std::int64_t r = 0; r < rows; ++r) {
      while (first + r >= spans_[seq].offset + spans_[seq].length) ++seq;
      fold_splade(spec, vocab_block_.data() + r * vocab, out + seq * vocab, vocab);
    }
  }
  model::keep_top_k(out, batch, vocab, spec.top_k);
}

void Encoder::predict(std::span<const SequenceInput> batch, const TaskSpec& task,
                      std::vector<float>& out) {
  forward(batch);
  if (task.kind == model::TaskKind::kSparse) {
    out.resize(batch.size() * static_cast<std::size_t>(weights_->config().vocab_size));
    sparse(task.sparse, out.data());
    return;
  }
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
