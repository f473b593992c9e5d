// Which plugin file a --plugin name stands for.
#include <cstdlib>
#include <vector>

#include "backends/pjrt/pjrt_backend.h"
#include "core/error.h"

namespace mcinfer::pjrt {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// `relative` inside the site-packages folder of the active virtual environment, if any.
std::vector<fs::path> in_virtual_env(const std::vector<std::string>& relative) {
  std::vector<fs::path> found;
  const std::string venv = env("VIRTUAL_ENV");
  if (venv.empty()) return found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(venv) / "lib", ec)) {
    if (entry.path().filename().string().rfind("python", 0) != 0) continue;
    for (const auto& r : relative) {
      const fs::path candidate = entry.path() / "site-packages" / r;
      if (fs::is_regular_file(candidate, ec)) found.push_back(candidate);
    }
  }
  return found;
}

struct KnownPlugin {
  const char* name;
  const char* variable;               // names the file when set
  std::vector<std::string> packaged;  // where its PyPI package puts it, inside site-packages
  const char* install;                // what to tell the user
};

const std::vector<KnownPlugin>& known_plugins() {
  static const std::vector<KnownPlugin> plugins = {
      {"cpu",
       "MCINFER_PJRT_CPU_PLUGIN",
       {"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"},
       "pip install xla-cpu-pjrt==0.0.1 in the active virtual environment (scripts/get_pjrt_cpu.sh "
       "does it for the tests)"},
      {"cuda",
       "MCINFER_PJRT_CUDA_PLUGIN",
       {"jax_plugins/xla_cuda13/xla_cuda_plugin.so", "jax_plugins/xla_cuda12/xla_cuda_plugin.so"},
       "pip install jax-cuda13-pjrt (with its CUDA wheels) in the active virtual environment"},
      {"tpu",
       "TPU_LIBRARY_PATH",
       {"libtpu/libtpu.so"},
       "pip install libtpu on the TPU VM, in the active virtual environment"},
  };
  return plugins;
}

}  // namespace

fs::path resolve_plugin(const std::string& name_or_path) {
  for (const KnownPlugin& known : known_plugins()) {
    if (name_or_path != known.name) continue;
    const std::string set = env(known.variable);
    if (!set.empty()) return set;
    const auto found = in_virtual_env(known.packaged);
    if (!found.empty()) return found.front();
    fail_usage("--plugin {}: no plugin found: set {} to the plugin's .so file, or {}", known.name,
               known.variable, known.install);
  }
  if (name_or_path.empty()) fail_usage("--plugin: empty; give cpu, cuda, tpu or a plugin file");
  return name_or_path;
}

}  // namespace mcinfer::pjrt
