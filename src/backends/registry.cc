#include "backends/registry.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/pjrt/pjrt_backend.h"
#include "core/error.h"

namespace mcinfer::backend {

std::vector<std::string> built_backends() { return {"cpu", "pjrt"}; }

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  if (options.name == "cpu") {
    if (options.pjrt.devices != 0 || options.pjrt.plugin != "cpu")
      fail_usage(
          "--plugin and --devices apply to --backend pjrt (the cpu backend runs on this "
          "machine's cores: --replicas)");
    return cpu::make_cpu_backend(options.cpu);
  }
  if (options.name == "pjrt") return pjrt::make_pjrt_backend(options.pjrt);
  std::string names;
  for (const auto& n : built_backends()) names += (names.empty() ? "" : ", ") + n;
  fail_usage("--backend {}: not a backend of this build (built: {})", options.name, names);
}

}  // namespace mcinfer::backend
