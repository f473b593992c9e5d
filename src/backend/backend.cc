#include "backend/backend.h"

#include "core/error.h"

namespace mcinfer::backend {

Int8Calibration& int8_calibration_of(Replica& replica) {
  Int8Calibration* calibration = replica.int8_calibration();
  if (calibration == nullptr)
    fail("this backend cannot calibrate int8 (int8 runs on the CPU backend)");
  return *calibration;
}

}  // namespace mcinfer::backend
