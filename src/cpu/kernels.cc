#include "cpu/kernels.h"

namespace mcinfer::cpu {

const KernelTable& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return avx512_kernels();
    case Isa::kAvx2: return avx2_kernels();
    case Isa::kGeneric: break;
  }
  return generic_kernels();
}

}  // namespace mcinfer::cpu
