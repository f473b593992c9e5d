#pragma once
// Inside the CPU backend only: the GEMM library's engine behind GemmEngine, for the translation
// units that create their own primitives (gemm.cc, attention_bf16.cc).

#include <dnnl.hpp>

#include "backends/cpu/gemm.h"

namespace mcinfer::cpu {

struct GemmEngine::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
};

}  // namespace mcinfer::cpu
