//===- runtime/AtomicFile.cpp - temporary file, fsync, rename ------------===//

#include "runtime/AtomicFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "support/Error.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

using namespace planc;

namespace {

llvm::Error fail(llvm::StringRef path, const std::string &what) {
  return makeError("cannot write '" + path + "': " + what);
}

/// A name beside `path` that no other writer (thread or process) picks.
std::string temporaryName(llvm::StringRef path) {
  static std::atomic<unsigned> counter{0};
  return (path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)).str();
}

/// Makes the rename itself durable: the directory entry is data too.
void syncDirectoryOf(llvm::StringRef path) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  std::string d = dir.empty() ? "." : dir.str();
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return; // some file systems refuse; the file itself is synced
  (void)::fsync(fd);
  ::close(fd);
}

} // namespace

llvm::Error runtime::writeFileAtomically(llvm::StringRef path,
                                         const std::function<llvm::Error(llvm::raw_ostream &)> &write) {
  std::string tmp = temporaryName(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(path, std::strerror(errno));

  auto abandon = [&](llvm::Error e) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  };
  std::string streamError;
  llvm::Error written = [&] {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/false, /*unbuffered=*/false);
    llvm::Error e = write(os);
    os.flush();
    // A stream destroyed with an unhandled error aborts the process.
    if (os.has_error()) {
      streamError = os.error().message();
      os.clear_error();
    }
    return e;
  }();
  if (written) return abandon(std::move(written));
  if (!streamError.empty()) return abandon(fail(path, streamError));
  if (::fsync(fd) != 0) return abandon(fail(path, std::strerror(errno)));
  if (::close(fd) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(path, reason);
  }
  if (::rename(tmp.c_str(), path.str().c_str()) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(path, reason);
  }
  syncDirectoryOf(path);
  return llvm::Error::success();
}

llvm::Error runtime::writeFileAtomically(llvm::StringRef path, llvm::StringRef contents) {
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << contents;
    return llvm::Error::success();
  });
}
