// The kernels of kernels_impl.h built for the generic instruction set (see src/cpu/CMakeLists.txt).
#include "backends/cpu/kernels_impl.h"

namespace mcinfer::cpu {

const KernelTable& generic_kernels() {
  static const KernelTable table = make_kernel_table<4>(Isa::kGeneric);
  return table;
}

}  // namespace mcinfer::cpu
