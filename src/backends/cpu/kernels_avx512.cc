// The kernels of kernels_impl.h built for the avx512 instruction set (see src/cpu/CMakeLists.txt).
#include "backends/cpu/kernels_impl.h"

namespace mcinfer::cpu {

const KernelTable& avx512_kernels() {
  static const KernelTable table = make_kernel_table<16>(Isa::kAvx512);
  return table;
}

}  // namespace mcinfer::cpu
