//===- compiler/Report.cpp - the HTML report: summary and inline SVG charts ===//

#include "compiler/Report.h"

#include "analysis/CommSummary.h"
#include "analysis/PipelineSchedule.h"
#include "analysis/StageSequence.h"
#include "compiler/AutoPlan.h"
#include "compiler/Pipeline.h"
#include "compiler/ReportCharts.h"
#include "compiler/StepTime.h"
#include "ir/MeshLayout.h"
#include "support/Units.h"
#include "support/Plural.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

using namespace planc;

namespace {

using namespace planc::chart;

/// Horizontal stacked bars, one row per label; `parts[row][k]` in the units
/// `format` prints. `limit` > 0 draws a dashed line there (a budget).
std::string stackedBars(const std::vector<std::string> &labels, const std::vector<std::vector<double>> &parts,
                        const std::vector<Series> &series, double limit, const std::string &limitText,
                        const std::function<std::string(double)> &format, double &height) {
  // The labels' column is as wide as the widest; the totals after the bars
  // and the limit's name need the right margin.
  double labelW = 0;
  for (const std::string &l : labels) labelW = std::max(labelW, textWidth(l));
  const double left = std::max(150.0, labelW + 18), rowH = 22, gap = 8, top = 10;
  double most = 0;
  std::vector<double> sums;
  for (const auto &row : parts) {
    double sum = 0;
    for (double v : row) sum += v;
    sums.push_back(sum);
    most = std::max(most, sum);
  }
  double right = 20;
  for (double sum : sums) right = std::max(right, textWidth(format(sum)) + 16);
  // A limit far beyond the bars would squash them: it is then only named.
  const bool limitOnScale = limit > 0 && limit <= 3 * most;
  if (limitOnScale) most = std::max(most, limit);
  if (most <= 0) most = 1;
  const double scale = (kWidth - left - right) / most;
  std::string out;
  double y = top;
  for (size_t r = 0; r < labels.size(); ++r, y += rowH + gap) {
    out += "<text x=\"" + num(left - 8) + "\" y=\"" + num(y + 15) + "\" text-anchor=\"end\">" + htmlEscape(labels[r]) +
           "</text>";
    double x = left;
    for (size_t k = 0; k < parts[r].size() && k < series.size(); ++k) {
      double w = parts[r][k] * scale;
      if (w <= 0) continue;
      out += "<rect class=\"bar\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
             num(rowH) + "\" fill=\"" + series[k].colour + "\"><title>" + htmlEscape(series[k].name) + ": " +
             htmlEscape(format(parts[r][k])) + "</title></rect>";
      x += w;
    }
    out += "<text x=\"" + num(x + 6) + "\" y=\"" + num(y + 15) + "\">" + htmlEscape(format(sums[r])) + "</text>";
  }
  if (limit > 0 && !limitOnScale) {
    out += "<text x=\"" + num(left) + "\" y=\"" + num(y + 12) + "\" fill=\"#d62728\">" +
           htmlEscape(limitText) + " (off the scale)</text>";
    y += 16;
  } else if (limit > 0) {
    double lx = left + limit * scale;
    out += "<line x1=\"" + num(lx) + "\" y1=\"" + num(top - 6) + "\" x2=\"" + num(lx) + "\" y2=\"" + num(y) +
           "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>";
    // Its name after the line, or before it where it would leave the chart.
    const bool before = lx + 4 + textWidth(limitText) > kWidth - 4;
    out += "<text x=\"" + num(before ? lx - 4 : lx + 4) + "\" y=\"" + num(y + 12) + "\"" +
           (before ? " text-anchor=\"end\"" : "") + " fill=\"#d62728\">" + htmlEscape(limitText) + "</text>";
    y += 16;
  }
  double legendH = 0;
  out += legend(series, y + 6, legendH);
  height = y + 6 + legendH + 6;
  return out;
}

/// A plot's frame, its axes' ticks and titles: x along [left, left + w],
/// y along [top + h, top] (upwards). Grid lines at the y ticks.
std::string frame(const Axis &x, const Axis &y, double left, double top, double w, double h,
                  const std::string &xTitle, const std::string &yTitle) {
  std::string out = "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(w) + "\" height=\"" +
                    num(h) + "\" fill=\"none\" stroke=\"#999\"/>";
  for (double t : y.ticks) {
    double py = y.place(t, top + h, top);
    out += "<line x1=\"" + num(left) + "\" y1=\"" + num(py) + "\" x2=\"" + num(left + w) + "\" y2=\"" + num(py) +
           "\" stroke=\"#eee\"/>";
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(py + 4) + "\" text-anchor=\"end\">" +
           htmlEscape(y.tickText(t)) + "</text>";
  }
  for (double t : x.ticks) {
    double px = x.place(t, left, left + w);
    std::string label = x.tickText(t);
    // The last tick's text ends at the frame rather than crossing the edge.
    const char *anchor = px + textWidth(label) / 2 > kWidth - 4 ? "end" : "middle";
    out += "<line x1=\"" + num(px) + "\" y1=\"" + num(top + h) + "\" x2=\"" + num(px) + "\" y2=\"" + num(top + h + 4) +
           "\" stroke=\"#999\"/>";
    out += "<text x=\"" + num(px) + "\" y=\"" + num(top + h + 17) + "\" text-anchor=\"" + anchor + "\">" +
           htmlEscape(label) + "</text>";
  }
  out += "<text x=\"" + num(left + w / 2) + "\" y=\"" + num(top + h + 34) + "\" text-anchor=\"middle\">" +
         htmlEscape(xTitle) + "</text>";
  const double ty = top + h / 2;
  out += "<text x=\"14\" y=\"" + num(ty) + "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " + num(ty) + ")\">" +
         htmlEscape(yTitle) + "</text>";
  return out;
}

/// The left margin a y axis needs for its tick labels and its title.
double axisMargin(const Axis &y) {
  double most = 0;
  for (double t : y.ticks) most = std::max(most, textWidth(y.tickText(t)));
  return std::max(60.0, 24 + 6 + most + 8);
}

std::string svg(const std::string &body, double height, const std::string &label) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) + "\" font-family=\"sans-serif\" font-size=\"12\" " +
         "role=\"img\" aria-label=\"" + htmlEscape(label) + "\">" + body + "</svg>";
}

