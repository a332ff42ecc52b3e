//===- runtime/InProcessCommunicator.cpp - matching calls of ranks on one thread -===//

#include "runtime/InProcessCommunicator.h"
#include "runtime/BlockExchange.h"
#include "runtime/Plural.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

using namespace planc::runtime;

namespace {

struct RequestState {
  int64_t rank = 0;
  bool done = false;
  std::string error;       // set when done and failed
  std::string description; // for pending(), without the rank
  std::vector<int64_t> groupKey; // collectives: where the call waits
};

/// One collective of a group that some members have started.
struct PendingCollective {
  CollectiveCall call; // as the first member started it
  int64_t firstRank = 0;
  std::vector<const void *> send;
  std::vector<void *> recv;
  std::vector<Request> requests; // per member; 0: not started yet
};

/// A send not yet received (its bytes copied when it was started), or a
/// recv waiting for its send.
struct Message {
  Request request = 0;
  std::vector<uint8_t> data; // a send's bytes
  void *recv = nullptr;
  uint64_t bytes = 0;
};

using Channel = std::tuple<int64_t, int64_t, int64_t>; // source, destination, tag

std::vector<int64_t> sortedGroup(std::vector<int64_t> g) {
  std::sort(g.begin(), g.end());
  return g;
}

std::string groupText(const std::vector<int64_t> &g) {
  std::string out;
  for (size_t i = 0; i < g.size(); ++i) out += (i ? ", " : "") + std::to_string(g[i]);
  return out;
}

} // namespace

struct InProcessWorld::State {
  int64_t ranks = 0;
  Request nextRequest = 1;
  std::map<Request, RequestState> requests;
  /// By the group's set of ranks (sorted), oldest first: a member that lists
  /// the ranks in another order is a mismatch, not another group.
  std::map<std::vector<int64_t>, std::deque<PendingCollective>> collectives;
  std::map<Channel, std::deque<Message>> sends, recvs;
  std::vector<std::unique_ptr<Communicator>> communicators; // by rank

  Request newRequest(int64_t rank, std::string description) {
    Request r = nextRequest++;
    requests[r] = RequestState{rank, false, "", std::move(description), {}};
    return r;
  }

  void finish(Request r, const std::string &error) {
    RequestState &s = requests.at(r);
    s.done = true;
    s.error = error;
  }

  Request startCollective(int64_t rank, const CollectiveCall &call, const void *send, void *recv,
                          std::string &error) {
    if (std::string bad = checkCollectiveCall(call, rank, ranks); !bad.empty()) {
      error = "rank " + std::to_string(rank) + " starts " + bad;
      return 0;
    }
    size_t member = size_t(std::find(call.group.begin(), call.group.end(), rank) - call.group.begin());
    std::vector<int64_t> key = sortedGroup(call.group);
    std::deque<PendingCollective> &queue = collectives[key];
    auto it = std::find_if(queue.begin(), queue.end(), [&](const PendingCollective &p) {
      return p.requests[std::find(p.call.group.begin(), p.call.group.end(), rank) - p.call.group.begin()] == 0;
    });
    if (it != queue.end()) {
      if (std::string differs = collectiveCallMismatch(it->call, call); !differs.empty()) {
        error = "rank " + std::to_string(rank) + " starts " + describeCollectiveCall(call) + ", but rank " +
                std::to_string(it->firstRank) + " started " + describeCollectiveCall(it->call) +
                " as the same collective of the group: " + differs + " differs";
        return 0;
      }
    } else {
      PendingCollective p;
      p.call = call;
      p.firstRank = rank;
      p.send.assign(call.group.size(), nullptr);
      p.recv.assign(call.group.size(), nullptr);
      p.requests.assign(call.group.size(), 0);
      queue.push_back(std::move(p));
      it = std::prev(queue.end());
    }
    Request r = newRequest(rank, describeCollectiveCall(call));
    requests[r].groupKey = key;
    it->send[member] = send;
    it->recv[member] = recv;
    it->requests[member] = r;
    if (std::count(it->requests.begin(), it->requests.end(), Request(0)) == 0) {
      exchangeBlocks(it->call, it->send, it->recv);
      for (Request done : it->requests) finish(done, "");
      queue.erase(it);
      if (queue.empty()) collectives.erase(key);
    }
    return r;
  }

