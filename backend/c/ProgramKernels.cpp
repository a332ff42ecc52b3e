//===- backend/c/ProgramKernels.cpp - the kernel of every step ------------===//

#include "backend/c/ProgramKernels.h"
#include "backend/c/Gemm.h"
#include "backend/c/Layout.h"
#include "backend/c/LibraryKernels.h"
#include "backend/c/RankPlace.h"
#include "backend/c/RowReduction.h"

#include "ir/OpDef.h"
#include "ir/ops/Formula.h"

#include <map>
#include <set>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

namespace {

/// The op's kernel description (ir/KernelDesc.h).
const KernelDesc &descOf(OpKind kind) { return opDef(kind).kernel; }

KernelBuffer bufferOf(const exec::RankProgram &p, int64_t index) {
  const exec::Buffer &b = p.buffers[size_t(index)];
  return {b.type().dtype, b.local()};
}

bool isBuffer(const exec::RankProgram &p, int64_t index) { return index >= 0 && size_t(index) < p.buffers.size(); }

/// The gather of a data-movement step: an op that takes its pipeline
/// stage's operand (stage_merge) or keeps the rank's block of its operand
/// (shard_slice) reads the rank's place (RankPlace.h), as the op table says
/// (ir/OpDef.h's picksStage, picksRankBlock); the others are fixed by their
/// shapes.
std::string makeStepLayoutKernel(const exec::ExecutionPlan &plan, const exec::RankProgram &program,
                                 const exec::Step &s, LayoutKernel &l) {
  if (s.outputs.size() != 1 || !isBuffer(program, s.outputs[0])) return "not one output buffer";
  const KernelBuffer out = bufferOf(program, s.outputs[0]);
  if (picksStage(s.kind)) {
    // Operands of other stages are -1: no buffer here, null at the call.
    // This program's own must be a buffer of the result's dtype and shape.
    const int64_t own = size_t(program.stage) < s.inputs.size() ? s.inputs[size_t(program.stage)] : -1;
    if (!isBuffer(program, own)) return "no operand of this pipeline stage";
    for (int64_t in : s.inputs)
      if (in >= 0 && (!isBuffer(program, in) || bufferOf(program, in).dtype != out.dtype ||
                      bufferOf(program, in).shape != out.shape))
        return "an operand unlike the result";
    return makeStageMergeKernel(int(s.inputs.size()), out, l);
  }
  for (int64_t in : s.inputs)
    if (!isBuffer(program, in)) return "an operand made on another stage";
  if (picksRankBlock(s.kind)) {
    if (s.inputs.size() != 1) return "takes one operand";
    const exec::Buffer &from = program.buffers[size_t(s.inputs[0])], &to = program.buffers[size_t(s.outputs[0])];
    return makeShardSliceKernel(s.attrs, from.type(), to.type(), bufferOf(program, s.inputs[0]), out, plan.mesh, l);
  }
  if (s.inputs.size() > 1) return "takes one operand";
  KernelBuffer in;
  if (!s.inputs.empty()) in = bufferOf(program, s.inputs[0]);
  return makeLayoutKernel(s.kind, s.attrs, s.inputs.empty() ? nullptr : &in, out, l);
}

/// The formula of an elementwise step whose kernel is its formula alone
/// (not a conversion, which rounds between dtypes), with its attributes'
/// values (ir::kernelFormulaOf); null otherwise.
std::shared_ptr<const Formula> stepFormula(const exec::Step &s, std::vector<double> &values) {
  values.clear();
  if (s.kind >= OpKind::NumOps || descOf(s.kind).convertsOnly) return nullptr;
  KernelFormula kf = kernelFormulaOf(s.kind, s.attrs.map());
  values = std::move(kf.attrValues);
  return kf.formula;
}

bool isFormulaStep(const exec::Step &s) {
  std::vector<double> values;
  return stepFormula(s, values) != nullptr;
}

/// Whether two buffers are apart, or the same bytes: a kernel that works
/// element by element may read one and write the other.
bool apartOrSame(const exec::RankProgram &program, int64_t x, int64_t y) {
  const exec::Buffer &a = program.buffers[size_t(x)], &b = program.buffers[size_t(y)];
  const bool apart = a.offset + a.size <= b.offset || b.offset + b.size <= a.offset;
  return apart || (a.offset == b.offset && a.size == b.size);
}

/// A row reduction whose rows are its first operand, read and written
/// element by element (softmax, the norms: their other operands, if any,
/// read per column), as its op's rule makes it on the step's buffers: a
/// step that may compute the step before it in its first pass.
bool isRowStep(const exec::RankProgram &program, const exec::Step &s) {
  if (s.kind >= OpKind::NumOps || !descOf(s.kind).rowReduction || s.outputs.size() != 1) return false;
  std::vector<Shape> shapes;
  for (int64_t in : s.inputs) {
    if (!isBuffer(program, in)) return false;
    shapes.push_back(bufferOf(program, in).shape);
  }
  if (!isBuffer(program, s.outputs[0])) return false;
  ir::RowReduction r;
  if (!descOf(s.kind).rowReduction(s.attrs, shapes, bufferOf(program, s.outputs[0]).shape, r).empty()) return false;
  for (size_t i = 1; i < r.perColumn.size(); ++i)
    if (!r.perColumn[i]) return false;
  return r.outputPerElement;
}

/// Whether step i's result is computed inside step i + 1's kernel
/// (RenderOptions::foldProducers). Both: i an elementwise step of one
/// result, not accumulating, its operands and result buffers, nothing
/// waiting between the two, which run on one stream. Then either
/// - i + 1 is an update of several results that alone reads i's result,
///   once; both in f32 or both in f64 (the kernel computes in that type, so
///   the result is the one the step would have rounded and stored); i's
///   result is no output of the program; an operand of i the update reads
///   at other elements (a broadcast one) shares no bytes with the update's
///   results, which it writes element by element, and one it reads at the
///   same element is the same bytes as a result or apart from all of them
///   (the memory plan may give i's operands, dead after i, to the update's
///   results at another offset: element k of a result over element j of an
///   operand, which another thread still reads);
/// - or i + 1 is a row reduction whose rows are i's result (f32), which it
///   reads nowhere else; i's operands have the result's shape (read at the
///   same element); and the buffers a row's passes read and write are
///   apart or the same bytes.
bool foldsIntoNext(const exec::RankProgram &program, size_t i, const std::vector<int> &readers,
                   const std::vector<bool> &bound) {
  if (i + 1 >= program.steps.size()) return false;
  const exec::Step &p = program.steps[i], &u = program.steps[i + 1];
  if (!isFormulaStep(p) || p.outputs.size() != 1 || p.accumulates(0)) return false;
  if (!u.waits.empty() || !p.waits.empty() || p.stream != u.stream) return false;
  const int64_t made = p.outputs[0];
  if (!isBuffer(program, made) || std::count(u.inputs.begin(), u.inputs.end(), made) != 1) return false;
  for (int64_t in : p.inputs)
    if (!isBuffer(program, in)) return false;
  for (int64_t in : u.inputs)
    if (!isBuffer(program, in)) return false;
  for (int64_t o : u.outputs)
    if (!isBuffer(program, o)) return false;
  const KernelBuffer result = bufferOf(program, made);
  if (isRowStep(program, u)) {
    if (u.inputs[0] != made || u.outputs.size() != 1 || result.dtype != DType::F32) return false;
    for (int64_t in : p.inputs) {
      // Read at the same element, or a row's worth (a bias) at its column.
      const KernelBuffer b = bufferOf(program, in);
      const bool perColumn = b.shape == Shape{result.shape.back()} && b.shape != result.shape;
      if ((b.shape != result.shape && !perColumn) || b.dtype != DType::F32) return false;
      if (!apartOrSame(program, in, made) || !apartOrSame(program, in, u.outputs[0])) return false;
    }
    for (int64_t in : u.inputs)
      if (in != made && !apartOrSame(program, in, made)) return false;
    return apartOrSame(program, made, u.outputs[0]);
  }
  if (!isFormulaStep(u) || u.outputs.size() < 2) return false;
  for (size_t k = 0; k < u.outputs.size(); ++k)
    if (u.accumulates(k)) return false;
  if (readers[size_t(made)] != 1 || bound[size_t(made)]) return false;
  const KernelBuffer out = bufferOf(program, u.outputs[0]);
  if (result.dtype != out.dtype || (result.dtype != DType::F32 && result.dtype != DType::F64)) return false;
  if (result.shape != out.shape) return false;
  for (int64_t in : p.inputs) {
    const exec::Buffer &b = program.buffers[size_t(in)];
    const bool sameElement = bufferOf(program, in).shape == out.shape;
    for (int64_t o : u.outputs) {
      const exec::Buffer &w = program.buffers[size_t(o)];
      if (sameElement ? !apartOrSame(program, in, o) : b.offset < w.offset + w.size && w.offset < b.offset + b.size)
        return false;
    }
  }
  return true;
}

/// The row kernel of step `u` with step `p` folded in as its prologue;
/// `callInputs` the buffers the call passes before the result: u's
/// operands, then p's. "" or why not.
std::string makeFoldedRowKernel(const exec::RankProgram &program, const exec::Step &p, const exec::Step &u,
                                RowKernel &r, std::vector<int64_t> &callInputs) {
  std::vector<KernelBuffer> ins;
  for (int64_t in : u.inputs) ins.push_back(bufferOf(program, in));
  if (std::string why = makeRowKernel(u.kind, u.attrs, ins, bufferOf(program, u.outputs[0]), r); !why.empty())
    return why;
  std::vector<double> values;
  std::shared_ptr<const Formula> pf = stepFormula(p, values);
  if (!pf || pf->inputs != p.inputs.size() || pf->results.size() != 1) return "a step without one formula";
  FormulaBuilder b;
  std::vector<int> inputs;
  for (size_t j = 0; j < p.inputs.size(); ++j) inputs.push_back(b.input(int(j)));
  r.prologue = std::make_shared<Formula>(b.done(inlineFormula(b, *pf, values, inputs)));
  r.prologueInputs.clear();
  for (int64_t in : p.inputs) r.prologueInputs.push_back(bufferOf(program, in));
  callInputs = u.inputs;
  callInputs.insert(callInputs.end(), p.inputs.begin(), p.inputs.end());
  return "";
}

/// The kernel of update `u` with step `p`'s formula in place of the operand
/// `p` makes: its inputs are u's others, then p's; `callInputs` the buffers
/// in that order. "" or why not.
std::string makeFoldedKernel(const exec::RankProgram &program, const exec::Step &p, const exec::Step &u,
                             ElementwiseKernel &e, std::vector<int64_t> &callInputs) {
  std::vector<double> values;
  std::shared_ptr<const Formula> pfOwned = stepFormula(p, values);
  if (!pfOwned || pfOwned->inputs != p.inputs.size() || pfOwned->results.size() != 1 || !formulaOf(u.kind))
    return "a step without one formula";
  const Formula &pf = *pfOwned, &uf = *formulaOf(u.kind);
  FormulaBuilder b;
  std::vector<int> uInputs(u.inputs.size(), -1), pInputs;
  callInputs.clear();
  size_t folded = 0;
  for (size_t k = 0; k < u.inputs.size(); ++k) {
    if (u.inputs[k] == p.outputs[0]) {
      folded = k;
      continue;
    }
    uInputs[k] = b.input(int(callInputs.size()));
    callInputs.push_back(u.inputs[k]);
  }
  for (int64_t in : p.inputs) {
    pInputs.push_back(b.input(int(callInputs.size())));
    callInputs.push_back(in);
  }
  uInputs[folded] = inlineFormula(b, pf, values, pInputs);
  std::vector<int> results;
  inlineFormula(b, uf, attrValues(uf, u.attrs.map()), uInputs, &results);
  auto composed = std::make_shared<Formula>(b.done(results));
  std::vector<KernelBuffer> ins, extra;
  for (int64_t in : u.inputs) ins.push_back(bufferOf(program, in));
  for (size_t r = 1; r < u.outputs.size(); ++r) extra.push_back(bufferOf(program, u.outputs[r]));
  // The update's own checks (dtypes, shapes), then its formula replaced.
  if (std::string why = makeElementwiseKernel(u.kind, u.attrs.map(), ins, bufferOf(program, u.outputs[0]), e, extra);
      !why.empty())
    return why;
  e.inputs.clear();
  for (int64_t in : callInputs) e.inputs.push_back(bufferOf(program, in));
  for (const KernelBuffer &in : e.inputs)
    if (in.shape.size() > e.output.shape.size()) return "an operand of higher rank than the result";
  e.ownedFormula = composed;
  e.formula = composed.get();
  e.attrValues.clear();
  return "";
}

/// Which steps are computed inside the next step's kernel
/// (RenderOptions::foldProducers): those foldsIntoNext allows whose
/// composed kernel can be made.
std::vector<bool> foldedSteps(const exec::RankProgram &program) {
  std::vector<bool> folds(program.steps.size(), false);
  std::vector<int> readers(program.buffers.size(), 0);
  std::vector<bool> bound(program.buffers.size(), false);
  for (const exec::Step &s : program.steps)
    for (int64_t in : s.inputs)
      if (isBuffer(program, in)) ++readers[size_t(in)];
  for (const exec::OutputBinding &o : program.outputs)
    if (isBuffer(program, o.buffer)) bound[size_t(o.buffer)] = true;
  for (size_t i = 0; i + 1 < program.steps.size(); ++i) {
    if (!foldsIntoNext(program, i, readers, bound)) continue;
    std::vector<int64_t> callInputs;
    if (isRowStep(program, program.steps[i + 1])) {
      RowKernel r;
      folds[i] = makeFoldedRowKernel(program, program.steps[i], program.steps[i + 1], r, callInputs).empty();
    } else {
      ElementwiseKernel e;
      folds[i] = makeFoldedKernel(program, program.steps[i], program.steps[i + 1], e, callInputs).empty();
    }
  }
  return folds;
}

/// The source of step `i`'s kernel, of class `k.kind` (its call inputs
/// set in `k` where it computes a folded step too), into `body` under
/// `banner`; "" or why it has none.
std::string renderStep(const exec::ExecutionPlan &plan, const exec::RankProgram &program, size_t i,
                       const std::vector<bool> &folds, const CLanguage &lang, const std::string &name,
                       std::string banner, StepKernel &k, llvm::raw_ostream &body) {
  const exec::Step &s = program.steps[i];
  bool inputsOk = true;
  for (int64_t in : s.inputs) inputsOk &= in >= 0 && size_t(in) < program.buffers.size();
  const bool oneOutput =
      inputsOk && s.outputs.size() == 1 && s.outputs[0] >= 0 && size_t(s.outputs[0]) < program.buffers.size();
  std::string why;
  std::vector<KernelBuffer> ins;
  if (inputsOk)
    for (int64_t in : s.inputs) ins.push_back(bufferOf(program, in));
  switch (k.kind) {
  case KernelClass::None: why = "no kernel class"; break; // the op table refuses such an op
  case KernelClass::Communication: why = "a call on the runtime's communicator"; break;
  case KernelClass::Reduction: {
    if (!oneOutput || hasLibraryKernel(s.kind)) {
      why = renderLibraryKernel(program, s, name, banner, lang, body, plan.mesh);
      break;
    }
    RowKernel r;
    if (i > 0 && folds[i - 1]) {
      why = makeFoldedRowKernel(program, program.steps[i - 1], s, r, k.callInputs);
      if (why.empty())
        banner += "; computes step " + std::to_string(i - 1) + " (" + ir::spelling(program.steps[i - 1].kind) +
                  ") in its first pass and writes it";
    } else {
      why = makeRowKernel(s.kind, s.attrs, ins, bufferOf(program, s.outputs[0]), r);
    }
    if (!why.empty() && ins.size() == 1 && descOf(s.kind).sumDims) {
      // Not along the last dims: a sum over broadcast dims.
      SumToKernel t;
      std::string whyNot = makeSumToKernel(s.kind, s.attrs, ins[0], bufferOf(program, s.outputs[0]), t);
      if (whyNot.empty()) {
        t.name = name;
        t.accumulate = s.accumulates(0);
        t.comment = banner;
        renderSumToKernel(t, lang, body);
        why.clear();
        break;
      }
      why = whyNot;
    }
    if (why == "not a row reduction") why = "this reduction is not rendered yet";
    if (!why.empty()) break;
    r.name = name;
    r.accumulate = s.accumulates(0);
    r.comment = banner;
    renderRowKernel(r, lang, body);
    break;
  }
  case KernelClass::Library: why = renderLibraryKernel(program, s, name, banner, lang, body, plan.mesh); break;
  case KernelClass::Elementwise: {
    if (!inputsOk || s.outputs.empty()) break;
    bool outputsOk = true;
    for (int64_t o : s.outputs) outputsOk &= o >= 0 && size_t(o) < program.buffers.size();
    if (!outputsOk) break;
    ElementwiseKernel e;
    if (i > 0 && folds[i - 1]) {
      why = makeFoldedKernel(program, program.steps[i - 1], s, e, k.callInputs);
      if (why.empty())
        banner += "; computes step " + std::to_string(i - 1) + " (" + ir::spelling(program.steps[i - 1].kind) +
                  ") where it reads its result";
    } else {
      std::vector<KernelBuffer> extra;
      for (size_t r = 1; r < s.outputs.size(); ++r) extra.push_back(bufferOf(program, s.outputs[r]));
      why = makeElementwiseKernel(s.kind, s.attrs, ins, bufferOf(program, s.outputs[0]), e, extra);
    }
    if (!why.empty()) break;
    e.name = name;
    e.accumulate = s.accumulates(0);
    e.comment = banner;
    renderElementwiseKernel(e, lang, body);
    break;
  }
  case KernelClass::Gemm: {
    if (!oneOutput || ins.size() != 2) break;
    if (lang.noGemm) {
      why = lang.noGemm;
      break;
    }
    GemmKernel g;
    why = makeGemmKernel(s.attrs, ins[0], ins[1], bufferOf(program, s.outputs[0]), g);
    if (!why.empty()) break;
    g.name = name;
    g.accumulate = s.accumulates(0);
    g.comment = banner;
    renderGemmKernel(g, body);
    break;
  }
  case KernelClass::Layout: {
    LayoutKernel l;
    why = makeStepLayoutKernel(plan, program, s, l);
    if (why.empty() && s.accumulates(0)) why = accumulateLayout(l);
    if (!why.empty()) break;
    l.name = name;
    l.comment = banner;
    renderLayoutKernel(l, lang, body);
    break;
  }
  }
  return why;
}

} // namespace

