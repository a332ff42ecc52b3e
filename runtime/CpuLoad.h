//===- runtime/CpuLoad.h - what the machine's cores are doing -----*- C++ -*-===//
//
// The facts that how the thread pools wait (ThreadPools.h) and the warning
// of a slow step (SlowStep.h) rest on, read from Linux: the cores, the tasks
// running now, and the CPU time the whole machine and this process used.
// Where /proc cannot be read the answers say "unknown" (negative) rather
// than guess.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_CPULOAD_H
#define PLANC_RUNTIME_CPULOAD_H

namespace planc::runtime {

/// The machine's online cores (at least 1).
long onlineCores();

/// The cores this process may run on: its affinity mask (at least 1).
long allowedCores();

/// Tasks running or ready to run on the whole machine now, the calling
/// thread included (/proc/loadavg); -1 when unknown.
long runningTasks();

/// CPU seconds the machine's cores have been busy since boot, with every
/// process and the time a hypervisor took (/proc/stat: all but idle and
/// I/O wait); -1 when unknown.
double machineBusySeconds();

/// CPU seconds this process's threads have used (user and system).
double processCpuSeconds();

} // namespace planc::runtime

#endif
