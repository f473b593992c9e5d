#include "backend/backend.h"

#include "core/error.h"

namespace mcinfer::backend {

void Replica::observe_gemms(GemmObserver) {
  fail("this backend cannot observe its GEMMs (int8 calibration runs on the CPU backend)");
}

void Replica::run_gemm(model::GemmId, const float*, std::int64_t, float*) {
  fail("this backend cannot run a GEMM alone (int8 calibration runs on the CPU backend)");
}

}  // namespace mcinfer::backend
