#pragma once
// The CPU backend: every core of the machine, one replica per physical core. Behind the seam
// (backend/backend.h) sit the Weights (packed once, shared), one Encoder per replica, and the
// ops, GEMM library and per-ISA kernels the encoder calls.

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backends/cpu/cpu_options.h"

namespace mcinfer::cpu {

class Weights;

// Throws UsageError for an instruction set that is not one of ours.
std::unique_ptr<backend::Backend> make_cpu_backend(const CpuOptions& options = {});

// The CPU weights behind a model this backend prepared (tests and calibration tools that
// look inside); null for a model another backend prepared.
std::shared_ptr<const Weights> weights_of(const backend::PreparedModel& model);

}  // namespace mcinfer::cpu
