#pragma once
// Facts about the machine and this process that planning and reports need.

#include <cstdint>

namespace mcinfer::sys {

// Physical cores this process may run on (hyper-threads of one core count once).
int physical_cores();
// Logical CPUs in this process's affinity mask.
int logical_cpus();
// Memory this process can still use: MemAvailable, capped by a cgroup limit when set.
std::uint64_t available_memory_bytes();
std::uint64_t peak_rss_bytes();
std::uint64_t current_rss_bytes();

}  // namespace mcinfer::sys
