//===- compiler/LargeStack.cpp - run the compiler on a large stack --------===//

#include "compiler/LargeStack.h"

#include <pthread.h>

using namespace planc;

void planc::runOnLargeStack(const std::function<void()> &body, size_t stackBytes) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return body();
  pthread_attr_setstacksize(&attr, stackBytes);
  pthread_t thread;
  auto entry = [](void *p) -> void * {
    (*static_cast<const std::function<void()> *>(p))();
    return nullptr;
  };
  bool started = pthread_create(&thread, &attr, entry, const_cast<std::function<void()> *>(&body)) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return body();
  pthread_join(thread, nullptr);
}
