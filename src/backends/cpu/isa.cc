#include "backends/cpu/isa.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace mcinfer::cpu {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kGeneric:
      return "generic";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa isa : {Isa::kGeneric, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_name(isa) == name) return isa;
  }
  return std::nullopt;
}

namespace {

// MCINFER_MAX_ISA caps our own kernels as ONEDNN_MAX_CPU_ISA caps the GEMM library's, so that
// every path can be tested on one machine: generic, avx2 or avx512. Unset: no cap.
int max_isa_level() {
  const char* env = std::getenv("MCINFER_MAX_ISA");
  if (env == nullptr || *env == '\0') return 2;
  const std::string_view names[] = {"generic", "avx2", "avx512"};
  for (int level = 0; level < 3; ++level) {
    if (names[level] == env) return level;
  }
  fail("MCINFER_MAX_ISA={}: expected generic, avx2 or avx512", env);
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
