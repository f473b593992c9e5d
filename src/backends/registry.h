#pragma once
// The backends this build has, by the name `--backend` takes. Above every backend folder: the seam
// (backend/) includes none of them.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backends/cpu/cpu_options.h"
#include "backends/pjrt/pjrt_options.h"

namespace mcinfer::backend {

// Which backend, and the options of each (declared with their backend).
struct BackendOptions {
  std::string name = "cpu";
  cpu::CpuOptions cpu{};
  pjrt::PjrtOptions pjrt{};
};

// Throws UsageError naming the backends built when `options.name` is not one of them.
std::unique_ptr<Backend> make_backend(const BackendOptions& options = {});

// Names of the backends compiled into this build ("cpu" first).
std::vector<std::string> built_backends();

}  // namespace mcinfer::backend
