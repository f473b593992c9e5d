#include "cpu/isa.h"

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

std::vector<Isa> supported_isas() {
  __builtin_cpu_init();
  std::vector<Isa> out = {Isa::kGeneric};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(Isa::kAvx2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    out.push_back(Isa::kAvx512);
  }
  return out;
}

Isa best_isa() { return supported_isas().back(); }

}  // namespace mcinfer::cpu
