#include "backends/cpu/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/half.h"

namespace mcinfer::ops {
namespace {

// Splits rows across the context's threads; a single thread calls fn once with all rows.
template <typename Fn>
void for_row_blocks(Context& ctx, std::int64_t rows, Fn&& fn) {
  const int threads = ctx.threads();
  if (threads <= 1 || rows < 2 * threads) {
    fn(std::int64_t{0}, rows);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const std::int64_t begin = rows * t / threads;
    const std::int64_t end = rows * (t + 1) / threads;
    if (end > begin) fn(begin, end - begin);
  }
}

}  // namespace

std::unique_ptr<Device> Device::cpu(std::optional<cpu::Isa> isa) {
  auto device = std::unique_ptr<Device>(new Device());
  cpu::Isa chosen = isa.value_or(cpu::best_isa());
  bool supported = false;
  for (cpu::Isa s : cpu::supported_isas()) supported |= (s == chosen);
  if (!supported)
    fail_usage("this CPU does not support the {} instruction set", cpu::isa_name(chosen));
  device->kernels_ = &cpu::kernels_for(chosen);
  device->gemm_ = std::make_unique<cpu::GemmEngine>();
  return device;
}

std::string Device::description() const {
  // Our own attention kernels do not show in oneDNN's verbose log: say here which runs.
  const char* fused = "";
  switch (cpu::Bf16Attention::fused_for(*kernels_, 64)) {
    case cpu::FusedAttention::kAmx:
      fused = ", bf16 attention on AMX tiles (ours, head sizes 32-128)";
      break;
    case cpu::FusedAttention::kDot:
      fused = ", bf16 attention on avx512_bf16 dot products (ours, head sizes 32-128)";
      break;
    case cpu::FusedAttention::kNone:
      break;
  }
  return fmt::format("cpu ({} kernels, {}{})", cpu::isa_name(isa()), cpu::gemm_description(),
                     fused);
}

Precision int8_fallback_precision() {
  return cpu::native_bf16_isa().empty() ? Precision::kFp32 : Precision::kBf16;
}

namespace {
PrecisionChoice resolve_int8() {
  const std::string isa = cpu::int8_isa();
  if (isa.empty()) {
    fail_usage(
        "--precision int8: this CPU has no AVX2, the least int8 GEMMs run on{}; use --precision "
        "fp32",
        std::getenv("MCINFER_MAX_ISA") || std::getenv("ONEDNN_MAX_CPU_ISA")
            ? " (or MCINFER_MAX_ISA / ONEDNN_MAX_CPU_ISA caps it)"
            : "");
  }
  const std::string native = cpu::native_int8_isa();
  PrecisionChoice choice;
  choice.precision = Precision::kInt8;
  choice.native_isa = isa;
  // Without VNNI the GEMMs are ours (gemm_avx2.h): exact s8 products, as VNNI's.
  choice.reason = fmt::format(
      "precision int8 (requested; {}; attention in {})",
      native.empty() ? "avx2: no VNNI, s8 products widened to 16 bits (ours)" : "native: " + native,
      precision_name(int8_fallback_precision()));
  return choice;
}
}  // namespace

namespace {

// MCINFER_EMULATED_BF16=1 lets an explicit bf16 run without native bf16 dot products: emulated by
// the GEMM library on AVX-512 (without avx512_bf16, or oneDNN capped below it), by our kernels on
// AVX2 (gemm_avx2.h). Slower than fp32, so refused without the variable and never chosen by auto;
// it exists so that the bf16 path's numbers are checked on CPUs that lack the instructions (the
// test setup sets it).
bool emulated_bf16_allowed() {
  const char* env = std::getenv("MCINFER_EMULATED_BF16");
  return env != nullptr && std::string_view(env) == "1" && !cpu::emulated_bf16_isa().empty();
}

std::string emulated_by() {
  const std::string isa = cpu::emulated_bf16_isa();
  return isa == "avx512_core" ? "by the GEMM library on avx512_core" : "on " + isa;
}

}  // namespace

PrecisionChoice resolve_precision(Precision requested) {
  PrecisionChoice choice;
  const std::string native = cpu::native_bf16_isa();
  switch (requested) {
    case Precision::kFp32:
      choice.reason = "precision fp32 (requested)";
      return choice;
    case Precision::kBf16:
      if (native.empty() && emulated_bf16_allowed()) {
        choice.precision = Precision::kBf16;
        choice.reason = fmt::format(
            "precision bf16 (requested; emulated {}: MCINFER_EMULATED_BF16=1, slower than fp32, "
            "for checking the bf16 path)",
            emulated_by());
        return choice;
      }
      if (native.empty()) {
        fail_usage(
            "--precision bf16: this CPU has no native bf16 dot products (neither avx512_bf16 nor "
            "amx_bf16{}); use --precision fp32{}",
            std::getenv("ONEDNN_MAX_CPU_ISA") ? ", or ONEDNN_MAX_CPU_ISA caps them" : "",
            cpu::emulated_bf16_isa().empty()
                ? ""
                : " (MCINFER_EMULATED_BF16=1 runs it emulated, slower than fp32, to check its "
                  "numbers)");
      }
      choice.precision = Precision::kBf16;
      choice.native_isa = native;
      choice.reason = fmt::format("precision bf16 (requested; native: {})", native);
      return choice;
    case Precision::kInt8:
      return resolve_int8();
    case Precision::kAuto:
      break;
  }
  if (native.empty()) {
    // int8 is never chosen for the user (it changes the numbers more); say that it runs here.
    const std::string int8 = cpu::int8_isa();
    choice.reason = int8.empty() ? "precision fp32 (auto: no native bf16 dot products on this CPU)"
                                 : fmt::format(
                                       "precision fp32 (auto: no native bf16 dot products "
                                       "on this CPU; --precision int8 runs here on {})",
                                       int8);
    return choice;
  }
  choice.precision = Precision::kBf16;
  choice.native_isa = native;
  choice.reason = fmt::format(
      "precision bf16 (auto; native: {}); --precision fp32 for exact transformers parity", native);
  return choice;
}

Linear Linear::prepare(const Device& device, const void* weight, DType weight_type,
                       const float* bias, std::int64_t out, std::int64_t in, Precision precision,
                       const float* input_max) {
  if (precision == Precision::kAuto) fail("internal: Linear::prepare needs a resolved precision");
  Linear linear;
  if (input_max && precision == Precision::kInt8) {
    linear.cpu_ = std::make_unique<cpu::PackedLinear>(device.gemm_engine(), weight, weight_type,
                                                      bias, out, in, input_max);
    return linear;
  }
  const DType compute = precision == Precision::kBf16   ? DType::kBf16
                        : precision == Precision::kInt8 ? DType::kS8
                                                        : DType::kF32;
  linear.cpu_ = std::make_unique<cpu::PackedLinear>(device.gemm_engine(), weight, weight_type, bias,
                                                    out, in, compute);
  return linear;
}

Context::Context(const Device& device, int threads, EpilogueMode epilogue)
    : device_(device),
      threads_(threads < 1 ? 1 : threads),
      epilogue_(epilogue),
      gemm_(device.gemm_engine(), threads_) {}

cpu::Bf16Attention& Context::bf16_attention() {
  if (!bf16_attention_)
    bf16_attention_ =
        std::make_unique<cpu::Bf16Attention>(device_.gemm_engine(), device_.kernels(), threads_);
  return *bf16_attention_;
}

std::size_t Context::workspace_bytes() const {
  return (bf16_attention_ ? bf16_attention_->workspace_bytes() : 0) + attention_scratch_.bytes();
}

std::int64_t padded_rows(std::int64_t rows) { return cpu::GemmRunner::round_rows(rows); }

ScopedOpTimer::ScopedOpTimer(Context& ctx, OpKind kind, double flops)
    : profile_(ctx.profile()), kind_(kind), flops_(flops) {
  if (profile_) start_ = std::chrono::steady_clock::now();
}

ScopedOpTimer::~ScopedOpTimer() {
  if (!profile_) return;
  auto i = static_cast<std::size_t>(kind_);
  profile_->seconds[i] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  profile_->flops[i] += flops_;
}

namespace {
std::string_view dtype_name(DType type) {
  switch (type) {
    case DType::kF32:
      return "f32";
    case DType::kBf16:
      return "bf16";
    case DType::kS8:
      return "s8";
  }
  return "?";
}

// x quantized per row into the context's scratch (an int8 layer given f32 or bf16 rows), each
// column multiplied by `mul` first (null: 1).
ConstRows quantized(Context& ctx, ConstRows x, std::int64_t rows, std::int64_t cols,
                    const float* mul) {
  ScopedOpTimer timer(ctx, OpKind::kConvert);
  const std::int64_t padded = padded_rows(rows);
  auto& q = ctx.s8_scratch();
  auto& scales = ctx.s8_scratch_scales();
  // Zero-filled when grown: the padded rows the GEMM reads past the batch stay finite.
  if (q.size() < static_cast<std::size_t>(padded * cols))
    q.resize_zeroed(static_cast<std::size_t>(padded * cols));
  if (scales.size() < static_cast<std::size_t>(padded))
    scales.resize_zeroed(static_cast<std::size_t>(padded));
  const auto& k = ctx.device().kernels();
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    if (x.type == DType::kBf16) {
      k.quantize_bf16_rows(static_cast<const Bf16*>(x.data) + begin * cols, count, cols, mul,
                           q.data() + begin * cols, scales.data() + begin);
    } else {
      k.quantize_rows(static_cast<const float*>(x.data) + begin * cols, count, cols, mul,
                      q.data() + begin * cols, scales.data() + begin);
    }
  });
  return ConstRows{q.data(), DType::kS8, scales.data()};
}