const std::vector<Series> kCategoryColours = {
    {"parameters", "#2f4b7c"}, {"gradients", "#f28e2b"},   {"optimizer state", "#e15759"},
    {"activations", "#76b7b2"}, {"temporaries", "#8cd17d"}, {"communication", "#edc948"}};

const char *const kStageColours[] = {"#1f77b4", "#9467bd", "#8c564b", "#e377c2",
                                     "#7f7f7f", "#bcbd22", "#17becf", "#2ca02c"};

std::string stageLabel(const memory::StagePlan &s, size_t stages) {
  return stages > 1 ? "pp=" + std::to_string(s.stage) + " (ranks " + formatRanks(s.ranks) + ")"
                    : "ranks " + formatRanks(s.ranks);
}

/// Every stage's live bytes over its allocations, on one axis.
std::string memoryOverTime(const memory::MemoryPlan &m, double budget, double &height) {
  const double top = 10, plotH = 240, right = 20;
  double most = 0;
  size_t longest = 1;
  for (const auto &s : m.stages) {
    for (uint64_t v : s.timeline) most = std::max(most, double(v));
    longest = std::max(longest, s.timeline.size());
  }
  const bool budgetOnScale = budget > 0 && budget <= 3 * most;
  if (budgetOnScale) most = std::max(most, budget);
  const Axis y = linearAxis(most, Measure::Bytes);
  Axis x; // allocations: no unit, no ticks
  const double left = axisMargin(y), plotW = kWidth - left - right;
  auto yOf = [&](double v) { return y.place(v, top + plotH, top); };
  std::string out = frame(x, y, left, top, plotW, plotH, "allocations in order (each stage's own count, scaled to the longest)",
                          y.title("live bytes per rank"));
  std::vector<Series> series;
  for (size_t i = 0; i < m.stages.size(); ++i) {
    const auto &s = m.stages[i];
    const char *colour = kStageColours[i % std::size(kStageColours)];
    series.push_back({stageLabel(s, m.stages.size()), colour});
    // At most one point per horizontal pixel: the largest of the bytes it covers.
    const size_t n = s.timeline.size();
    if (n == 0) continue;
    const size_t points = std::min<size_t>(n, size_t(plotW));
    std::string pts;
    for (size_t p = 0; p < points; ++p) {
      size_t from = p * n / points, to = std::max(from + 1, (p + 1) * n / points);
      uint64_t v = 0;
      for (size_t j = from; j < to && j < n; ++j) v = std::max(v, s.timeline[j]);
      double px = left + (points == 1 ? 0.0 : double(p) / double(points - 1) * plotW * double(n) / double(longest));
      pts += num(px) + "," + num(yOf(double(v))) + " ";
    }
    out += "<polyline class=\"line\" fill=\"none\" stroke=\"" + std::string(colour) +
           "\" stroke-width=\"3\" points=\"" + pts + "\"/>";
  }
  if (budgetOnScale)
    out += "<line x1=\"" + num(left) + "\" y1=\"" + num(yOf(budget)) + "\" x2=\"" + num(left + plotW) + "\" y2=\"" +
           num(yOf(budget)) + "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>";
  else if (budget > 0)
    out += "<text x=\"" + num(left + plotW - 4) + "\" y=\"" + num(top + 14) + "\" text-anchor=\"end\" fill=\"#d62728\">budget " +
           htmlEscape(formatBytes(uint64_t(budget))) + " (off the scale)</text>";
  if (budget > 0) series.push_back({"budget " + formatBytes(uint64_t(budget)), "#d62728"});
  double legendH = 0;
  out += legend(series, top + plotH + 44, legendH);
  height = top + plotH + 44 + legendH + 6;
  return out;
}

