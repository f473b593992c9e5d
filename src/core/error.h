#pragma once
// Errors that cross a boundary (a file, a row, a flag) are thrown as mcinfer::Error with a
// message that names the place; the CLI prints it and exits non-zero.

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace mcinfer {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A flag or argument combination that cannot work; the CLI exits with status 2 for these.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_usage(fmt::format_string<Args...> format, Args&&... args) {
  throw UsageError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace mcinfer