void linear_s8(Context& ctx, const Linear& w, ConstRows x, std::int64_t rows, Rows y,
               Activation act, double flops) {
  if (x.type != DType::kS8) x = quantized(ctx, x, rows, w.in_features(), w.input_multiplier());
  cpu::Int8Output out;
  switch (y.type) {
    case DType::kF32:
      out = {cpu::Int8Output::kF32, static_cast<float*>(y.data)};
      break;
    case DType::kBf16:
      out = {cpu::Int8Output::kBf16, nullptr, static_cast<Bf16*>(y.data)};
      break;
    case DType::kS8:
      out = {cpu::Int8Output::kS8, nullptr, nullptr, static_cast<std::int8_t*>(y.data), y.scales,
             y.multiplier};
      break;
  }
  ScopedOpTimer timer(ctx, OpKind::kGemm, flops);
  ctx.gemm().linear_s8(w.cpu_weights(), static_cast<const std::int8_t*>(x.data), x.scales, rows,
                       out, act, ctx.device().kernels());
}
}  // namespace

void linear(Context& ctx, const Linear& w, ConstRows x, std::int64_t rows, Rows y, Activation act) {
  // An int8 layer takes rows of any type (it quantizes f32 and bf16 rows itself); others their own.
  const bool s8 = w.input_type() == DType::kS8;
  if (s8 ? (x.type == DType::kS8 && x.scales == nullptr) : x.type != w.input_type())
    fail("internal: a {} layer was given {} input", dtype_name(w.input_type()), dtype_name(x.type));
  if (y.type == DType::kS8 && (!s8 || y.scales == nullptr))
    fail("internal: only an int8 layer writes s8 rows, with their scales");
  const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(w.in_features()) *
                       static_cast<double>(w.out_features());
  if (s8) {
    linear_s8(ctx, w, x, rows, y, act, flops);
    return;
  }
  // Our own epilogue kernel works on f32 outputs; a bf16 output always takes the GEMM's.
  if (ctx.epilogue() == EpilogueMode::kInGemm || y.type != DType::kF32) {
    ScopedOpTimer timer(ctx, OpKind::kGemm, flops);
    ctx.gemm().linear(w.cpu_weights(), x.data, rows, y.data, y.type, act);
    return;
  }
  {
    ScopedOpTimer timer(ctx, OpKind::kGemm, flops);
    ctx.gemm().linear(w.cpu_weights(), x.data, rows, y.data, y.type, Activation::kNone,
                      /*with_bias=*/false);
  }
  float* yf = static_cast<float*>(y.data);
  const float* bias = w.cpu_weights().bias();
  if (act != Activation::kNone || bias != nullptr) {
    ScopedOpTimer timer(ctx, OpKind::kActivation);
    const std::int64_t cols = w.out_features();
    const auto& k = ctx.device().kernels();
    for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
      k.bias_activation(yf + begin * cols, count, cols, cols, bias, act);
    });
  }
}

