#include "backends/cpu/isa.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace mcinfer::cpu {

namespace {

// MCINFER_MAX_ISA caps our own kernels as ONEDNN_MAX_CPU_ISA caps the GEMM library's, so that
// every path can be tested on one machine: generic, avx2 or avx512. Unset: no cap.
int max_isa_level() {
  const char* env = std::getenv("MCINFER_MAX_ISA");
  if (env == nullptr || *env == '\0') return 2;
  // The enum's order is the width order: generic 0, avx2 1, avx512 2.
  if (const std::optional<Isa> isa = parse_isa(env)) return static_cast<int>(*isa);
  fail("MCINFER_MAX_ISA={}: expected {}", env, kIsaNames.choices());
}

}  // namespace

std::vector<Isa> supported_isas() {
  __builtin_cpu_init();
  const int cap = max_isa_level();
  std::vector<Isa> out = {Isa::kGeneric};
  if (cap >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back(Isa::kAvx2);
  if (cap >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    out.push_back(Isa::kAvx512);
  }
  return out;
}

Isa best_isa() { return supported_isas().back(); }

}  // namespace mcinfer::cpu
