#pragma once
// Our one interface to the GEMM library (oneDNN). Weights of a Linear layer are packed once
// into the library's blocked layout and shared read-only by every replica; each replica owns a
// GemmRunner (stream, scratchpad, cache of compiled kernels per row count).

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "core/aligned_buffer.h"
#include "cpu/kernels.h"

namespace mcinfer::cpu {

// Process-wide GEMM state (the library's CPU engine). Create once, pass by reference.
class GemmEngine {
 public:
  GemmEngine();
  ~GemmEngine();
  GemmEngine(const GemmEngine&) = delete;
  GemmEngine& operator=(const GemmEngine&) = delete;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// W of shape [out, in] (PyTorch's nn.Linear layout) packed for y = x · Wᵀ + bias.
// Immutable after construction; safe to use from many threads at once.
class PackedLinear {
 public:
  // `bias` may be null. The weight is copied (packed); the caller's buffer may go away.
  PackedLinear(const GemmEngine& engine, const float* weight, const float* bias, std::int64_t out,
               std::int64_t in);
  ~PackedLinear();
  PackedLinear(PackedLinear&&) noexcept;
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }
  std::size_t packed_bytes() const;
  const float* bias() const;  // null when the layer has none

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::int64_t in_ = 0, out_ = 0;
  std::unique_ptr<Impl> impl_;
};

// Per-replica GEMM execution. Not thread-safe: one per replica thread.
class GemmRunner {
 public:
  GemmRunner(const GemmEngine& engine, int threads);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // Row counts are rounded up to this multiple so that few kernels are compiled over a run;
  // x and y must have room for round_rows(rows) rows (the extra rows are scratch).
  static std::int64_t round_rows(std::int64_t rows);

  // y[rows, out] = act(x[rows, in] · Wᵀ + bias), bias and activation fused in the GEMM's
  // epilogue; with with_bias == false the bias is left for the caller to apply.
  void linear(const PackedLinear& w, const float* x, std::int64_t rows, float* y, Activation act,
              bool with_bias = true);

  int threads() const { return threads_; }
  std::size_t compiled_kernels() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_;
};

}  // namespace mcinfer::cpu
