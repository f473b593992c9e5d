#include "backends/cpu/kernels.h"

namespace mcinfer::cpu {

std::int64_t attention_head_scratch(std::int64_t len, std::int64_t d) {
  const std::int64_t padded = (len + 15) / 16 * 16;  // the widest vector, for every ISA
  // attention_head's layout (kernels_impl.h): keys transposed [d, padded], scores [len, padded],
  // values [len, d], row sums [len].
  return padded * d + len * padded + len * d + len + 64;
}

const KernelTable& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return avx512_kernels();
    case Isa::kAvx2:
      return avx2_kernels();
    case Isa::kGeneric:
      break;
  }
  return generic_kernels();
}

}  // namespace mcinfer::cpu