/// Candidates of the search as memory (x) against predicted step (y), both
/// on logarithmic axes so that every candidate shows (from the smallest to
/// plans many times over budget): every estimate in grey, the frontier (no
/// other candidate both smaller and faster) as a line, those analysed in
/// full in orange, the chosen in red.
std::string frontier(const AutoResult &r, double &height) {
  const double top = 10, plotH = 320, right = 24;
  double minMem = 1e300, maxMem = 0, maxT = 0, minT = 1e300;
  auto see = [&](double mem, double t) {
    if (mem > 0) minMem = std::min(minMem, mem), maxMem = std::max(maxMem, mem);
    if (t > 0) minT = std::min(minT, t), maxT = std::max(maxT, t);
  };
  for (const auto &e : r.estimates) see(double(e.peak), e.seconds);
  for (const AutoCandidate &a : r.analysed)
    if (a.valid) see(double(a.peakArena), a.stepSeconds);
  if (r.budget) see(double(r.budget), 0);
  if (maxMem <= 0) minMem = 1, maxMem = 2;
  if (maxT <= 0) minT = 1, maxT = 2;
  const Axis x = logAxis(minMem, maxMem, Measure::Bytes), y = logAxis(minT, maxT, Measure::Seconds);
  const double left = axisMargin(y), plotW = kWidth - left - right;
  auto xOf = [&](double mem) { return x.place(mem, left, left + plotW); };
  auto yOf = [&](double t) { return y.place(t, top + plotH, top); };
  std::string out = frame(x, y, left, top, plotW, plotH, x.title("peak memory per rank, log scale"),
                          y.title("predicted step, log scale"));
  for (const auto &e : r.estimates)
    out += "<circle class=\"candidate\" cx=\"" + num(xOf(double(e.peak))) + "\" cy=\"" + num(yOf(e.seconds)) +
           "\" r=\"3\" fill=\"#b8b8b8\"/>";
  // The frontier of the estimates: sorted by memory, each faster than all smaller.
  std::vector<AutoResult::Point> sorted = r.estimates;
  std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
    return a.peak != b.peak ? a.peak < b.peak : a.seconds < b.seconds;
  });
  std::string pts;
  double best = 1e300;
  for (const auto &e : sorted)
    if (e.seconds < best) {
      best = e.seconds;
      pts += num(xOf(double(e.peak))) + "," + num(yOf(e.seconds)) + " ";
    }
  if (!pts.empty())
    out += "<polyline fill=\"none\" stroke=\"#2b8cbe\" stroke-width=\"3\" points=\"" + pts + "\"/>";
  if (r.budget)
    out += "<line x1=\"" + num(xOf(double(r.budget))) + "\" y1=\"" + num(top) + "\" x2=\"" +
           num(xOf(double(r.budget))) + "\" y2=\"" + num(top + plotH) +
           "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>";
  const AutoCandidate *chosen = r.best();
  for (const AutoCandidate &a : r.analysed) {
    if (!a.valid || &a == chosen) continue;
    out += "<circle class=\"analysed\" cx=\"" + num(xOf(double(a.peakArena))) + "\" cy=\"" + num(yOf(a.stepSeconds)) +
           "\" r=\"7\" fill=\"#fdae61\"><title>" + htmlEscape(a.plan.describe()) + "</title></circle>";
  }
  if (chosen)
    out += "<circle class=\"chosen\" cx=\"" + num(xOf(double(chosen->peakArena))) + "\" cy=\"" +
           num(yOf(chosen->stepSeconds)) + "\" r=\"10\" fill=\"#e31a1c\"><title>chosen: " +
           htmlEscape(chosen->plan.describe()) + "</title></circle>";
  double legendH = 0;
  out += legend({{"estimated candidates", "#b8b8b8"},
                 {"frontier of the estimates", "#2b8cbe"},
                 {"analysed in full", "#fdae61"},
                 {"chosen", "#e31a1c"},
                 {"budget " + formatBytes(r.budget), "#d62728"}},
                top + plotH + 44, legendH);
  height = top + plotH + 44 + legendH + 6;
  return out;
}