  /// Starts one half of a message: completes it with the oldest other half
  /// of its channel, or queues it.
  Request startMessage(int64_t rank, bool isSend, int64_t peer, int64_t tag, const void *send, void *recv,
                       uint64_t bytes, std::string &error) {
    std::string what = std::string(isSend ? "send of " : "recv of ") + counted(int64_t(bytes), "byte") + " " +
                       (isSend ? "to" : "from") + " rank " + std::to_string(peer) + ", tag " + std::to_string(tag);
    if (peer < 0 || peer >= ranks) {
      error = "rank " + std::to_string(rank) + " starts a " + what + ", which is not one of the world's " +
              counted(ranks, "rank");
      return 0;
    }
    if (bytes > 0 && !(isSend ? send : recv)) {
      error = "rank " + std::to_string(rank) + " starts a " + what + " without a buffer";
      return 0;
    }
    Channel channel = isSend ? Channel{rank, peer, tag} : Channel{peer, rank, tag};
    Request r = newRequest(rank, what);
    auto &theirs = isSend ? recvs : sends;
    auto other = theirs.find(channel);
    if (other == theirs.end() || other->second.empty()) {
      Message m{r, {}, recv, bytes};
      if (isSend) {
        // Eager: the bytes are taken now, so the send is complete and its
        // buffer free, whenever the receiver comes.
        const uint8_t *from = static_cast<const uint8_t *>(send);
        m.data.assign(from, from + bytes);
        finish(r, "");
      }
      (isSend ? sends : recvs)[channel].push_back(std::move(m));
      return r;
    }
    Message half = std::move(other->second.front());
    other->second.pop_front();
    if (other->second.empty()) theirs.erase(other);
    const uint64_t sent = isSend ? bytes : half.bytes, expected = isSend ? half.bytes : bytes;
    const void *from = isSend ? send : static_cast<const void *>(half.data.data());
    void *to = isSend ? half.recv : recv;
    Request sendRequest = isSend ? r : half.request, recvRequest = isSend ? half.request : r;
    std::string failure;
    if (sent != expected)
      failure = "rank " + std::to_string(std::get<0>(channel)) + " sends " + counted(int64_t(sent), "byte") +
                " to rank " + std::to_string(std::get<1>(channel)) + " with tag " + std::to_string(tag) +
                ", which receives " + std::to_string(expected);
    else if (sent > 0)
      std::memmove(to, from, size_t(sent));
    // A send found queued completed when it was started; only its size can
    // still fail, which its receive reports.
    if (isSend) finish(sendRequest, failure);
    finish(recvRequest, failure);
    return r;
  }

  bool test(int64_t rank, Request request, std::string &error) {
    auto it = requests.find(request);
    if (it == requests.end() || it->second.rank != rank) {
      error = "rank " + std::to_string(rank) + " tests request " + std::to_string(request) +
              ", which it has not started or has already seen complete";
      return true;
    }
    if (!it->second.done) return false;
    error = it->second.error;
    requests.erase(it);
    return true;
  }

  /// The members of the pending collective holding `request` that have not started it.
  std::vector<int64_t> missingMembers(const RequestState &s, Request request) const {
    auto queue = collectives.find(s.groupKey);
    if (queue == collectives.end()) return {};
    for (const PendingCollective &p : queue->second) {
      if (std::find(p.requests.begin(), p.requests.end(), request) == p.requests.end()) continue;
      std::vector<int64_t> missing;
      for (size_t j = 0; j < p.requests.size(); ++j)
        if (!p.requests[j]) missing.push_back(p.call.group[j]);
      return missing;
    }
    return {};
  }
};

namespace {

class RankCommunicator : public Communicator {
public:
  RankCommunicator(InProcessWorld::State &world, int64_t rank) : world(world), me(rank) {}
  int64_t rank() const override { return me; }
  int64_t size() const override { return world.ranks; }
  Request start(const CollectiveCall &call, const void *send, void *recv, std::string &error) override {
    return world.startCollective(me, call, send, recv, error);
  }
  Request send(int64_t peer, int64_t tag, const void *data, uint64_t bytes, std::string &error) override {
    return world.startMessage(me, true, peer, tag, data, nullptr, bytes, error);
  }
  Request recv(int64_t peer, int64_t tag, void *data, uint64_t bytes, std::string &error) override {
    return world.startMessage(me, false, peer, tag, nullptr, data, bytes, error);
  }
  bool test(Request request, std::string &error) override { return world.test(me, request, error); }

private:
  InProcessWorld::State &world;
  int64_t me;
};

} // namespace

InProcessWorld::InProcessWorld(int64_t ranks) : state(std::make_unique<State>()) {
  state->ranks = std::max<int64_t>(ranks, 0);
  for (int64_t r = 0; r < state->ranks; ++r) state->communicators.push_back(std::make_unique<RankCommunicator>(*state, r));
}

InProcessWorld::~InProcessWorld() = default;

int64_t InProcessWorld::size() const { return state->ranks; }

Communicator &InProcessWorld::rank(int64_t r) {
  if (r < 0 || r >= state->ranks)
    throw std::out_of_range("rank " + std::to_string(r) + " of an in-process world of " +
                            counted(state->ranks, "rank"));
  return *state->communicators[size_t(r)];
}

std::string InProcessWorld::pending() const {
  std::string out;
  for (const auto &[request, s] : state->requests) {
    if (s.done) continue;
    out += "rank " + std::to_string(s.rank) + ": " + s.description;
    if (!s.groupKey.empty()) {
      std::vector<int64_t> missing = state->missingMembers(s, request);
      if (!missing.empty())
        out += std::string(", waiting for rank") + (missing.size() > 1 ? "s " : " ") + groupText(missing);
    }
    out += "\n";
  }
  return out;
}
