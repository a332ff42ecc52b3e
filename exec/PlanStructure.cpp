//===- exec/PlanStructure.cpp - the structural check on what the ranks run -===//

#include "exec/PlanStructure.h"

#include "ir/OpDef.h"

#include <map>

using namespace planc;
using namespace planc::exec;
using namespace planc::ir;

StepView exec::stepViewOf(const ExecutionPlan &plan) {
  StepView view;
  const int pp = int(plan.mesh[unsigned(MeshAxis::PP)]);
  std::map<std::string, int64_t> paramIds; // by value name, on every stage
  for (const RankProgram &p : plan.programs) {
    std::vector<int64_t> id(p.buffers.size());
    std::map<std::string, int64_t> paramOfPath;
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      const Buffer &buffer = p.buffers[b];
      if (buffer.role == BufferRole::Param) {
        auto [it, fresh] = paramIds.try_emplace(buffer.value(), 0);
        if (fresh) it->second = view.addValue(buffer.type().shape, true, false);
        id[b] = it->second;
        if (!buffer.path.empty()) paramOfPath[buffer.path] = id[b];
      } else {
        id[b] = view.addValue(buffer.type().shape, false, buffer.role == BufferRole::Input);
      }
    }
    for (const Step &s : p.steps) {
      StepView::Node n;
      n.kind = s.kind;
      n.work = s.work;
      n.stage = p.stage;
      n.virtualStage = s.chunk * pp + p.stage;
      n.microBatch = s.microBatch;
      n.path = s.path;
      for (int64_t in : s.inputs)
        if (in >= 0) n.operands.push_back(id[size_t(in)]);
      for (int64_t out : s.outputs)
        if (out >= 0) n.results.push_back(id[size_t(out)]);
      if (s.kind == OpKind::Send && !s.inputs.empty() && s.inputs[0] >= 0) n.name = p.buffers[size_t(s.inputs[0])].value();
      else if (!s.outputs.empty() && s.outputs[0] >= 0) n.name = p.buffers[size_t(s.outputs[0])].value();
      if (s.kind < OpKind::NumOps && isPointToPoint(s.kind))
        if (auto tag = s.attrs.find("tag"); tag != s.attrs.end())
          if (const int64_t *t = std::get_if<int64_t>(&tag->second)) n.tag = *t;
      view.nodes.push_back(std::move(n));
    }
    for (const OutputBinding &out : p.outputs)
      if (out.role == OutputRole::ParamGradient && out.buffer >= 0)
        if (auto param = paramOfPath.find(out.path); param != paramOfPath.end())
          view.gradients.push_back({id[size_t(out.buffer)], param->second});
  }
  return view;
}

std::vector<std::string> exec::checkPlanStructure(const ExecutionPlan &plan) {
  return checkPipelineStructure(stepViewOf(plan), plan.schedule);
}
