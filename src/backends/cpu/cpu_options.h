#pragma once
// What `--backend cpu` can be told (backends/registry.h carries it; nothing else of the backend
// is seen above it).

#include <optional>
#include <string>

namespace mcinfer::cpu {

struct CpuOptions {
  // Forces our kernels' instruction set ("generic", "avx2", "avx512"; default: the best).
  std::optional<std::string> isa;
  // Bias + activation by our own kernel after a plain GEMM instead of the GEMM's epilogue (bench).
  bool epilogue_in_kernel = false;
};

}  // namespace mcinfer::cpu
