#include "core/system.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

namespace mcinfer::sys {
namespace {

bool read_int(const std::string& path, long long& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

std::uint64_t status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream fields(line.substr(prefix.size()));
      std::uint64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace

int logical_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

namespace {

struct AllowedCpu {
  int cpu;
  std::pair<long long, long long> core;  // (physical package, core id): hyperthreads share it
};

// The CPUs this process may run on, in order, each with the physical core it belongs to. An
// unreadable topology counts every CPU as its own core.
std::vector<AllowedCpu> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  std::vector<AllowedCpu> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    long long package = 0, core = cpu;
    if (!read_int(base + "physical_package_id", package) || !read_int(base + "core_id", core)) {
      package = 0;
      core = cpu;
    }
    cpus.push_back({cpu, {package, core}});
  }
  return cpus;
}

}  // namespace

std::vector<int> cpus_by_core() {
  std::vector<int> first, siblings;
  std::set<std::pair<long long, long long>> seen;
  for (const AllowedCpu& c : allowed_cpus()) {
    (seen.insert(c.core).second ? first : siblings).push_back(c.cpu);
  }
  first.insert(first.end(), siblings.begin(), siblings.end());
  if (first.empty()) first.push_back(0);
  return first;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

int physical_cores() {
  std::set<std::pair<long long, long long>> cores;
  for (const AllowedCpu& c : allowed_cpus()) cores.insert(c.core);
  return cores.empty() ? 1 : static_cast<int>(cores.size());
}

std::uint64_t available_memory_bytes() {
  std::uint64_t available = 0;
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib) {
      std::getline(in, unit);
      if (key == "MemAvailable:") {
        available = kib * 1024;
        break;
      }
    }
  }
  // cgroup v2 limit, if any, minus what the cgroup already uses.
  std::ifstream max_in("/sys/fs/cgroup/memory.max");
  std::string max_text;
  if (max_in >> max_text && max_text != "max") {
    long long limit = std::stoll(max_text);
    long long used = 0;
    read_int("/sys/fs/cgroup/memory.current", used);
    if (limit > used) {
      auto room = static_cast<std::uint64_t>(limit - used);
      if (available == 0 || room < available) available = room;
    }
  }
  return available;
}

std::uint64_t peak_rss_bytes() {
  std::uint64_t hwm = status_kib("VmHWM");
  if (hwm != 0) return hwm;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

std::uint64_t current_rss_bytes() { return status_kib("VmRSS"); }

}  // namespace mcinfer::sys
