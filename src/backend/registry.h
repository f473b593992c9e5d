#pragma once
// The backends this build has, by the name `--backend` takes.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"

namespace mcinfer::backend {

struct BackendOptions {
  std::string name = "cpu";
  // cpu only: force our kernels' instruction set ("generic", "avx2", "avx512"; default: the best)
  // and apply bias + activation in our own kernel instead of the GEMM's epilogue (bench).
  std::optional<std::string> cpu_isa{};
  bool cpu_epilogue_in_kernel = false;
  // pjrt only: the plugin (a .so file, or cpu, cuda, tpu) and the devices to use (0: all; a CPU
  // plugin makes that many).
  std::string pjrt_plugin = "cpu";
  int devices = 0;
};

// Throws UsageError naming the backends built when `options.name` is not one of them.
std::unique_ptr<Backend> make_backend(const BackendOptions& options = {});

// Names of the backends compiled into this build ("cpu" first).
std::vector<std::string> built_backends();

}  // namespace mcinfer::backend
