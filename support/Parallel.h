//===- support/Parallel.h - independent pieces of work on every core -*- C++ -*-===//
//
// The per-stage work of a large plan (placing a stage's buffers, building and
// checking its program, printing it) touches nothing another stage writes, so
// it runs on as many threads as the machine has. Each piece writes its result
// at its own index: the outcome is the same on any number of threads.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_SUPPORT_PARALLEL_H
#define PLANC_SUPPORT_PARALLEL_H

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace planc {

/// Calls `fn(i)` for every i in [0, n), on up to hardware_concurrency()
/// threads (the calling one among them); returns when all are done. `fn`
/// must not throw and must only write what index i owns.
template <typename Fn> void parallelFor(size_t n, Fn &&fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < n;) fn(i);
  };
  size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), n);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();
}

} // namespace planc

#endif
