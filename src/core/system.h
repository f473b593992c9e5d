#pragma once
// Facts about the machine and this process that planning and reports need.

#include <cstdint>
#include <vector>

namespace mcinfer::sys {

// Physical cores this process may run on (hyper-threads of one core count once).
int physical_cores();
// Logical CPUs in this process's affinity mask.
int logical_cpus();
// Memory this process can still use: MemAvailable, capped by a cgroup limit when set.
std::uint64_t available_memory_bytes();
std::uint64_t peak_rss_bytes();
std::uint64_t current_rss_bytes();

// The CPUs this process may run on, in order, one per physical core first (so that pinning
// replica i to cpus[i] spreads replicas over cores before hyper-threads).
std::vector<int> cpus_by_core();
// Pins the calling thread to one CPU; returns false when the system refuses.
bool pin_current_thread(int cpu);

}  // namespace mcinfer::sys
