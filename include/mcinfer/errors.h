#pragma once
// What mcinfer throws. Every message names the place: the file, line, tensor, field or flag.

#include <stdexcept>
#include <string>

namespace mcinfer {

// Anything that stops a call: bad files, rows or flags, a failure while running.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An option or combination of options that cannot work (the CLI exits with 2).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// A reduced-precision run missed its accuracy bounds on the check rows; nothing was written
// (the CLI exits with 4).
class PrecisionCheckError : public Error {
 public:
  explicit PrecisionCheckError(const std::string& message) : Error(message) {}
};

// A run was asked to stop (RunOptions::stop): the batches finished are durable in the shards
// directory and the message says how to resume.
class StoppedError : public Error {
 public:
  explicit StoppedError(const std::string& message) : Error(message) {}
};

}  // namespace mcinfer
