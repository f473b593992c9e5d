#include "ops/ops.h"

#include <fmt/format.h>

#include "core/error.h"

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
  return fmt::format("cpu ({} kernels, oneDNN GEMM)", cpu::isa_name(isa()));
}

Linear Linear::prepare(const Device& device, const float* weight, const float* bias,
                       std::int64_t out, std::int64_t in) {
  Linear linear;
  linear.cpu_ = std::make_unique<cpu::PackedLinear>(device.gemm_engine(), weight, bias, out, in);
  return linear;
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kLayerNorm:
      return "layernorm";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kPooling:
      return "pooling+head";
    case OpKind::kCount:
      break;
  }
  return "?";
}

Context::Context(const Device& device, int threads, EpilogueMode epilogue)
    : device_(device),
      threads_(threads < 1 ? 1 : threads),
      epilogue_(epilogue),
      gemm_(device.gemm_engine(), threads_) {}

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

void linear(Context& ctx, const Linear& w, const float* x, std::int64_t rows, float* y,
            Activation act) {
  const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(w.in_features()) *
                       static_cast<double>(w.out_features());
  if (ctx.epilogue() == EpilogueMode::kInGemm) {
    ScopedOpTimer timer(ctx, OpKind::kGemm, flops);
    ctx.gemm().linear(w.cpu_weights(), x, rows, y, act);
    return;
  }
  {
    ScopedOpTimer timer(ctx, OpKind::kGemm, flops);
    ctx.gemm().linear(w.cpu_weights(), x, rows, y, Activation::kNone, /*with_bias=*/false);
  }
  const float* bias = w.cpu_weights().bias();
  if (act != Activation::kNone || bias != nullptr) {
    ScopedOpTimer timer(ctx, OpKind::kActivation);
    const std::int64_t cols = w.out_features();
    const auto& k = ctx.device().kernels();
    for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
      k.bias_activation(y + begin * cols, count, cols, cols, bias, act);
    });
  }
}

void residual_layer_norm(Context& ctx, float* x, const float* y, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps) {
  ScopedOpTimer timer(ctx, OpKind::kLayerNorm);
  const auto& k = ctx.device().kernels();
  for_row_blocks(ctx, rows, [&](std::int64_t begin, std::int64_t count) {
    k.residual_layer_norm(x + begin * cols, y ? y + begin * cols : nullptr, nullptr, count, cols,
                          gamma, beta, eps);
  });
}

void attention(Context& ctx, const float* qkv, float* out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden) {
  double flops = 0;
  for (const auto& s : sequences) flops += 4.0 * static_cast<double>(s.length) * s.length * hidden;
  ScopedOpTimer timer(ctx, OpKind::kAttention, flops);
  cpu::attention(ctx.device().kernels(), qkv, out, sequences, heads, hidden,
                 ctx.attention_scratch(), ctx.threads());
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