void to_bf16(Context& ctx, const float* x, Bf16* y, std::int64_t rows, std::int64_t cols) {
  ScopedOpTimer timer(ctx, OpKind::kConvert);
  const auto& k = ctx.device().kernels();
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    k.to_bf16(x + begin * cols, y + begin * cols, count * cols);
  });
}

namespace {
// Row blocks of x (and of y, x_bf16 when given) through `norm(x, y, x_bf16, count)`.
template <typename Y, typename Norm>
void layer_norm_blocks(Context& ctx, float* x, const Y* y, std::int64_t rows, std::int64_t cols,
                       Bf16* x_bf16, Norm norm) {
  ScopedOpTimer timer(ctx, OpKind::kLayerNorm);
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    norm(x + begin * cols, y ? y + begin * cols : nullptr, x_bf16 ? x_bf16 + begin * cols : nullptr,
         count);
  });
}
}  // namespace

void residual_layer_norm(Context& ctx, float* x, const float* y, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps,
                         Bf16* x_bf16) {
  const auto& k = ctx.device().kernels();
  layer_norm_blocks(ctx, x, y, rows, cols, x_bf16,
                    [&](float* xb, const float* yb, Bf16* xb16, std::int64_t count) {
                      k.residual_layer_norm(xb, yb, nullptr, count, cols, gamma, beta, eps, xb16);
                    });
}

