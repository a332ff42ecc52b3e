//===- analysis/SchedulePrinter.cpp - a pipeline schedule as text and SVG ---===//

#include "analysis/PipelineSchedule.h"
#include "analysis/MeasuredTimeline.h"
#include "support/Plural.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

using namespace planc;
using namespace planc::pipeline;

std::string pipeline::describe(const Instr &i, const ScheduleOptions &o) {
  std::string unit = "(" + std::to_string(i.microBatch);
  if (o.virtualStages > 1) unit += ", c" + std::to_string(i.chunk);
  unit += ")";
  std::string peer = std::to_string(i.peer);
  switch (i.kind) {
  case InstrKind::Forward: return "F" + unit;
  case InstrKind::Backward: return "B" + unit;
  case InstrKind::WeightGrad: return "W" + unit;
  case InstrKind::SendAct: return "send act" + unit + " -> rank " + peer;
  case InstrKind::RecvAct: return "recv act" + unit + " <- rank " + peer;
  case InstrKind::SendGrad: return "send grad" + unit + " -> rank " + peer;
  case InstrKind::RecvGrad: return "recv grad" + unit + " <- rank " + peer;
  }
  return "?";
}

namespace {

/// Ticks in units of one stage's forward: exact for v = 1, "%g" otherwise.
std::string units(int64_t ticks, int64_t perUnit) {
  if (ticks % perUnit == 0) return std::to_string(ticks / perUnit);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%g", double(ticks) / double(perUnit));
  return os.str();
}

std::string fraction(const Simulation &sim) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format("%.4f", sim.bubbleFraction());
  return os.str();
}

/// Instruction names hold "<-", which XML text may not.
std::string xmlEscaped(const std::string &text) {
  std::string out;
  for (char c : text) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

} // namespace

void pipeline::printSchedule(const PipelineSchedule &s, const Simulation &sim, llvm::raw_ostream &os) {
  const ScheduleOptions &o = s.options;
  os << "schedule " << spelling(o.style) << ": p = " << counted(o.stages, "stage") << ", m = "
     << counted(o.microBatches, "micro-batch") << ", v = " << counted(o.virtualStages, "chunk") << " per rank\n";
  os << "costs: F = " << units(costInTicks(o, InstrKind::Forward), sim.ticksPerUnit)
     << ", B = " << units(costInTicks(o, InstrKind::Backward), sim.ticksPerUnit);
  if (o.style == ScheduleStyle::ZeroBubble) os << " (input gradient), W = 1 (weight gradient)";
  os << " (one stage's forward = 1; messages free)\n";
  os << "ranks are pipeline ranks (the pp coordinate)\n";

  for (size_t r = 0; r < s.ranks.size(); ++r) {
    os << "\nrank " << r << ":\n";
    for (const TimedInstr &t : sim.timelines[r]) {
      os << "  " << llvm::left_justify(describe(t.instr, o), 26) << " @ " << units(t.start, sim.ticksPerUnit);
      if (t.end != t.start) os << ".." << units(t.end, sim.ticksPerUnit);
      os << "\n";
    }
  }

  os << "\ntimeline:\n";
  for (size_t r = 0; r < s.ranks.size(); ++r)
    os << "  rank " << r << ": busy " << units(sim.busy[r], sim.ticksPerUnit) << ", idle "
       << units(sim.stepTime - sim.busy[r], sim.ticksPerUnit) << "\n";
  os << "step time: " << units(sim.stepTime, sim.ticksPerUnit) << "\n";
  os << "bubble fraction: " << llvm::format("%.4f", sim.bubbleFraction()) << " (idle "
     << units(sim.idleTime(), sim.ticksPerUnit) << " of " << counted(int64_t(s.ranks.size()), "rank") << " x "
     << units(sim.stepTime, sim.ticksPerUnit) << ")\n";
}

namespace {

struct Style {
  const char *name, *label, *fill;
};
// One colour per kind of time; the legend is drawn from this table.
const Style kForward{"forward", "forward (F)", "#4e79a7"};
const Style kBackward{"backward", "backward (B)", "#59a14f"};
const Style kInputGrad{"backward", "input gradient (B)", "#59a14f"};
const Style kWeightGrad{"weight-gradient", "weight gradient (W)", "#f28e2b"};
const Style kMessage{"communication", "send / recv", "#b07aa1"};
const Style kIdle{"idle", "idle", "#e6e6e6"};
// The measured chart's own kinds of time.
const Style kOptimizer{"optimizer", "optimizer", "#9c755f"};
const Style kWait{"wait", "waiting for communication", "#e15759"};
const Style kCommunication{"communication", "communication in flight", "#b07aa1"};
const Style kUnsectioned{"compute", "compute", "#76b7b2"};

const Style &styleOf(const MeasuredSpan &s) {
  if (s.kind == "forward") return kForward;
  if (s.kind == "backward") return kBackward;
  if (s.kind == "weight_grad") return kWeightGrad;
  if (s.kind == "optimizer") return kOptimizer;
  if (s.kind == "wait") return kWait;
  return kUnsectioned;
}

/// "12.3 ms" or "850 us".
std::string duration(double us) {
  std::ostringstream os;
  os.precision(3);
  if (us >= 1000) os << us / 1000 << " ms";
  else os << us << " us";
  return os.str();
}

const Style &styleOf(InstrKind kind) {
  switch (kind) {
  case InstrKind::Forward: return kForward;
  case InstrKind::Backward: return kBackward;
  case InstrKind::WeightGrad: return kWeightGrad;
  default: return kMessage;
  }
}

} // namespace

