//===- runtime/Watchdog.h - a limit on a call that cannot be polled -*- C++ -*-===//
//
// Most waits on another rank are non-blocking MPI calls polled against a
// deadline (runtime/MpiCommunicator.h). A few MPI calls have no
// non-blocking form and still wait for every rank: MPI_Init (the launcher's
// fence), MPI_Comm_split, MPI_Finalize. A Watchdog bounds those: while it
// lives, a thread waits beside the call; if the call has not returned when
// the limit passes, the thread prints the error and ends this process with
// status 1 (std::_Exit: MPI_Abort may not be called from a second thread,
// nor before MPI_Init or after MPI_Finalize). A launcher (mpirun) ends
// every other process of a job one of whose processes exited with a
// non-zero status, the stopped ones included, so the job still ends.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_WATCHDOG_H
#define PLANC_RUNTIME_WATCHDOG_H

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace planc::runtime {

class Watchdog {
public:
  /// Starts watching: after `seconds` (not when <= 0) prints
  /// "error: <message>" and ends the process, unless destroyed first.
  Watchdog(double seconds, std::string message);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

private:
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
  std::thread thread;
};

} // namespace planc::runtime

#endif
