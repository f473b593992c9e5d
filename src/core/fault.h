#pragma once
// Fault injection for tests: with MCINFER_FAULT=<point>:<n> in the environment, the n-th time the
// process reaches fault_point("<point>") it kills itself with SIGKILL, exactly as the OOM killer
// would (the resume tests); fault_active("<point>") turns true instead (wrong results that a test
// must catch). Without the variable, each costs one relaxed atomic load.

#include <string_view>

namespace mcinfer {

void fault_point(std::string_view point);

// For tests that must see a wrong result caught: with MCINFER_FAULT=<point>:<n>, true from the
// n-th time the process asks on (the caller then corrupts its result on purpose). Without the
// variable, one relaxed atomic load.
bool fault_active(std::string_view point);

}  // namespace mcinfer
