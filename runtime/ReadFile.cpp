//===- runtime/ReadFile.cpp - open, read, close ---------------------------===//

#include "runtime/ReadFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace planc::runtime;

Result<std::string> planc::runtime::readWholeFile(const std::string &path, const std::string &what) {
  std::string name = what.empty() ? "'" + path + "'" : what;
  auto failure = [&](int error) { return errorStatus("cannot read " + name + ": " + std::strerror(error)); };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure(errno);
  std::string bytes;
  struct stat info;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) bytes.reserve(size_t(info.st_size));
  char chunk[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      return failure(error);
    }
    if (n == 0) break;
    bytes.append(chunk, size_t(n));
  }
  ::close(fd);
  return bytes;
}
