//===- runtime/AtomicFile.cpp - temporary file, fsync, rename ------------===//

#include "runtime/AtomicFile.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <streambuf>
#include <string>
#include <unistd.h>

using namespace planc::runtime;

namespace {

Status fail(const std::string &path, const std::string &what) {
  return errorStatus("cannot write '" + path + "': " + what);
}

/// A name beside `path` that no other writer (thread or process) picks.
std::string temporaryName(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

/// The folder part of `path` ("." for a bare name).
std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Makes the rename itself durable: the directory entry is data too.
void syncDirectoryOf(const std::string &path) {
  int fd = ::open(parentOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return; // some file systems refuse; the file itself is synced
  (void)::fsync(fd);
  ::close(fd);
}

/// A buffered stream onto a file descriptor that keeps the first write error
/// (errno) instead of throwing.
class DescriptorBuffer : public std::streambuf {
public:
  explicit DescriptorBuffer(int fd) : fd(fd) { setp(buffer, buffer + sizeof buffer); }
  /// Writes what is buffered; false on an error (see `failure`).
  bool drain() {
    const char *p = pbase();
    while (p < pptr() && !failure) {
      ssize_t n = ::write(fd, p, size_t(pptr() - p));
      if (n < 0) {
        if (errno == EINTR) continue;
        failure = errno;
        break;
      }
      p += n;
    }
    setp(buffer, buffer + sizeof buffer);
    return !failure;
  }
  int failure = 0;

protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

private:
  int fd;
  char buffer[1 << 16];
};

} // namespace

Status planc::runtime::writeFileAtomically(const std::string &path,
                                           const std::function<Status(std::ostream &)> &write) {
  std::string tmp = temporaryName(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(path, std::strerror(errno));

  auto abandon = [&](Status s) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  auto buffer = std::make_unique<DescriptorBuffer>(fd);
  std::ostream os(buffer.get());
  Status written = write(os);
  if (!written.ok()) return abandon(std::move(written));
  if (!buffer->drain() || buffer->failure) return abandon(fail(path, std::strerror(buffer->failure)));
  if (::fsync(fd) != 0) return abandon(fail(path, std::strerror(errno)));
  if (::close(fd) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(path, reason);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    return fail(path, reason);
  }
  syncDirectoryOf(path);
  return Status::success();
}

Status planc::runtime::writeFileAtomically(const std::string &path, std::string_view contents) {
  return writeFileAtomically(path, [&](std::ostream &os) {
    os.write(contents.data(), std::streamsize(contents.size()));
    return Status::success();
  });
}