void pipeline::printScheduleSVG(const PipelineSchedule &s, const Simulation &sim, llvm::raw_ostream &out,
                                const MeasuredTimeline *measured) {
  // A standard stream writes doubles as plain short decimals ("84.5455"),
  // which SVG readers want; raw_ostream would write exponents.
  std::ostringstream os;
  const ScheduleOptions &o = s.options;
  const double left = measured ? 120 : 70, top = 40, rowHeight = 28, rowGap = 8;
  const double tick = std::max(4.0, 960.0 / double(std::max<int64_t>(sim.stepTime, 1)));
  const double chartWidth = tick * double(sim.stepTime);
  const int ranks = int(s.ranks.size());
  // The measured chart: a title, then per rank its compute row and a strip
  // of communication under it.
  const double measuredTop = top + ranks * (rowHeight + rowGap) + 24, commHeight = 6,
               measuredPitch = rowHeight + commHeight + rowGap + 2;
  const int measuredRows = measured ? int(measured->ranks.size()) : 0;
  const double legendY = measured ? measuredTop + 16 + measuredRows * measuredPitch + 8
                                  : top + ranks * (rowHeight + rowGap) + 16;
  const double width = left + chartWidth + 20, height = legendY + 30;
  auto x = [&](int64_t t) { return left + tick * double(t); };

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<title>" << spelling(o.style) << " schedule, p = " << o.stages << ", m = " << o.microBatches
     << ", v = " << o.virtualStages << "</title>\n";
  os << "<text x=\"" << left << "\" y=\"20\" font-size=\"13\">" << (measured ? "planned: " : "") << spelling(o.style)
     << ": p = " << o.stages << ", m = " << o.microBatches << ", v = " << o.virtualStages << "; step time "
     << units(sim.stepTime, sim.ticksPerUnit) << " (one stage's forward = 1), bubble fraction " << fraction(sim)
     << "</text>\n";

  for (int r = 0; r < ranks; ++r) {
    double y = top + r * (rowHeight + rowGap);
    os << "<g class=\"rank\" id=\"rank-" << r << "\">\n";
    // Beside a run of a whole mesh, a planned row is a pipeline stage.
    os << "  <text x=\"8\" y=\"" << y + rowHeight / 2 + 4 << "\">" << (measured ? "stage " : "rank ") << r
       << "</text>\n";
    // Idle first: the gaps between compute, and the tail up to the step time.
    int64_t cursor = 0;
    auto idleUntil = [&](int64_t t) {
      if (t > cursor)
        os << "  <rect class=\"" << kIdle.name << "\" x=\"" << x(cursor) << "\" y=\"" << y << "\" width=\""
           << tick * double(t - cursor) << "\" height=\"" << rowHeight << "\" fill=\"" << kIdle.fill << "\"/>\n";
    };
    for (const TimedInstr &t : sim.timelines[r]) {
      if (!t.instr.isCompute()) continue;
      idleUntil(t.start);
      cursor = t.end;
      const Style &st = styleOf(t.instr.kind);
      double w = tick * double(t.end - t.start);
      // Later chunks of an interleaved rank are drawn lighter.
      double opacity = o.virtualStages > 1 ? 1.0 - 0.4 * t.instr.chunk / (o.virtualStages - 1) : 1.0;
      os << "  <rect class=\"" << st.name << "\" x=\"" << x(t.start) << "\" y=\"" << y << "\" width=\"" << w
         << "\" height=\"" << rowHeight << "\" fill=\"" << st.fill << "\" fill-opacity=\"" << opacity
         << "\" stroke=\"white\"><title>" << xmlEscaped(describe(t.instr, o)) << "</title></rect>\n";
      if (w >= 10)
        os << "  <text x=\"" << x(t.start) + w / 2 << "\" y=\"" << y + rowHeight / 2 + 4
           << "\" text-anchor=\"middle\" fill=\"white\">" << t.instr.microBatch << "</text>\n";
    }
    idleUntil(sim.stepTime);
    // Messages take no time here: a thin mark where each is issued, sends at
    // the top of the row and receives at the bottom.
    for (const TimedInstr &t : sim.timelines[r]) {
      if (t.instr.isCompute()) continue;
      bool send = t.instr.kind == InstrKind::SendAct || t.instr.kind == InstrKind::SendGrad;
      os << "  <rect class=\"" << kMessage.name << "\" x=\"" << x(t.start) - 1 << "\" y=\""
         << (send ? y - 3 : y + rowHeight - 3) << "\" width=\"2\" height=\"6\" fill=\"" << kMessage.fill
         << "\"><title>" << xmlEscaped(describe(t.instr, o)) << "</title></rect>\n";
    }
    os << "</g>\n";
  }

  if (measured) {
    // The run's own clock, stretched over the planned chart's width.
    const double scale = chartWidth / std::max(measured->durationUs, 1.0);
    auto mx = [&](double us) { return left + scale * us; };
    double busy = 0;
    for (const MeasuredRank &rank : measured->ranks)
      for (const MeasuredSpan &span : rank.compute)
        if (span.kind != "wait") busy += span.endUs - span.startUs;
    const double idle = 1 - busy / (std::max(measured->durationUs, 1.0) * double(std::max(measuredRows, 1)));
    os << "<g class=\"measured\">\n";
    os << "<text x=\"" << left << "\" y=\"" << measuredTop << "\" font-size=\"13\">measured: step "
       << measured->step + 1 << " of " << xmlEscaped(measured->file) << " (the last of " << measured->stepsTraced
       << " traced), " << counted(measuredRows, "rank") << "; step time "
       << duration(measured->durationUs) << ", idle fraction " << std::fixed << std::setprecision(4) << idle
       << std::defaultfloat << std::setprecision(6) << "</text>\n";
    for (int r = 0; r < measuredRows; ++r) {
      const MeasuredRank &rank = measured->ranks[size_t(r)];
      const double y = measuredTop + 16 + r * measuredPitch;
      os << "<g class=\"measured-rank\" id=\"measured-rank-" << rank.rank << "\">\n";
      os << "  <text x=\"8\" y=\"" << y + rowHeight / 2 + 4 << "\">rank " << rank.rank << " (stage " << rank.stage
         << ")</text>\n";
      os << "  <rect class=\"" << kIdle.name << "\" x=\"" << left << "\" y=\"" << y << "\" width=\"" << chartWidth
         << "\" height=\"" << rowHeight << "\" fill=\"" << kIdle.fill << "\"/>\n";
      for (const MeasuredSpan &span : rank.compute) {
        const Style &st = styleOf(span);
        const double w = std::max(0.5, scale * (span.endUs - span.startUs));
        os << "  <rect class=\"" << st.name << "\" x=\"" << mx(span.startUs) << "\" y=\"" << y << "\" width=\"" << w
           << "\" height=\"" << rowHeight << "\" fill=\"" << st.fill << "\"><title>"
           << xmlEscaped(span.label) << " (" << duration(span.endUs - span.startUs)
           << (span.kernels ? ", " + counted(span.kernels, "kernel") : std::string()) << ")</title></rect>\n";
        if (w >= 10 && span.microBatch >= 0 && span.kind != "wait")
          os << "  <text x=\"" << mx(span.startUs) + w / 2 << "\" y=\"" << y + rowHeight / 2 + 4
             << "\" text-anchor=\"middle\" fill=\"white\">" << span.microBatch << "</text>\n";
      }
      for (const MeasuredSpan &span : rank.communication)
        os << "  <rect class=\"" << kCommunication.name << "\" x=\"" << mx(span.startUs) << "\" y=\""
           << y + rowHeight + 1 << "\" width=\"" << std::max(0.5, scale * (span.endUs - span.startUs))
           << "\" height=\"" << commHeight << "\" fill=\"" << kCommunication.fill << "\" fill-opacity=\"0.6\"><title>"
           << xmlEscaped(span.label) << " (" << duration(span.endUs - span.startUs) << ")"
           << "</title></rect>\n";
      os << "</g>\n";
    }
    os << "</g>\n";
  }

  os << "<g class=\"legend\">\n";
  bool split = o.style == ScheduleStyle::ZeroBubble;
  std::vector<const Style *> legend = {&kForward, split ? &kInputGrad : &kBackward};
  if (split) legend.push_back(&kWeightGrad);
  if (measured) legend.insert(legend.end(), {&kOptimizer, &kWait, &kCommunication});
  else legend.push_back(&kMessage);
  legend.push_back(&kIdle);
  double lx = left;
  for (const Style *st : legend) {
    os << "  <rect x=\"" << lx << "\" y=\"" << legendY << "\" width=\"14\" height=\"14\" fill=\"" << st->fill
       << "\"/><text x=\"" << lx + 18 << "\" y=\"" << legendY + 11 << "\">" << st->label << "</text>\n";
    lx += 40 + 7.0 * double(std::string(st->label).size());
  }
  os << "</g>\n</svg>\n";
  out << os.str();
}
