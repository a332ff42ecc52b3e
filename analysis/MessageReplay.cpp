//===- analysis/MessageReplay.cpp - the deadlock replay, once -------------===//

#include "analysis/MessageReplay.h"

using namespace planc;
using namespace planc::replay;

ReplayEnd replay::replayMessages(const std::vector<std::vector<Event>> &programs, Observer &observer) {
  ReplayEnd end;
  end.next.assign(programs.size(), 0);
  auto &channels = end.unreceived;
  auto ended = [&](size_t p) { return end.ended(programs, p); };
  auto atCollective = [&](size_t p) { return !ended(p) && programs[p][end.next[p]].kind == Event::Collective; };
  // Runs program `p` until it blocks or ends; whether it moved (false with
  // end.stopped set when the observer ends the replay).
  auto advance = [&](size_t p) {
    bool moved = false;
    while (!ended(p) && !atCollective(p)) {
      const Event &e = programs[p][end.next[p]];
      if (e.peer < 0) {
        observer.noPeer(p, e);
      } else if (e.kind == Event::Send) {
        channels[{p, size_t(e.peer)}].push_back(&e);
      } else {
        std::deque<const Event *> &channel = channels[{size_t(e.peer), p}];
        if (channel.empty()) return moved;
        const Event &sent = *channel.front();
        channel.pop_front();
        if ((sent.tag != e.tag || sent.bytes != e.bytes) && !observer.mismatch(p, e, size_t(e.peer), sent)) {
          end.stopped = true;
          return moved;
        }
      }
      ++end.next[p];
      moved = true;
    }
    return moved;
  };
  while (!end.stopped) {
    bool moved = false;
    for (size_t p = 0; p < programs.size() && !end.stopped; ++p) moved |= advance(p);
    if (end.stopped || moved) continue;
    // None can move: a collective every program stands at completes.
    if (programs.empty()) break;
    std::vector<const Event *> at;
    for (size_t p = 0; p < programs.size(); ++p)
      if (atCollective(p)) at.push_back(&programs[p][end.next[p]]);
    if (at.size() != programs.size()) break;
    if (!observer.collective(at)) {
      end.stopped = true;
      break;
    }
    for (size_t &n : end.next) ++n;
  }
  for (auto it = channels.begin(); it != channels.end();)
    it = it->second.empty() ? channels.erase(it) : std::next(it);
  return end;
}
