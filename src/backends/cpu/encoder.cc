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
  // Rotary positions (ModernBERT, decoders) take the tiled attention at every length.
  const bool tiled = c.modernbert.has_value() || c.decoder.has_value();
  const std::uint64_t bf16_attention = cpu::Bf16Attention::workspace_bytes_for(
      tokens, max_len, c.hidden_size, c.num_heads, threads, tiled);
  // x, qkv, ctx, tmp, ffn + the packed ids, types and positions + the attention's scratch.
  // bf16: x in f32; x, qkv, ctx, tmp and ffn in bf16; the attention's per-sequence blocks.
  // The QKV rows and the attention's output are wider than hidden in some decoders (Qwen3).
  const auto qkv = static_cast<std::uint64_t>(c.qkv_width());
  const auto context = static_cast<std::uint64_t>(c.context_width());
  std::uint64_t bytes =
      precision == ops::Precision::kBf16
          ? rows * h * 4 + rows * (h + qkv + context + h + inter) * 2 + bf16_attention
          : rows * (h + qkv + context + h + inter) * 4;
  if (precision == ops::Precision::kInt8) {
    // x and tmp in f32, their s8 copies and the FFN's middle rows in s8 (+ a bf16 or s8 one when
    // a plan keeps a GEMM out of int8), Q, K, V and the attention output in bf16, the s8 scratch
    // of the attention output, per-row scales.
    bytes = rows * h * 8 + rows * (h + inter) * 1 + rows * (qkv + context) * 2 + rows * inter * 2 +
            rows * context + rows * 16 + bf16_attention;
  }
  // Pre-norm layers (ModernBERT, decoders): the normalized copy of x and the gated FFN's [a | g]
  // rows, both f32; f32 attention rows in a bf16 or int8 decoder.
  if (c.modernbert || c.decoder) bytes += rows * (h + 2 * inter) * 4;
  if (c.decoder && precision != ops::Precision::kFp32) bytes += rows * (qkv + context) * 4;
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
  const std::int64_t d = c.head_dim();
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
  if (d.embeddings.scale != 1) {  // Gemma: the token embeddings times √hidden
    const float scale = d.embeddings.scale;
    for (std::int64_t i = 0; i < t * width; ++i) sum[i] *= scale;
  }
  if (e.norm.present()) {
    ops::residual_layer_norm(ctx_, sum, nullptr, t, width, e.norm.gamma, e.norm.beta,
                             d.embeddings.norm.eps);
  }
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
  // Only the attention pairs each layer's mask and window leave are counted.
  last_flops_ = 0;
  for (const LayerDesc& l : d.layers) {
    ops::AttentionRules band;
    band.causal = l.causal;
    band.window = l.window;
    for (const auto& s : spans_)
      last_flops_ +=
          4.0 * cpu::attention_pairs(s.length, band) * static_cast<double>(l.query_width());
    for (const GemmDesc& g : l.gemms)
      last_flops_ +=
          2.0 * static_cast<double>(t) * static_cast<double>(g.linear.in * g.linear.out());
  }
}