void residual_layer_norm_s8(Context& ctx, float* x, const float* y, std::int64_t rows,
                            std::int64_t cols, const float* gamma, const float* beta, float eps,
                            const float* multiplier, std::int8_t* x_s8, float* x_scales) {
  ScopedOpTimer timer(ctx, OpKind::kLayerNorm);
  const auto& k = ctx.device().kernels();
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    k.residual_layer_norm_s8(x + begin * cols, y ? y + begin * cols : nullptr, count, cols, gamma,
                             beta, eps, multiplier, x_s8 + begin * cols, x_scales + begin);
  });
}

void residual_layer_norm(Context& ctx, float* x, const Bf16* y, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps,
                         Bf16* x_bf16) {
  const auto& k = ctx.device().kernels();
  layer_norm_blocks(ctx, x, y, rows, cols, x_bf16,
                    [&](float* xb, const Bf16* yb, Bf16* xb16, std::int64_t count) {
                      k.residual_bf16_layer_norm(xb, yb, count, cols, gamma, beta, eps, xb16);
                    });
}

namespace {

// Multiply-adds of the attention products: Q·Kᵀ and P·V, and DeBERTa's c2p / p2c products of
// every query (key) with the table rows its sequence reaches.
double attention_flops(std::span<const SequenceSpan> sequences, std::int64_t hidden,
                       const AttentionRules& rules) {
  const RelativeTerms& relative = rules.relative;
  double flops = 0;
  for (const auto& s : sequences) {
    // Only the pairs a causal mask or a window leaves.
    flops += 4.0 * cpu::attention_pairs(s.length, rules) * static_cast<double>(hidden);
    if (relative) {
      const double reach = static_cast<double>(relative.reach(s.length));
      flops += 2.0 * static_cast<double>(s.length) * reach * static_cast<double>(hidden) *
               ((relative.key ? 1 : 0) + (relative.query ? 1 : 0));
    }
  }
  return flops;
}

}  // namespace

void attention(Context& ctx, const float* qkv, float* out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden, const AttentionRules& rules) {
  ScopedOpTimer timer(ctx, OpKind::kAttention, attention_flops(sequences, hidden, rules));
  cpu::attention(ctx.device().kernels(), qkv, out, sequences, heads, hidden,
                 ctx.attention_scratch(), ctx.threads(), rules);
}

