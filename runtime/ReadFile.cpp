//===- runtime/ReadFile.cpp - open, read, close ---------------------------===//

#include "runtime/ReadFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace planc::runtime;

namespace {

/// "1.5 GiB" (binary units: the limits are powers of two).
std::string bytesText(uint64_t n) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  unsigned u = 0;
  while (v >= 1024 && u + 1 < sizeof units / sizeof *units) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)n);
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

} // namespace

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

Result<std::string> planc::runtime::readRegularFile(const std::string &path, const std::string &what,
                                                    uint64_t maxBytes) {
  std::string name = what.empty() ? "'" + path + "'" : what;
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return errorStatus("cannot read " + name + ": " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return errorStatus(name + " is not a regular file (" +
                       (S_ISDIR(info.st_mode)    ? "a folder"
                        : S_ISCHR(info.st_mode)  ? "a character device"
                        : S_ISBLK(info.st_mode)  ? "a block device"
                        : S_ISFIFO(info.st_mode) ? "a pipe"
                        : S_ISSOCK(info.st_mode) ? "a socket"
                                                 : "not a file") +
                       "); only regular files are read");
  if (uint64_t(info.st_size) > maxBytes)
    return errorStatus(name + " is " + bytesText(uint64_t(info.st_size)) + ", more than the limit of " +
                       bytesText(maxBytes) + " (the file is read into memory whole)");
  Result<std::string> bytes = readWholeFile(path, what);
  if (!bytes.ok()) return bytes;
  // The file may have grown (or been replaced) since stat: the limit holds
  // for what was read.
  if (bytes->size() > maxBytes)
    return errorStatus(name + " grew past the limit of " + bytesText(maxBytes) + " while it was read");
  return bytes;
}
