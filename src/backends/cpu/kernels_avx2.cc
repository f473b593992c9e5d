// The kernels of kernels_impl.h built for the avx2 instruction set (see src/cpu/CMakeLists.txt).
#include "backends/cpu/kernels_impl.h"

namespace mcinfer::cpu {

const KernelTable& avx2_kernels() {
  static const KernelTable table = make_kernel_table<8>(Isa::kAvx2);
  return table;
}

}  // namespace mcinfer::cpu
