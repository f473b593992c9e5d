#pragma once
// Keyword arguments -> the option table (mcinfer/options.h): mcinfer.run()'s into RunOptions,
// mcinfer.Model()'s into ModelOptions. Each value's Python type is checked against the option's
// kind (TypeError), then handed over as the text the command line would give, so that the
// table's parser accepts and refuses it exactly as it does a flag (mcinfer.UsageError).

#include <nanobind/nanobind.h>

#include <mcinfer/model.h>
#include <mcinfer/run.h>
#include <string>
#include <vector>

namespace mcinfer::python {

// None leaves an option at its default. Throws TypeError naming an unknown keyword (and
// listing the known ones).
RunOptions run_options_from(const nanobind::dict& options);
ModelOptions model_options_from(const nanobind::dict& options);

// The table for Python: a list of dicts (name, kind, uses, help, cli, required, choices,
// default), so that the package's tests can walk it.
nanobind::list option_table_for_python();

// Each option's value as the table renders it (None: unset), after mcinfer.run()'s keywords,
// Model()'s, or `mcinfer run`'s arguments: the tests compare the three.
nanobind::dict parsed_run_options(const nanobind::dict& options);
nanobind::dict parsed_model_options(const nanobind::dict& options);
nanobind::dict parsed_cli_run_options(const std::vector<std::string>& args);

}  // namespace mcinfer::python
