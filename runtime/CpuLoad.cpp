//===- runtime/CpuLoad.cpp - what the machine's cores are doing ----------===//

#include "runtime/CpuLoad.h"

#include <cstdio>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

long planc::runtime::onlineCores() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

long planc::runtime::allowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return onlineCores();
  const long n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

long planc::runtime::runningTasks() {
  // "0.52 0.58 0.59 3/412 12345": the fourth field is running/all.
  std::FILE *f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double a, b, c;
  long running = -1, all = 0;
  if (std::fscanf(f, "%lf %lf %lf %ld/%ld", &a, &b, &c, &running, &all) != 5) running = -1;
  std::fclose(f);
  return running;
}

double planc::runtime::machineBusySeconds() {
  // "cpu  user nice system idle iowait irq softirq steal ...", in clock ticks.
  std::FILE *f = std::fopen("/proc/stat", "r");
  if (!f) return -1;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait,
                            &irq, &softirq, &steal);
  std::fclose(f);
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (n < 4 || ticks <= 0) return -1;
  return double(user + nice + system + irq + softirq + steal) / double(ticks);
}

double planc::runtime::processCpuSeconds() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval &t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}