// Every family and precision runs this one loop over the layer description's steps (model::
// LayerDesc): each GEMM's input type is the one its weights were prepared for (fp32, bf16 or int8
// per GEMM: an int8 plan keeps some in the fallback precision), and each producer writes what its
// consumer reads. The residual stream x stays f32. Post-norm layers normalize x in place after
// each residual add, writing in the same pass the copy of x the next GEMM reads (bf16, or s8 with
// per-row scales); pre-norm layers normalize a copy of x before each block and add the block's
// output to x. bf16 models write the projections that feed a residual add in bf16, as under
// torch.autocast (a bf16 Linear's output is bf16 and the add promotes it to f32): half the bytes
// for the memory-bound norm pass. The FFN's middle rows are written by the first FFN GEMM's
// epilogue in the type the second reads (an int8 one quantizes them there); a gated FFN's [a | g]
// rows go through the gate first. Attention runs on f32 Q, K, V for fp32 models and for layers
// the bf16 kernels do not run (Weights::attention_type), bf16 ones otherwise. Calibration's
// observer sees each GEMM of an fp32 model.
Encoder::LayerRows Encoder::layer_rows() {
  using ops::DType;
  const EncoderDesc& d = weights_->desc();
  const std::int64_t h = d.hidden, rows = ops::padded_rows(tokens_);
  std::int64_t qkv_width = 0, context_width = 0;
  for (const LayerDesc& l : d.layers) {
    qkv_width = std::max(qkv_width, l.gemm(GemmSlot::kQkv).linear.out());
    context_width = std::max(context_width, l.query_width());
  }
  const DType attention_type = weights_->attention_type();
  LayerRows r{{nullptr, attention_type}, {nullptr, attention_type}, {nullptr, DType::kF32}};
  if (attention_type == DType::kBf16) {
    ensure(qkv_bf16_, rows, qkv_width);
    ensure(ctx_bf16_, rows, context_width);
    r.qkv.data = qkv_bf16_.data();
    r.context.data = ctx_bf16_.data();
  } else {
    ensure(qkv_, rows, qkv_width);
    ensure(ctx_buf_, rows, context_width);
    r.qkv.data = qkv_.data();
    r.context.data = ctx_buf_.data();
  }
  // Norms on a block's output (Gemma) read it in f32.
  bool block_norms = false;
  for (const LayerDesc& l : d.layers)
    block_norms = block_norms || l.post_attention_norm.present() || l.post_ffn_norm.present();
  if (weights_->precision() == ops::Precision::kBf16 && !block_norms) {
    ensure(tmp_bf16_, rows, h);
    r.projected = {tmp_bf16_.data(), DType::kBf16};
  } else {
    ensure(tmp_, rows, h);
    r.projected.data = tmp_.data();
  }
  return r;
}

void Encoder::layers(ops::ScoreBias bias) {
  const Weights& w = *weights_;
  const EncoderDesc& d = w.desc();
  const auto& layers = w.layers();
  const LayerRows rows = layer_rows();
  ops::ConstRows x_in = stream_rows(layers.front().gemm(GemmSlot::kQkv));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerWeights& lw = layers[i];
    const LayerDesc& ld = d.layers[i];
    const auto index = static_cast<std::int64_t>(i);
    const bool pre = ld.norm_placement == NormPlacement::kPre;
    const ops::Linear& qkv = lw.gemm(GemmSlot::kQkv);
    const ops::Linear& attn_out = lw.gemm(GemmSlot::kAttnOut);
    const ops::Linear& ffn_in = lw.gemm(GemmSlot::kFfnIn);
    // Attention block.
    using model::NormSlot;
    if (pre) x_in = normalized(lw.norm(NormSlot::kAttention), ld.attention_norm, qkv);
    run_gemm(index, ld.gemm(GemmSlot::kQkv), qkv, x_in, rows.qkv,
             ld.gemm(GemmSlot::kQkv).linear.activation);
    attend(i, rows.qkv, rows.context, bias);
    run_gemm(index, ld.gemm(GemmSlot::kAttnOut), attn_out, as_input(rows.context, attn_out),
             rows.projected, ld.gemm(GemmSlot::kAttnOut).linear.activation);
    if (ld.post_attention_norm.present())
      block_norm(lw.norm(NormSlot::kPostAttention), ld.post_attention_norm, rows.projected);
    x_in =
        close_block(pre, lw.norm(NormSlot::kAttention), ld.attention_norm, rows.projected, &ffn_in);
    // FFN block.
    if (pre) x_in = normalized(lw.norm(NormSlot::kFfn), ld.ffn_norm, ffn_in);
    const ops::Rows mid = ffn_middle(i, x_in);
    run_gemm(index, ld.gemm(GemmSlot::kFfnOut), lw.gemm(GemmSlot::kFfnOut),
             ops::ConstRows{mid.data, mid.type, mid.scales}, rows.projected,
             ld.gemm(GemmSlot::kFfnOut).linear.activation);
    if (ld.post_ffn_norm.present())
      block_norm(lw.norm(NormSlot::kPostFfn), ld.post_ffn_norm, rows.projected);
    const ops::Linear* next = i + 1 < layers.size() ? &layers[i + 1].gemm(GemmSlot::kQkv) : nullptr;
    x_in = close_block(pre, lw.norm(NormSlot::kFfn), ld.ffn_norm, rows.projected, next);
  }
  if (w.final_norm().present()) {
    const ops::Linear* none = nullptr;
    normalize_in_place(w.final_norm(), d.final_norm, none);
  }
}