std::vector<StepKernel> backend::renderProgramKernels(const exec::ExecutionPlan &plan,
                                                      const exec::RankProgram &program, const CLanguage &lang,
                                                      llvm::raw_ostream &os, const RenderOptions &options) {
  const llvm::StringRef prefix = options.prefix;
  const bool prelude = options.prelude;
  os << "// Kernels of plan " << cComment(plan.name) << ", program of pipeline stage " << program.stage << " (ranks";
  for (int64_t r : program.ranks) os << " " << r;
  os << "), " << lang.name << " flavour.\n";
  os << "// Generated by planc from the execution plan; kernel descriptions: docs/kernels.md.\n\n";
  if (prelude) {
    renderPrelude(lang, os);
    if (!lang.noGemm) renderGemmPrelude(os);
    renderLibraryPrelude(lang, os);
    renderMeshCoordPrelude(lang, os);
  }
  std::vector<StepKernel> kernels(program.steps.size());
  // Identical kernels (the same op on the same shapes in every micro-batch,
  // and in every program of the translation unit) are rendered once and
  // named by their first step.
  std::map<std::string, std::string> ownRendered;
  std::map<std::string, std::string> &renderedBySource = options.rendered ? *options.rendered : ownRendered;
  std::set<std::string> distinct;
  const std::vector<bool> folds =
      options.foldProducers ? foldedSteps(program) : std::vector<bool>(program.steps.size(), false);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const exec::Step &s = program.steps[i];
    StepKernel &k = kernels[i];
    if (s.kind >= OpKind::NumOps) {
      k.reason = "no op";
      continue;
    }
    if (folds[i]) {
      k.kind = descOf(s.kind).cls;
      k.rendered = true;
      k.foldedInto = int64_t(i) + 1;
      continue;
    }
    k.kind = descOf(s.kind).cls;
    const std::string name = prefix.str() + "s" + std::to_string(i) + "_" + cIdentifier(ir::spelling(s.kind));
    std::string text;
    llvm::raw_string_ostream body(text);
    const std::string banner = "step " + std::to_string(i) + ", " + ir::spelling(s.work) + " " +
                               (s.microBatch < 0 ? std::string("once") : "mb" + std::to_string(s.microBatch)) +
                               (s.path.empty() ? "" : ", " + s.path);
    std::string why = renderStep(plan, program, i, folds, lang, name, banner, k, body);
    body.flush();
    if (text.empty() && why.empty()) why = "not one output buffer";
    if (k.reason.empty()) k.reason = why;
    if (text.empty()) continue;
    // The same source but for its name and banner is the same kernel.
    std::string key = text;
    size_t at;
    while ((at = key.find(name)) != std::string::npos) key.replace(at, name.size(), "@");
    if (size_t b = key.find("\n// step "); b != std::string::npos) key.erase(b, key.find('\n', b + 1) - b);
    auto [it, fresh] = renderedBySource.try_emplace(key, name);
    k.rendered = true;
    k.name = it->second;
    distinct.insert(k.name);
    if (fresh) os << text;
  }
  // The count per class, rendered or not.
  std::map<KernelClass, std::pair<size_t, size_t>> count; // (steps, rendered)
  std::map<std::string, size_t> reasons;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ++count[kernels[i].kind].first;
    if (kernels[i].rendered) ++count[kernels[i].kind].second;
    else reasons[std::string(ir::spelling(program.steps[i].kind)) + ": " + kernels[i].reason]++;
  }
  size_t rendered = 0;
  for (auto &[c, n] : count) rendered += n.second;
  os << "// Steps: " << kernels.size() << ", with a rendered kernel: " << rendered << " (" << distinct.size()
     << " distinct functions).\n";
  for (auto &[c, n] : count) os << "//   " << spelling(c) << ": " << n.second << " of " << n.first << " rendered\n";
  if (!reasons.empty()) os << "// Not rendered, by op and reason:\n";
  for (auto &[r, n] : reasons) os << "//   " << cComment(r) << " (" << n << ")\n";
  return kernels;
}
