#pragma once
// The CPU backend: every core of the machine, one replica per physical core. Behind the seam
// (backend/backend.h) sit the Weights (packed once, shared), one Encoder per replica, and the
// ops, GEMM library and per-ISA kernels the encoder calls.

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"

namespace mcinfer::cpu {

class Weights;

// `isa` forces our kernels' instruction set ("generic", "avx2", "avx512"); throws UsageError for
// another name. `epilogue_in_kernel`: bias + activation by our own kernel after a plain GEMM.
std::unique_ptr<backend::Backend> make_cpu_backend(const std::optional<std::string>& isa = {},
                                                   bool epilogue_in_kernel = false);

// The CPU weights behind a model this backend prepared (tests and calibration tools that
// look inside); null for a model another backend prepared.
std::shared_ptr<const Weights> weights_of(const backend::PreparedModel& model);

}  // namespace mcinfer::cpu