void attention(Context& ctx, const Bf16* qkv, Bf16* out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden, const AttentionRules& rules) {
  // Weights::attention_type() keeps such layers in f32.
  if (!rules.plain_shape(heads, hidden))
    fail("internal: bf16 attention of a grouped-query, causal or rescaled layer");
  ScopedOpTimer timer(ctx, OpKind::kAttention, attention_flops(sequences, hidden, rules));
  ctx.bf16_attention().run(qkv, out, sequences, heads, hidden, rules);
}

void attention(Context& ctx, ConstRows qkv, Rows out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden, const AttentionRules& rules) {
  if (qkv.type != out.type || (qkv.type != DType::kF32 && qkv.type != DType::kBf16))
    fail("internal: attention runs on f32 or bf16 rows of one type");
  if (qkv.type == DType::kBf16) {
    attention(ctx, static_cast<const Bf16*>(qkv.data), static_cast<Bf16*>(out.data), sequences,
              heads, hidden, rules);
  } else {
    attention(ctx, static_cast<const float*>(qkv.data), static_cast<float*>(out.data), sequences,
              heads, hidden, rules);
  }
}

void gated_activation(Context& ctx, Rows y, std::int64_t rows, std::int64_t cols, Activation act,
                      Rows out) {
  if (out.type != DType::kF32 && out.type != DType::kBf16)
    fail("internal: a gated activation writes f32 or bf16 rows");
  if (y.type != DType::kF32 && y.type != DType::kBf16)
    fail("internal: a gated activation reads f32 or bf16 rows");
  ScopedOpTimer timer(ctx, OpKind::kActivation);
  const auto& k = ctx.device().kernels();
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    // bf16 rows are widened one at a time into this block's own f32 row.
    std::vector<float> wide(y.type == DType::kBf16 ? static_cast<std::size_t>(2 * cols) : 0);
    for (std::int64_t r = 0; r < count; ++r) {
      float* a = nullptr;
      if (y.type == DType::kBf16) {
        const Bf16* src = static_cast<const Bf16*>(y.data) + (begin + r) * 2 * cols;
        for (std::int64_t c = 0; c < 2 * cols; ++c) wide[c] = bf16_to_float(src[c]);
        a = wide.data();
      } else {
        a = static_cast<float*>(y.data) + (begin + r) * 2 * cols;
      }
      k.bias_activation(a, 1, cols, 2 * cols, nullptr, act);
      const float* g = a + cols;
      for (std::int64_t c = 0; c < cols; ++c) a[c] *= g[c];
      if (out.type == DType::kBf16) {
        k.to_bf16(a, static_cast<Bf16*>(out.data) + (begin + r) * cols, cols);
      } else {
        std::memcpy(static_cast<float*>(out.data) + (begin + r) * cols, a,
                    static_cast<std::size_t>(cols) * sizeof(float));
      }
    }
  });
}

void residual_add(Context& ctx, float* x, ConstRows y, std::int64_t rows, std::int64_t cols) {
  if (y.type != DType::kF32 && y.type != DType::kBf16)
    fail("internal: a residual add of f32 or bf16 rows");
  ScopedOpTimer timer(ctx, OpKind::kLayerNorm);
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    const std::int64_t first = begin * cols, end = (begin + count) * cols;
    if (y.type == DType::kBf16) {
      const auto* yb = static_cast<const Bf16*>(y.data);
      for (std::int64_t i = first; i < end; ++i) x[i] += bf16_to_float(yb[i]);
    } else {
      const auto* yf = static_cast<const float*>(y.data);
      for (std::int64_t i = first; i < end; ++i) x[i] += yf[i];
    }
  });
}

void embedding_sum(Context& ctx, float* out, std::int64_t tokens, std::int64_t cols,
                   const float* word, const std::int32_t* ids, const float* position,
                   const std::int32_t* positions, const float* type, const std::int32_t* types) {
  ScopedOpTimer timer(ctx, OpKind::kEmbedding);
  const auto& k = ctx.device().kernels();
  for_row_blocks(ctx, tokens, [&](std::int64_t begin, std::int64_t count) {
    k.embedding_sum(out + begin * cols, count, cols, word, ids + begin, position, positions + begin,
                    type, types ? types + begin : nullptr);
  });
}

}  // namespace mcinfer::ops
