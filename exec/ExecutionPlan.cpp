//===- exec/ExecutionPlan.cpp - spellings, equality, the program of a rank ===//
//
// Equality compares every field, so a round trip through the text form
// (exec/PlanPrinter.h, exec/PlanParser.h) can be checked with ==.
//
//===----------------------------------------------------------------------===//

#include "exec/ExecutionPlan.h"
#include "exec/Groups.h"

#include "llvm/Support/ErrorHandling.h"

using namespace planc;
using namespace planc::exec;

const char *exec::spelling(BufferRole r) {
  switch (r) {
  case BufferRole::Param: return "param";
  case BufferRole::Input: return "input";
  case BufferRole::Internal: return "internal";
  }
  return "internal";
}

const char *exec::spelling(Stream s) {
  switch (s) {
  case Stream::Compute: return "compute";
  case Stream::Communication: return "comm";
  }
  return "compute";
}

const ir::AttrMap &StepAttrs::map() const {
  static const ir::AttrMap none;
  return map_ ? *map_ : none;
}

ir::Attr &StepAttrs::operator[](const std::string &name) {
  if (!map_) map_ = std::make_shared<ir::AttrMap>();
  else if (map_.use_count() > 1) map_ = std::make_shared<ir::AttrMap>(*map_);
  return (*map_)[name];
}

const BufferValue &Buffer::held() const {
  static const BufferValue none;
  return value_ ? *value_ : none;
}

BufferValue &Buffer::editValue() {
  if (!value_) value_ = std::make_shared<BufferValue>();
  else if (value_.use_count() > 1) value_ = std::make_shared<BufferValue>(*value_);
  return *value_;
}

bool Buffer::operator==(const Buffer &o) const {
  return name == o.name && (value_ == o.value_ || held() == o.held()) && slot == o.slot && offset == o.offset && size == o.size && category == o.category && role == o.role && path == o.path &&
         aliasOf == o.aliasOf && firstStep == o.firstStep && lastStep == o.lastStep;
}

bool Step::operator==(const Step &o) const {
  return kind == o.kind && attrs == o.attrs && microBatch == o.microBatch && work == o.work && chunk == o.chunk &&
         stream == o.stream && inputs == o.inputs && outputs == o.outputs && accumulate == o.accumulate &&
         event == o.event && waits == o.waits && loc == o.loc && path == o.path;
}

bool OutputBinding::operator==(const OutputBinding &o) const {
  return name == o.name && role == o.role && path == o.path && owner == o.owner && buffer == o.buffer;
}

bool RankProgram::operator==(const RankProgram &o) const {
  return stage == o.stage && ranks == o.ranks && arenaSize == o.arenaSize && buffers == o.buffers &&
         steps == o.steps && events == o.events && outputs == o.outputs;
}

bool ExecutionPlan::operator==(const ExecutionPlan &o) const {
  return name == o.name && mesh == o.mesh && schedule.style == o.schedule.style &&
         schedule.stages == o.schedule.stages && schedule.microBatches == o.schedule.microBatches &&
         schedule.virtualStages == o.schedule.virtualStages && alignment == o.alignment && programs == o.programs;
}

const RankProgram &ExecutionPlan::programOf(int64_t rank) const {
  // A caller asks for the program of a rank it took from the plan's mesh;
  // any other rank is a bug of the caller, not of a plan.
  int64_t i = programIndexOf(*this, rank);
  if (i < 0)
    llvm::report_fatal_error("ExecutionPlan::programOf: no program runs rank " + llvm::Twine(rank) + " of plan '" +
                             name + "'");
  return programs[size_t(i)];
}
