#pragma once
// Which backend a run or a Model computes on (`--backend`, `--plugin`, `--devices`): a base of
// RunSettings and ModelOptions, turned into the backend's options in one place
// (sched::backend_options).
#include <string>

namespace mcinfer {

struct BackendChoice {
  std::string backend = "cpu";  // one of the build's (`mcinfer inspect` lists them)
  // --backend pjrt: the plugin (a .so file, or cpu, cuda, tpu) and the devices to use (0: all;
  // a CPU plugin makes that many).
  std::string plugin = "cpu";
  int devices = 0;
};

}  // namespace mcinfer
