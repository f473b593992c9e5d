#pragma once
// What `--backend pjrt` can be told (backends/registry.h carries it; nothing else of the backend
// is seen above it).

#include <optional>
#include <string>

namespace mcinfer::pjrt {

struct PjrtOptions {
  // A plugin file, or a name: cpu, cuda, tpu (resolve_plugin).
  std::string plugin = "cpu";
  // CPU plugins: devices to create (0: one per physical core). Others: use the first N devices
  // (0: all).
  int devices = 0;
  // The layers as a loop in the program (ProgramSpec::loop_layers); default: on accelerators,
  // not on CPU devices.
  std::optional<bool> loop_layers = std::nullopt;
};

}  // namespace mcinfer::pjrt
