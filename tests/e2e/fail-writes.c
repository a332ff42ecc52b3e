// A full disk, for tests: loaded with LD_PRELOAD, it makes write() to any
// file whose path contains $PLANC_TEST_FAIL_PATH store half of its first
// buffer and then fail with ENOSPC, as a disk that fills up mid-file does.
// Other files are written as usual.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t write(int fd, const void *buf, size_t n) {
  static ssize_t (*real)(int, const void *, size_t);
  static unsigned char started[4096];
  if (!real) real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  const char *part = getenv("PLANC_TEST_FAIL_PATH");
  if (part && *part && fd > 2 && fd < 4096) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, path, sizeof path - 1);
    if (len > 0) {
      path[len] = 0;
      if (strstr(path, part)) {
        if (!started[fd] && n > 1) {
          started[fd] = 1;
          return real(fd, buf, n / 2);
        }
        errno = ENOSPC;
        return -1;
      }
    }
  }
  if (fd >= 0 && fd < 4096) started[fd] = 0;
  return real(fd, buf, n);
}
