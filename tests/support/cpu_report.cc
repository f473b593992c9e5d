// mcinfer_cpu_report: the one line scripts/test.sh ends with, naming the precision paths and
// instruction sets this CPU cannot exercise (from cpuid, as the tests decide what to skip), so
// that a green run on a smaller CPU says what it did not test.
#include <cstdio>
#include <string>

#include "support/cpu_features.h"

int main() {
  const auto missing = mcinfer::testing::cpu_features().not_exercised();
  std::string line;
  for (const std::string& what : missing) line += (line.empty() ? "" : ", ") + what;
  std::printf("not exercised here (cpuid): %s\n", line.empty() ? "nothing" : line.c_str());
  return 0;
}
