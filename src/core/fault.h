#pragma once
// Crash injection for the resume tests: with MCINFER_FAULT=<point>:<n> in the environment, the
// n-th time the process reaches fault_point("<point>") it kills itself with SIGKILL, exactly as
// the OOM killer would. Without the variable, fault_point costs one relaxed atomic load.

#include <string_view>

namespace mcinfer {

void fault_point(std::string_view point);

}  // namespace mcinfer