ops::ConstRows Encoder::stream_rows(const ops::Linear& next) {
  using ops::DType;
  if (next.input_type() != DType::kBf16) return {x_.data(), DType::kF32};  // int8 quantizes f32
  const std::int64_t h = weights_->desc().hidden;
  ensure(x_bf16_, ops::padded_rows(tokens_), h);
  ops::to_bf16(ctx_, x_.data(), x_bf16_.data(), tokens_, h);
  return {x_bf16_.data(), DType::kBf16};
}

ops::ConstRows Encoder::as_input(ops::Rows rows, const ops::Linear& next) {
  using ops::DType;
  if (rows.type != DType::kF32 || next.input_type() != DType::kBf16)
    return {rows.data, rows.type, rows.scales};
  // f32 attention in a bf16 model (a layer the bf16 kernels do not run): its output rounded for
  // the bf16 projection, as autocast's Linear rounds its input.
  std::int64_t width = 0;
  for (const LayerDesc& l : weights_->desc().layers) width = std::max(width, l.query_width());
  ensure(ctx_bf16_, ops::padded_rows(tokens_), width);
  ops::to_bf16(ctx_, static_cast<const float*>(rows.data), ctx_bf16_.data(), tokens_, width);
  return {ctx_bf16_.data(), DType::kBf16};
}

// The layer's attention with every rule its description gives: q/k norms per head (f32 rows:
// such layers keep attention in f32), the shape, mask, window and rotary positions, MPNet's bias
// and DeBERTa's relative terms.
void Encoder::attend(std::size_t i, ops::Rows qkv, ops::Rows context, ops::ScoreBias bias) {
  const EncoderDesc& d = weights_->desc();
  const LayerDesc& ld = d.layers[i];
  const LayerWeights& lw = weights_->layers()[i];
  const std::int64_t ld_qkv = ld.gemm(GemmSlot::kQkv).linear.out();
  if (ld.query_norm.present()) {
    auto* rows = static_cast<float*>(qkv.data);
    ops::head_rms_norm(ctx_, rows, ld_qkv, tokens_, 0, ld.heads, ld.head_dim,
                       lw.norm(model::NormSlot::kQuery).gamma, ld.query_norm.eps);
    ops::head_rms_norm(ctx_, rows, ld_qkv, tokens_, ld.query_width(), ld.kv_heads, ld.head_dim,
                       lw.norm(model::NormSlot::kKey).gamma, ld.key_norm.eps);
  }
  ops::AttentionRules rules;
  rules.bias = bias;
  rules.relative.scale_terms = d.score_terms;
  if (d.disentangled)
    rules.relative = lw.relative.terms(relative_index_.data(), relative_origin_, d.score_terms);
  rules.causal = ld.causal;
  rules.window = ld.window;
  if (lw.rotary) rules.rotary = {lw.rotary, packed_.positions.data()};
  rules.kv_heads = ld.kv_heads;
  rules.head_dim = ld.head_dim;
  rules.scale = ld.score_scale;
  ops::attention(ctx_, ops::ConstRows{qkv.data, qkv.type}, context, spans_,
                 static_cast<int>(ld.heads), ld.query_width(), rules);
}

// Gemma's norm on a block's output, before its residual add (f32 rows: layer_rows keeps them so).
void Encoder::block_norm(const Norm& n, const NormDesc& desc, ops::Rows projected) {
  if (projected.type != ops::DType::kF32) fail("internal: a block norm over rows not in f32");
  const std::int64_t h = weights_->desc().hidden;
  auto* rows = static_cast<float*>(projected.data);
  ops::rms_norm(ctx_, rows, h, rows, h, tokens_, h, n.gamma, desc.eps);
}

// A block's output `projected` joins the residual stream: pre-norm, x += projected (the next
// block normalizes a copy); post-norm, x = norm(x + projected) with the copy `next` reads.
ops::ConstRows Encoder::close_block(bool pre, const Norm& n, const NormDesc& desc,
                                    ops::Rows projected, const ops::Linear* next) {
  const std::int64_t h = weights_->desc().hidden;
  if (pre) {
    ops::residual_add(ctx_, x_.data(), ops::ConstRows{projected.data, projected.type}, tokens_, h);
    return {x_.data(), ops::DType::kF32};
  }
  return normalize_in_place(n, desc, next, projected);
}

