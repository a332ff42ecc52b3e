//===- exec/CommCall.cpp - a communication step as a communicator call ---===//

#include "exec/CommCall.h"
#include "exec/Groups.h"

#include <variant>

using namespace planc;
using namespace planc::exec;

const char *exec::spelling(CommCall::Kind k) {
  switch (k) {
  case CommCall::Kind::Collective: return "Collective";
  case CommCall::Kind::Send: return "Send";
  case CommCall::Kind::Recv: return "Recv";
  }
  return "Collective";
}

const char *exec::spelling(CommCall::Collective c) {
  switch (c) {
  case CommCall::Collective::AllReduce: return "AllReduce";
  case CommCall::Collective::ReduceScatter: return "ReduceScatter";
  case CommCall::Collective::AllGather: return "AllGather";
  case CommCall::Collective::AllToAll: return "AllToAll";
  case CommCall::Collective::Broadcast: return "Broadcast";
  }
  return "AllReduce";
}

const char *exec::spelling(CommCall::Reduce r) { return r == CommCall::Reduce::Max ? "Max" : "Sum"; }

std::optional<CommCall> exec::commCallOf(const RankProgram &program, size_t i, std::string &why) {
  const Step &s = program.steps[i];
  std::optional<MeshAxis> axis = axisOf(s);
  if (!axis) {
    why = "the step names no mesh axis";
    return std::nullopt;
  }
  auto intAttr = [&](const char *attr, int64_t otherwise) {
    auto it = s.attrs.find(attr);
    return it != s.attrs.end() && std::holds_alternative<int64_t>(it->second) ? std::get<int64_t>(it->second)
                                                                              : otherwise;
  };
  auto bytesOf = [&](int64_t buffer) {
    const Buffer &b = program.buffers[size_t(buffer)];
    return uint64_t(ir::TensorType(b.local(), b.type().dtype).numel()) * ir::byteSize(b.type().dtype);
  };
  CommCall c;
  c.axis = *axis;
  c.accumulates = s.accumulates(0);
  if (s.kind == ir::OpKind::Send || s.kind == ir::OpKind::Recv) {
    const bool send = s.kind == ir::OpKind::Send;
    const std::vector<int64_t> &list = send ? s.inputs : s.outputs;
    if (list.size() != 1 || list[0] < 0 || size_t(list[0]) >= program.buffers.size()) {
      why = "a message moves one buffer";
      return std::nullopt;
    }
    c.kind = send ? CommCall::Kind::Send : CommCall::Kind::Recv;
    (send ? c.input : c.output) = list[0];
    c.block = list[0];
    c.peerOffset = intAttr("peer_offset", 0);
    c.tag = intAttr("tag", 0);
    c.outputBytes = bytesOf(list[0]);
    return c;
  }
  if (s.inputs.size() != 1 || s.outputs.size() != 1 || s.inputs[0] < 0 || s.outputs[0] < 0 ||
      size_t(s.inputs[0]) >= program.buffers.size() || size_t(s.outputs[0]) >= program.buffers.size()) {
    why = "a collective reads one buffer and writes one";
    return std::nullopt;
  }
  c.input = c.block = s.inputs[0];
  c.output = s.outputs[0];
  c.outputBytes = bytesOf(c.output);
  const Shape &block = program.buffers[size_t(c.block)].local();
  const Shape &out = program.buffers[size_t(c.output)].local();
  auto dim = [&](const char *attr) {
    int64_t d = intAttr(attr, 0);
    return int(d < 0 ? d + int64_t(block.size()) : d);
  };
  switch (s.kind) {
  case ir::OpKind::AllReduce: {
    c.collective = CommCall::Collective::AllReduce;
    auto it = s.attrs.find("reduce");
    if (it != s.attrs.end() && std::holds_alternative<std::string>(it->second) &&
        std::get<std::string>(it->second) == "max")
      c.reduce = CommCall::Reduce::Max;
    break;
  }
  case ir::OpKind::ReduceScatter:
    c.collective = CommCall::Collective::ReduceScatter;
    c.dim = dim("dim");
    break;
  case ir::OpKind::AllGather:
    c.collective = CommCall::Collective::AllGather;
    c.dim = dim("dim");
    c.gatheredRows = size_t(c.dim) < out.size() ? out[size_t(c.dim)] : 0;
    break;
  case ir::OpKind::AllToAll:
    c.collective = CommCall::Collective::AllToAll;
    c.splitDim = dim("split_dim");
    c.concatDim = dim("concat_dim");
    break;
  case ir::OpKind::Broadcast:
    c.collective = CommCall::Collective::Broadcast;
    c.root = intAttr("root", 0);
    break;
  default:
    why = "no communicator call runs this op";
    return std::nullopt;
  }
  return c;
}