std::string section(const std::string &id, const std::string &title, const std::string &checkColour,
                    const std::string &body) {
  return "<section id=\"" + id + "\" data-check-colour=\"" + checkColour + "\"><h2>" + htmlEscape(title) + "</h2>\n" +
         body + "\n</section>\n";
}

} // namespace

llvm::Error planc::writeReport(Compilation &c, const ReportOptions &options, llvm::raw_ostream &os) {
  CompileOptions co;
  co.stopAfter = CompileStage::MemoryPlanned;
  co.passes.verifyEach = false;
  auto compiled = compile(c, co);
  if (!compiled) return compiled.takeError();
  const ir::Module &m = *compiled->module;
  const memory::MemoryPlan &mem = *compiled->memory;
  auto time = estimateStepTime(c, *compiled, options.calibration);
  if (!time) return time.takeError();
  const cost::Hardware hw = hardwareOf(c.getConfig().cluster, options.calibration);
  const PlanConfig &cfg = c.getConfig();
  const uint64_t budget = options.budgetBytes ? *options.budgetBytes : cfg.cluster.device.memoryBytes;
  const uint64_t peak = mem.stages.empty() ? 0 : mem.peakStage().arena;

  std::optional<AutoResult> searched;
  if (options.search) {
    AutoOptions ao;
    ao.budgetBytes = options.budgetBytes;
    ao.calibration = options.calibration;
    ao.progress = options.progress;
    auto r = searchPlans(c, ao);
    if (!r) return r.takeError();
    searched = std::move(*r);
  }

  const std::string file =
      c.getMainBuffer() ? c.getSourceMgr().getMemoryBuffer(c.getMainBuffer())->getBufferIdentifier().str() : "";
  double pageHeight = 260;
  std::string body;

  // Summary.
  {
    const ModelInfo &model = c.getModel();
    std::string verdict = !budget ? "no budget" : peak <= budget ? "fits" : "over budget";
    std::string t = "<table class=\"facts\">";
    auto row = [&](const std::string &k, const std::string &v) {
      t += "<tr><th>" + htmlEscape(k) + "</th><td>" + htmlEscape(v) + "</td></tr>";
    };
    row("model", model.name + " (" + file + ")");
    row("parameters", std::to_string(model.totalParams()));
    row("devices", std::to_string(cfg.cluster.worldSize()) + " x " + cfg.cluster.device.name + " (" +
                       counted(cfg.cluster.nodes, "node") + " of " + std::to_string(cfg.cluster.gpusPerNode) +
                       ")");
    row("plan", currentPlanChoice(c).describe());
    row("memory", formatBytes(peak) + " per rank at the peak stage, " + verdict + " (budget " + formatBytes(budget) +
                      ")");
    row("step (predicted)", formatSeconds(time->stepTime) + ", " +
                                llvm::formatv("{0:F0}", time->tokensPerSecond()).str() + " tokens/s, MFU " +
                                llvm::formatv("{0:F1}%", time->mfu() * 100).str() + ", HFU " +
                                llvm::formatv("{0:F1}%", time->hfu() * 100).str() + " (" + hw.calibration.source +
                                ")");
    t += "</table>";
    body += section("summary", "Summary", "#dfe8f3", t);
    pageHeight += 220;
  }

  // The ledger as stacked bars.
  {
    std::vector<std::string> labels;
    std::vector<std::vector<double>> parts;
    for (const auto &s : mem.stages) {
      labels.push_back(stageLabel(s, mem.stages.size()));
      std::vector<double> row;
      for (uint64_t b : s.atPeak) row.push_back(double(b));
      parts.push_back(row);
    }
    double h = 0;
    std::string chart = stackedBars(labels, parts, kCategoryColours, double(budget), "budget " + formatBytes(budget),
                                    [](double v) { return formatBytes(uint64_t(v)); }, h);
    body += section("ledger", "Memory per pipeline stage at its peak", "#2f4b7c",
                    "<p>The planner's arena of each stage by category at the rank's peak (docs/memory.md).</p>" +
                        svg(chart, h, "memory ledger"));
    pageHeight += h + 110;
  }

  // Memory over time.
  {
    double h = 0;
    std::string chart = memoryOverTime(mem, double(budget), h);
    body += section("memory-time", "Memory over time", kStageColours[0],
                    "<p>Live bytes after every allocation of each stage's step, in the order it runs.</p>" +
                        svg(chart, h, "memory over time"));
    pageHeight += h + 110;
  }

  // The schedule.
  {
    std::string text;
    llvm::raw_string_ostream s(text);
    pipeline::printScheduleSVG(*compiled->schedule, *compiled->simulation, s);
    s.flush();
    body += section("schedule", "Pipeline schedule", "#59a14f", // the backward boxes
                    "<p>Each pipeline rank's forward, backward and messages, micro-batch by micro-batch "
                    "(the planned replay; docs/parallel.md).</p><div class=\"scroll\">" +
                        text + "</div>");
    size_t at = text.find("height=\"");
    double h = at == std::string::npos ? 300 : std::atof(text.c_str() + at + 8);
    pageHeight += h + 110;
  }

  // Communication.
  {
    sequence::StageSequencer sequencer(m, *compiled->schedule);
    CommSummary comm = summarizeStepComm(m, MeshLayout(m.mesh), sequencer);
    std::string t = "<table class=\"comm\"><tr><th>ranks</th><th>axis</th><th>phase</th><th>collective</th>"
                    "<th>ops</th><th>bytes sent per rank</th></tr>";
    size_t rows = 0;
    for (const RankCommList &list : comm.lists) {
      std::map<std::tuple<std::string, std::string, std::string>, std::pair<size_t, double>> byKey;
      for (const CommOp &op : list.ops) {
        auto &slot = byKey[{spelling(op.axis), op.phase, ir::spelling(op.kind)}];
        ++slot.first;
        slot.second += op.sentBytes;
      }
      for (const auto &[key, value] : byKey) {
        t += "<tr><td>" + htmlEscape(formatRanks(list.ranks)) + "</td><td>" + htmlEscape(std::get<0>(key)) +
             "</td><td>" + htmlEscape(std::get<1>(key)) + "</td><td>" + htmlEscape(std::get<2>(key)) + "</td><td>" +
             std::to_string(value.first) + "</td><td>" + htmlEscape(formatBytes(uint64_t(value.second))) +
             "</td></tr>";
        ++rows;
      }
    }
    if (!rows) t += "<tr><td colspan=\"6\">no communication: one rank</td></tr>";
    t += "</table>";
    body += section("comm", "Communication per step", "#fce8d5",
                    "<p>What each group of ranks with the same program sends in one step, by mesh axis, phase "
                    "and collective (ring formulas; docs/parallel.md).</p>" +
                        t);
    pageHeight += 120 + 24 * double(std::max<size_t>(rows, 1));
  }

  // Where the time goes.
  {
    const std::vector<Series> series = {{"GEMM", "#3b5b92"},           {"other kernels", "#a0cbe8"},
                                        {"blocking comm", "#ff9d9a"},  {"exposed comm", "#b07aa1"},
                                        {"optimizer", "#9c755f"},      {"pipeline idle", "#bab0ac"}};
    std::vector<std::string> labels;
    std::vector<std::vector<double>> parts;
    for (const cost::StageCost &s : time->stages) {
      const cost::Breakdown &b = s.breakdown;
      labels.push_back(time->stages.size() > 1 ? "pp=" + std::to_string(s.stage) : "every rank");
      parts.push_back({b.gemm, b.other, b.commBlocking, b.commExposed, b.optimizer, b.pipelineWait});
    }
    double h = 0;
    std::string chart = stackedBars(labels, parts, series, 0, "", [](double v) { return formatSeconds(v); }, h);
    body += section("cost", "Where the time of a step goes", "#3b5b92",
                    "<p>The cost model's step (" + htmlEscape(formatSeconds(time->stepTime)) +
                        ") on each pipeline rank: kernels on the roofline, collectives by the α-β model, the "
                        "schedule's idle time (docs/cost.md).</p>" +
                        svg(chart, h, "step time breakdown"));
    pageHeight += h + 110;
  }

  // The search's frontier.
  if (searched) {
    double h = 0;
    std::string chart = frontier(*searched, h);
    std::string chosen = searched->best() ? "The chosen plan: " + htmlEscape(searched->best()->plan.describe()) + "."
                                          : "No candidate fits the budget.";
    body += section("frontier", "Memory against time: the candidates of planc auto", "#e31a1c",
                    "<p>" + counted(int64_t(searched->candidates), "candidate") + " estimated, " +
                        std::to_string(llvm::count_if(searched->analysed,
                                                      [](const AutoCandidate &a) { return a.analysed; })) +
                        " analysed in full. " + chosen + "</p>" + svg(chart, h, "memory against time"));
    pageHeight += h + 110;
  }

  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<meta name=\"planc-report-size\" content=\"" << int(kWidth + 80) << "," << int(std::ceil(pageHeight))
     << "\">\n<title>planc report: " << htmlEscape(c.getModel().name) << "</title>\n<style>\n"
     << "body{font-family:sans-serif;margin:20px;color:#222;background:#fff}\n"
     << "h1{font-size:22px;margin:0 0 10px}h2{font-size:17px;margin:22px 0 6px}p{margin:4px 0 8px;font-size:13px}\n"
     << "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}\n"
     << "table.facts th{background:#dfe8f3}table.comm th{background:#fce8d5}\n"
     << ".scroll{overflow-x:auto;max-width:" << int(kWidth) << "px}\n"
     << "</style>\n</head>\n<body>\n<h1>planc report: " << htmlEscape(c.getModel().name) << "</h1>\n"
     << body << "</body>\n</html>\n";
  return llvm::Error::success();
}
