#include "core/fault.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace mcinfer {
namespace {

struct FaultPlan {
  std::string point;
  long long at = 0;
  std::atomic<long long> seen{0};
};

// Read once from the environment: a test hook, deliberately process-wide.
FaultPlan* plan() {
  static FaultPlan* p = []() -> FaultPlan* {
    const char* env = std::getenv("MCINFER_FAULT");
    if (env == nullptr) return nullptr;
    std::string spec(env);
    auto colon = spec.rfind(':');
    if (colon == std::string::npos) return nullptr;
    auto* f = new FaultPlan();
    f->point = spec.substr(0, colon);
    f->at = std::atoll(spec.c_str() + colon + 1);
    return f;
  }();
  return p;
}

}  // namespace

void fault_point(std::string_view point) {
  FaultPlan* p = plan();
  if (p == nullptr || point != p->point) return;
  if (p->seen.fetch_add(1) + 1 == p->at) {
    ::kill(::getpid(), SIGKILL);
    ::pause();
  }
}

bool fault_active(std::string_view point) {
  FaultPlan* p = plan();
  if (p == nullptr || point != p->point) return false;
  return p->seen.fetch_add(1) + 1 >= p->at;
}

}  // namespace mcinfer
