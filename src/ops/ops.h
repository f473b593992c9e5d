#pragma once
// The device-independent operations of an encoder. Each op dispatches on the device kind to a
// backend's primitives (today src/cpu; a GPU backend slots in beside it). The model layer calls
// only these, with a per-replica Context that carries the threading and scratch it needs.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cpu/attention.h"
#include "cpu/gemm.h"
#include "cpu/isa.h"
#include "cpu/kernels.h"

namespace mcinfer::ops {

using Activation = cpu::Activation;
using SequenceSpan = cpu::SequenceSpan;

enum class DeviceKind { kCpu };

// Process-wide backend state: which device, which instruction set, the GEMM engine.
// Create one per process and pass it by reference; it holds no per-replica state.
class Device {
 public:
  // The CPU backend; `isa` forces an instruction set for our own kernels (default: the best).
  static std::unique_ptr<Device> cpu(std::optional<cpu::Isa> isa = std::nullopt);

  DeviceKind kind() const { return kind_; }
  cpu::Isa isa() const { return kernels_->isa; }
  const cpu::KernelTable& kernels() const { return *kernels_; }
  const cpu::GemmEngine& gemm_engine() const { return *gemm_; }
  std::string description() const;

 private:
  DeviceKind kind_ = DeviceKind::kCpu;
  const cpu::KernelTable* kernels_ = nullptr;
  std::unique_ptr<cpu::GemmEngine> gemm_;
};

// A Linear layer's weights prepared for a device (packed once, shared read-only).
class Linear {
 public:
  // weight: [out, in] float32 (PyTorch layout), bias: [out] or null. Both are copied.
  static Linear prepare(const Device& device, const float* weight, const float* bias,
                        std::int64_t out, std::int64_t in);
  std::int64_t in_features() const { return cpu_->in_features(); }
  std::int64_t out_features() const { return cpu_->out_features(); }
  std::size_t bytes() const { return cpu_->packed_bytes(); }
  const cpu::PackedLinear& cpu_weights() const { return *cpu_; }

 private:
  std::unique_ptr<cpu::PackedLinear> cpu_;
};

// Where time goes, for `bench --profile`.
enum class OpKind { kGemm, kAttention, kLayerNorm, kActivation, kEmbedding, kPooling, kCount };
std::string_view op_kind_name(OpKind kind);

struct OpProfile {
  std::array<double, static_cast<std::size_t>(OpKind::kCount)> seconds{};
  std::array<double, static_cast<std::size_t>(OpKind::kCount)> flops{};
  void clear() {
    seconds.fill(0);
    flops.fill(0);
  }
};

// How a Linear's bias and activation are applied: inside the GEMM's epilogue (one pass over
// the output) or by our own bias+activation kernel after a plain GEMM.
enum class EpilogueMode { kInGemm, kOwnKernel };

// Per-replica execution state. Not thread-safe: one per replica thread.
class Context {
 public:
  Context(const Device& device, int threads, EpilogueMode epilogue = EpilogueMode::kInGemm);

  const Device& device() const { return device_; }
  int threads() const { return threads_; }
  cpu::GemmRunner& gemm() { return gemm_; }
  cpu::AttentionScratch& attention_scratch() { return attention_scratch_; }
  EpilogueMode epilogue() const { return epilogue_; }

  // Profiling is off unless a profile is attached.
  void attach_profile(OpProfile* profile) { profile_ = profile; }
  OpProfile* profile() { return profile_; }

 private:
  const Device& device_;
  int threads_;
  EpilogueMode epilogue_;
  cpu::GemmRunner gemm_;
  cpu::AttentionScratch attention_scratch_;
  OpProfile* profile_ = nullptr;
};

// Rows a buffer needs so that a batch of `rows` rows can go through linear().
std::int64_t padded_rows(std::int64_t rows);

// y[rows, out] = act(x[rows, in] · Wᵀ + b). x and y need padded_rows(rows) rows.
void linear(Context& ctx, const Linear& w, const float* x, std::int64_t rows, float* y,
            Activation act = Activation::kNone);

// x = LayerNorm(x + y) (y may be null: plain LayerNorm), row by row, [rows, cols].
void residual_layer_norm(Context& ctx, float* x, const float* y, std::int64_t rows,
                         std::int64_t cols, const float* gamma, const float* beta, float eps);

// Self-attention over packed sequences; qkv [tokens, 3·hidden] → out [tokens, hidden].
void attention(Context& ctx, const float* qkv, float* out, std::span<const SequenceSpan> sequences,
               int heads, std::int64_t hidden);

// out[t] = word[ids[t]] + position[positions[t]] (+ type[types[t]]).
void embedding_sum(Context& ctx, float* out, std::int64_t tokens, std::int64_t cols,
                   const float* word, const std::int32_t* ids, const float* position,
                   const std::int32_t* positions, const float* type, const std::int32_t* types);

// RAII timer that adds to the context's profile when one is attached.
class ScopedOpTimer {
 public:
  ScopedOpTimer(Context& ctx, OpKind kind, double flops = 0);
  ~ScopedOpTimer();
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  OpProfile* profile_;
  OpKind kind_;
  double flops_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mcinfer::ops
