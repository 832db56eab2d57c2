#pragma once
// Typed errors. Every gpix failure is a gpix::Error; the subclass says what kind, code()
// carries the native API's own code name (e.g. "CL_INVALID_WORK_GROUP_SIZE") where there is
// one, and what() says what was asked and what would work.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gpix {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string code = {})
      : std::runtime_error(message), code_(std::move(code)) {}
  // The native API's code name, or an empty string where the error is gpix's own.
  const std::string& code() const noexcept { return code_; }

 private:
  std::string code_;
};

// A caller-supplied value is out of range or inconsistent (shape, size, parameter).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A region (origin + extent) reaches outside the array it names.
class OutOfRange : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// The device or its backend lacks a capability (shared virtual memory, image objects).
class UnsupportedFeature : public Error {
 public:
  using Error::Error;
};

// The operation does not support this dtype, or the device cannot hold it (f64 without fp64).
class UnsupportedDType : public Error {
 public:
  using Error::Error;
};

// A device or host allocation failed, or would exceed a device limit.
class OutOfMemory : public Error {
 public:
  OutOfMemory(const std::string& message, std::uint64_t requested_bytes, std::string code = {})
      : Error(message, std::move(code)), requested_(requested_bytes) {}
  std::uint64_t requested_bytes() const noexcept { return requested_; }

 private:
  std::uint64_t requested_;
};

// The native API reported a failure (code() holds its name), or no usable device exists.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A kernel failed to compile; log() is the compiler's build log.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string log, std::string code = {})
      : Error(message, std::move(code)), log_(std::move(log)) {}
  const std::string& log() const noexcept { return log_; }

 private:
  std::string log_;
};

// A file could not be read or written; path() names it.
class IoError : public Error {
 public:
  IoError(const std::string& message, std::string path) : Error(message), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// A long operation stopped because its cancel flag was set (RunOptions::cancel); the inputs
// are untouched and no partial result is returned.
class Cancelled : public Error {
 public:
  using Error::Error;
};

}  // namespace gpix
