#pragma once
// The accuracy gate of a reduced precision, as `mcinfer run` (--check-precision, --min-cosine,
// --min-agreement, --int8-keep), mcinfer::run and mcinfer::Model take it: rows compared against
// fp32 before any output is given, int8's GEMMs calibrated and chosen on the same rows.

#include <cstddef>
#include <optional>
#include <string>

namespace mcinfer {

struct PrecisionGate {
  // Rows compared against fp32 before a reduced-precision run (nullopt: 32; 0: no check), and
  // that check's bounds: a miss stops the run before anything is written (exit 4;
  // PrecisionCheckError). A run samples them evenly from its input, a Model from its first
  // call's rows.
  std::optional<std::size_t> check_precision_rows;
  std::optional<double> min_cosine, min_agreement;
  // int8: GEMMs kept out of int8 (`--int8-keep` syntax); nullopt: chosen on the check rows.
  std::optional<std::string> int8_keep;
};

}  // namespace mcinfer