// x = norm(x + residual) (no residual: norm(x)), returning the rows `next` reads: x itself, or
// its bf16 or s8 copy written in the same pass (none after the last layer).
ops::ConstRows Encoder::normalize_in_place(const Norm& n, const NormDesc& desc,
                                           const ops::Linear* next, ops::Rows residual) {
  using ops::DType;
  const std::int64_t h = weights_->desc().hidden, t = tokens_, rows = ops::padded_rows(t);
  if (desc.kind != model::NormKind::kLayerNorm) {
    if (residual.data)
      ops::residual_add(ctx_, x_.data(), ops::ConstRows{residual.data, residual.type}, t, h);
    ops::rms_norm(ctx_, x_.data(), h, x_.data(), h, t, h, n.gamma, desc.eps);
    return next ? stream_rows(*next) : ops::ConstRows{x_.data(), DType::kF32};
  }
  const DType want = next ? next->input_type() : DType::kF32;
  if (residual.type == DType::kBf16) {
    const bool copy = want == DType::kBf16;
    if (copy) ensure(x_bf16_, rows, h);
    ops::residual_layer_norm(ctx_, x_.data(), static_cast<const ops::Bf16*>(residual.data), t, h,
                             n.gamma, n.beta, desc.eps, copy ? x_bf16_.data() : nullptr);
    if (copy) return {x_bf16_.data(), DType::kBf16};
    return {x_.data(), DType::kF32};
  }
  const auto* y = static_cast<const float*>(residual.data);
  switch (want) {
    case DType::kS8:
      ensure(x_s8_, rows, h);
      ensure(x_scales_, rows, 1);
      ops::residual_layer_norm_s8(ctx_, x_.data(), y, t, h, n.gamma, n.beta, desc.eps,
                                  next->input_multiplier(), x_s8_.data(), x_scales_.data());
      return {x_s8_.data(), DType::kS8, x_scales_.data()};
    case DType::kBf16:
      ensure(x_bf16_, rows, h);
      ops::residual_layer_norm(ctx_, x_.data(), y, t, h, n.gamma, n.beta, desc.eps, x_bf16_.data());
      return {x_bf16_.data(), DType::kBf16};
    case DType::kF32:
      break;
  }
  ops::residual_layer_norm(ctx_, x_.data(), y, t, h, n.gamma, n.beta, desc.eps);
  return {x_.data(), DType::kF32};
}

// The FFN's middle rows, in the type its second GEMM reads: written by the first GEMM's epilogue
// (an int8 one quantizes them there), or for a gated FFN by the gate over the first GEMM's
// [a | g] rows (bf16 in bf16 models, as autocast's Linear writes them; else f32).
ops::Rows Encoder::ffn_middle(std::size_t i, ops::ConstRows x_in) {
  using ops::DType, ops::Rows;
  const LayerDesc& ld = weights_->desc().layers[i];
  const LayerWeights& lw = weights_->layers()[i];
  const GemmDesc& g = ld.gemm(GemmSlot::kFfnIn);
  const ops::Linear& ffn_in = lw.gemm(GemmSlot::kFfnIn);
  const ops::Linear& ffn_out = lw.gemm(GemmSlot::kFfnOut);
  const std::int64_t inter = g.linear.out_after(), rows = ops::padded_rows(tokens_);
  const auto index = static_cast<std::int64_t>(i);
  if (!g.linear.gated) {
    Rows mid{nullptr, DType::kF32};
    switch (ffn_in.input_type() == DType::kS8 ? ffn_out.input_type() : ffn_in.input_type()) {
      case DType::kS8:
        ensure(ffn_s8_, rows, inter);
        ensure(ffn_scales_, rows, 1);
        mid = {ffn_s8_.data(), DType::kS8, ffn_scales_.data(), ffn_out.input_multiplier()};
        break;
      case DType::kBf16:
        ensure(ffn_bf16_, rows, inter);
        mid = {ffn_bf16_.data(), DType::kBf16};
        break;
      case DType::kF32:
        ensure(ffn_, rows, inter);
        mid.data = ffn_.data();
        break;
    }
    run_gemm(index, g, ffn_in, x_in, mid, g.linear.activation);
    return mid;
  }
  Rows gate{nullptr, DType::kF32};
  if (weights_->precision() == ops::Precision::kBf16) {
    ensure(gate_bf16_, rows, 2 * inter);
    gate = {gate_bf16_.data(), DType::kBf16};
  } else {
    ensure(gate_, rows, 2 * inter);
    gate.data = gate_.data();
  }
  run_gemm(index, g, ffn_in, x_in, gate, ops::Activation::kNone);
  Rows mid{nullptr, ffn_out.input_type() == DType::kBf16 ? DType::kBf16 : DType::kF32};
  if (mid.type == DType::kBf16) {
    ensure(ffn_bf16_, rows, inter);
    mid.data = ffn_bf16_.data();
  } else {
    ensure(ffn_, rows, inter);
    mid.data = ffn_.data();
  }
  ops::gated_activation(ctx_, gate, tokens_, inter, g.linear.activation, mid);
  return mid;
}

