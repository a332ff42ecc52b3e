//===- runtime/Watchdog.cpp - a limit on a call that cannot be polled -----===//

#include "runtime/Watchdog.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace planc::runtime;

Watchdog::Watchdog(double seconds, std::string message) {
  if (seconds <= 0) return;
  thread = std::thread([this, seconds, message = std::move(message)] {
    std::unique_lock<std::mutex> lock(mutex);
    if (wake.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done; })) return;
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  });
}

Watchdog::~Watchdog() {
  if (!thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  wake.notify_all();
  thread.join();
}
