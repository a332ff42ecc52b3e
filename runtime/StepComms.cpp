//===- runtime/StepComms.cpp - the communication steps of a compiled step ---===//

#include "runtime/StepComms.h"
#include "runtime/ElementBits.h"
#include "runtime/MeshRanks.h"
#include "runtime/MpiCommunicator.h"
#include "runtime/BlockExchange.h"
#include "runtime/StepTrace.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

using namespace planc::runtime;

namespace {

struct InFlight {
  Request request = 0;
  const CommStep *step = nullptr;
  void *out = nullptr;
  std::vector<uint8_t> *held = nullptr; // an accumulating output's earlier sum (Comms::held)
  TraceClock::time_point started;
};

struct Comms {
  MpiCommunicator *comm = nullptr;
  const MeshRanks *mesh = nullptr;
  int64_t rank = 0;
  std::map<int64_t, InFlight> inFlight; // by event
  std::map<int64_t, std::vector<uint8_t>> held; // by event, reused every step
} comms;

/// "error: rank 1, step 4, op 17 (all_reduce in blocks.0.mlp): <message>":
/// the training step the log prints, then the plan's operation.
[[noreturn]] void die(const CommStep &step, const std::string &message) {
  std::fflush(stdout);
  const std::string phase = comms.comm ? comms.comm->phaseText() + ", " : "";
  std::fprintf(stderr, "error: rank %lld, %s%s: %s\n", (long long)comms.rank, phase.c_str(), step.what, message.c_str());
  std::fflush(stderr);
  abortMpi(1);
}

void complete(InFlight &f) {
  if (tracing()) {
    const CommStep &s = *f.step;
    const bool message = s.kind != CommStep::Kind::Collective;
    traceCommunication(message ? (s.kind == CommStep::Kind::Send ? "send" : "recv") : spelling(s.collective),
                       message ? (s.kind == CommStep::Kind::Send ? "send" : "recv") : "collective", s.what, f.started,
                       TraceClock::now());
  }
  if (!f.held) return;
  // out += what it held before, in f64, a piece at a time.
  const CommStep &s = *f.step;
  const unsigned width = byteSize(s.type);
  const size_t n = size_t(s.outBytes / width);
  constexpr size_t kPiece = 1 << 12; // two pieces of f64: 64 KiB on the stack
  double now[kPiece], before[kPiece];
  auto *out = static_cast<uint8_t *>(f.out);
  for (size_t at = 0; at < n; at += kPiece) {
    const size_t m = std::min(kPiece, n - at);
    decodeBuffer(s.type, out + at * width, m, now);
    decodeBuffer(s.type, f.held->data() + at * width, m, before);
    for (size_t i = 0; i < m; ++i) now[i] += before[i];
    encodeBuffer(s.type, now, m, out + at * width);
  }
}

} // namespace

void planc::runtime::setStepComms(MpiCommunicator *comm, const MeshRanks *mesh, int64_t rank) {
  comms.comm = comm;
  comms.mesh = mesh;
  comms.rank = rank;
  comms.inFlight.clear();
}

void planc::runtime::commStart(const CommStep &s, const void *in, void *out) {
  if (!comms.comm || !comms.mesh) die(s, "this process has no communicator (a plan of several ranks runs under mpirun)");
  if (comms.inFlight.count(s.event)) commWait(s.event);
  InFlight f;
  f.step = &s;
  f.out = out;
  if (tracing()) f.started = TraceClock::now();
  if (s.accumulate && out) {
    // The event's own copy, kept from step to step: no fresh pages each time.
    f.held = &comms.held[s.event];
    f.held->assign(static_cast<uint8_t *>(out), static_cast<uint8_t *>(out) + s.outBytes);
  }
  std::string error;
  switch (s.kind) {
  case CommStep::Kind::Send:
    f.request = comms.comm->send(comms.mesh->peer(comms.rank, s.axis, s.peerOffset), s.tag, in, s.outBytes, error);
    break;
  case CommStep::Kind::Recv:
    f.request = comms.comm->recv(comms.mesh->peer(comms.rank, s.axis, s.peerOffset), s.tag, out, s.outBytes, error);
    break;
  case CommStep::Kind::Collective: {
    CollectiveCall call;
    call.kind = s.collective;
    call.type = s.type;
    call.op = s.op;
    call.group = comms.mesh->group(comms.rank, s.axis);
    call.shape = s.shape;
    call.dim = s.dim;
    call.gatheredRows = s.gatheredRows;
    call.splitDim = s.splitDim;
    call.concatDim = s.concatDim;
    call.root = s.root;
    f.request = comms.comm->start(call, in, out, error);
    break;
  }
  }
  if (!f.request) die(s, error);
  if (s.event < 0) {
    if (!comms.comm->wait(f.request, error)) die(s, error);
    complete(f);
    return;
  }
  comms.inFlight[s.event] = std::move(f);
}

void planc::runtime::commWait(int64_t event) {
  auto it = comms.inFlight.find(event);
  if (it == comms.inFlight.end()) return;
  std::string error;
  const TraceClock::time_point begin = tracing() ? TraceClock::now() : TraceClock::time_point();
  if (!comms.comm->wait(it->second.request, error)) die(*it->second.step, error);
  if (tracing()) traceWait(it->second.step->what, begin, TraceClock::now());
  complete(it->second);
  comms.inFlight.erase(it);
}

void planc::runtime::commWaitAll() {
  while (!comms.inFlight.empty()) commWait(comms.inFlight.begin()->first);
}
