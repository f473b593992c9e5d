#pragma once
// Errors that cross a boundary (a file, a row, a flag) are thrown as mcinfer::Error with a
// message that names the place; the CLI prints it and exits non-zero. The error types are public
// (include/mcinfer/errors.h); the helpers here are the library's own.

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "mcinfer/errors.h"

namespace mcinfer {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_usage(fmt::format_string<Args...> format, Args&&... args) {
  throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace mcinfer
