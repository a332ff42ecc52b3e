//===- runtime/Status.h - errors of the runtime, without LLVM ---*- C++ -*-===//
//
// What compiled executables link cannot use llvm::Error, so the runtime says
// how a call went with these two small types:
//
//   Status     ok, or an error with its message
//   Result<T>  a T, or an error with its message
//
// The message is for the user who runs the program: a whole sentence naming
// the file or the cause and what is wrong ("cannot read 'w.safetensors': No
// such file or directory"), never a code or an internal name. A caller that
// adds context prefixes it ("step 3: ...") and keeps the rest.
//
// Neither converts to bool (llvm::Error's true means failure; here nothing
// means anything implicitly): ask ok().
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_STATUS_H
#define PLANC_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace planc::runtime {

class [[nodiscard]] Status {
public:
  /// Success.
  Status() = default;
  static Status success() { return Status(); }
  /// An error; an empty message still makes one ("unknown error").
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.text = message.empty() ? "unknown error" : std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  /// The error's message; empty on success.
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

/// The error whose message is `message`.
inline Status errorStatus(std::string message) { return Status::error(std::move(message)); }

template <class T> class [[nodiscard]] Result {
public:
  /// A value.
  Result(T value) : held(std::move(value)) {}
  /// An error. A success status has no value to hold, so it becomes an
  /// error saying so rather than a Result without either.
  Result(Status status)
      : problem(status.ok() ? Status::error("internal error: a result made from a success status")
                            : std::move(status)) {}

  bool ok() const { return held.has_value(); }
  /// The value; only when ok().
  T &value() & {
    assert(ok() && "value() of a failed Result");
    return *held;
  }
  const T &value() const & {
    assert(ok() && "value() of a failed Result");
    return *held;
  }
  T &&value() && {
    assert(ok() && "value() of a failed Result");
    return std::move(*held);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The error's message; empty when ok().
  const std::string &error() const { return problem.message(); }
  /// The error as a Status (success when ok()), to pass on.
  const Status &status() const { return problem; }

private:
  std::optional<T> held;
  Status problem;
};

} // namespace planc::runtime

#endif