void Encoder::run_gemm(std::int64_t layer, const GemmDesc& g, const ops::Linear& w,
                       ops::ConstRows x, ops::Rows y, ops::Activation act) {
  ops::linear(ctx_, w, x, tokens_, y, act);
  if (observer_ && x.type == ops::DType::kF32 && y.type == ops::DType::kF32) {
    observer_(GemmId{layer, g.slot}, w, static_cast<const float*>(x.data), tokens_,
              static_cast<const float*>(y.data), act);
  }
}

// A copy of x normalized by `n` for the block's first GEMM (x kept), in the type `next` reads;
// x itself (or its bf16 copy) for an absent norm.
ops::ConstRows Encoder::normalized(const Norm& n, const NormDesc& desc, const ops::Linear& next) {
  using ops::DType;
  const std::int64_t h = weights_->desc().hidden, t = tokens_, rows = ops::padded_rows(t);
  if (!n.present()) return stream_rows(next);
  ensure(normed_, rows, h);
  if (desc.kind != model::NormKind::kLayerNorm) {
    ops::rms_norm(ctx_, x_.data(), h, normed_.data(), h, t, h, n.gamma, desc.eps);
    if (next.input_type() != DType::kBf16) return {normed_.data(), DType::kF32};
    ensure(x_bf16_, rows, h);
    ops::to_bf16(ctx_, normed_.data(), x_bf16_.data(), t, h);
    return {x_bf16_.data(), DType::kBf16};
  }
  std::memcpy(normed_.data(), x_.data(), static_cast<std::size_t>(t * h) * sizeof(float));
  const float* none = nullptr;
  const float eps = desc.eps;
  switch (next.input_type()) {
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
    const std::int64_t offset = spans_[s].offset, len = spans_[s].length;
    std::int64_t token = offset;
    if (head->pooling == model::HeadPooling::kLastNonPad) {
      // transformers: the rightmost token whose id is not the pad id (the first when all are).
      for (std::int64_t i = offset + len - 1; i >= offset; --i) {
        if (packed_.ids[static_cast<std::size_t>(i)] != head->pad_id) {
          token = i;
          break;
        }
      }
    }
    const float* first = x_.data() + token * h;
    std::memcpy(in, first, static_cast<std::size_t>(h) * sizeof(float));
    if (head->pooling != model::HeadPooling::kMean) continue;
    // ModernBERT's classifier_pooling "mean": the mean over the sequence's tokens.
    for (std::int64_t i = 1; i < len; ++i)
      for (std::int64_t c = 0; c < h; ++c) in[c] += first[i * h + c];
    for (std::int64_t c = 0; c < h; ++c) in[c] /= static_cast<float>(len);
  }
  if (head->dense) {
    ops::linear(ctx_, *head->dense, head_in_.data(), batch, head_mid_.data(), head->dense_act);
  } else {
    std::memcpy(head_mid_.data(), head_in_.data(),
                static_cast<std::size_t>(rows * h) * sizeof(float));
  }
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
