#pragma once
// mcinfer.run()'s keyword arguments -> mcinfer::RunOptions. The names are `mcinfer run`'s flags
// with '_' for '-' (input, text_col, check_precision, on_bad_row, report, ...).

#include <nanobind/nanobind.h>

#include <mcinfer/run.h>
#include <string>
#include <vector>

namespace mcinfer::python {

// Throws TypeError naming an unknown keyword (and listing the known ones) or a value of the
// wrong type; the values themselves are checked by mcinfer::run (UsageError naming the flag).
RunOptions run_options_from(const nanobind::dict& options);

// The keywords run_options_from() knows.
std::vector<std::string> run_option_names();

}  // namespace mcinfer::python
