//===- backend/c/LibraryKernels.cpp - steps that call hand-written kernels ===//

#include "backend/c/LibraryKernels.h"

#include "ir/AttrReader.h"
#include "ir/LocalBlocks.h"
#include "ir/OpDef.h"

#include <map>
#include <sstream>

using namespace planc;
using namespace planc::backend;
using namespace planc::ir;

void backend::renderLibraryPrelude(const CLanguage &lang, llvm::raw_ostream &os) {
  if (!lang.libraryInclude) return;
  os << lang.libraryInclude << "\n\n"
     << "// The step's draw seed (dropout's masks differ from step to step); the step sets it.\n"
     << "[[maybe_unused]] static uint64_t planc_draw_seed = 0;\n\n";
}

namespace {

/// The element type a library kernel reads a buffer of `t` through: the
/// 16-bit floats as runtime/kernels/cpu/Common.h's Bf16 and F16, bool as its byte.
std::string libraryType(DType t) {
  switch (t) {
  case DType::BF16: return "planc::cpu::Bf16";
  case DType::F16: return "planc::cpu::F16";
  case DType::Bool: return "uint8_t";
  default: return storageType(t);
  }
}

/// The C++ of a double constant (exact).
std::string num(double v) { return floatLiteral(v, /*f64=*/true); }

/// The number of elements of dims [from, to) of `s`.
int64_t elements(const Shape &s, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t n = 1;
  for (size_t d = from; d < std::min(to, s.size()); ++d) n *= s[d];
  return n;
}

/// The braced initializer of a planc::cpu::BlockPlace of the rank's block of
/// a value of type `t` (its offsets and data rows from planc_mesh_coord), or
/// "" when its rank exceeds the struct's.
std::string blockPlace(const TensorType &t, const MeshSizes &mesh) {
  if (t.rank() > 8) return ""; // planc::cpu::BlockPlace::kMaxRank
  const Shape local = localShape(t, MeshLayout(mesh));
  std::string sizes, data, global, offsets;
  for (size_t d = 0; d < t.rank(); ++d) {
    const char *sep = d ? ", " : "";
    sizes += sep + std::to_string(local[d]);
    data += sep + dataRowsExpr(t, d, mesh);
    global += sep + std::to_string(t.shape[d]);
    offsets += sep + blockOffsetExpr(t, d, mesh);
  }
  return "{" + std::to_string(t.rank()) + ", {" + sizes + "}, {" + data + "}, {" + global + "}, {" + offsets + "}}";
}

/// The wrapper's parameters and the typed pointers, in the calling
/// convention of every kernel.
class Wrapper {
public:
  Wrapper(const exec::RankProgram &p, const exec::Step &s) : p(p), s(s) {}

  const exec::Buffer &in(size_t i) const { return p.buffers[size_t(s.inputs[i])]; }
  const exec::Buffer &out(size_t i) const { return p.buffers[size_t(s.outputs[i])]; }
  const Shape &inShape(size_t i) const { return in(i).local(); }
  DType inType(size_t i) const { return in(i).type().dtype; }
  DType outType(size_t i) const { return out(i).type().dtype; }
  std::string acc(size_t k) const { return s.accumulates(k) ? "true" : "false"; }

  /// Why the buffers do not suit the library: floats must be f32 or f64.
  std::string check() const {
    for (int64_t b : s.inputs)
      if (b < 0 || size_t(b) >= p.buffers.size()) return "an operand made on another stage";
    for (int64_t b : s.outputs)
      if (b < 0 || size_t(b) >= p.buffers.size()) return "not one output buffer";
    auto ok = [](DType t) {
      return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16 || t == DType::Bool ||
             isInteger(t);
    };
    for (size_t i = 0; i < s.inputs.size(); ++i)
      if (!ok(inType(i))) return std::string("library kernels take no ") + spelling(inType(i)) + " buffers";
    for (size_t i = 0; i < s.outputs.size(); ++i)
      if (!ok(outType(i))) return std::string("library kernels take no ") + spelling(outType(i)) + " buffers";
    return "";
  }

  void open(const std::string &name, const std::string &banner, llvm::raw_ostream &os) const {
    os << "// kernel " << name << ": " << spelling(s.kind) << ", library\n";
    if (!banner.empty()) os << "// " << cComment(banner) << "\n";
    os << "[[maybe_unused]] static void " << name << "(";
    for (size_t i = 0; i < s.inputs.size(); ++i) os << (i ? ", " : "") << "const void *in" << i << "_";
    for (size_t i = 0; i < s.outputs.size(); ++i)
      os << (i || !s.inputs.empty() ? ", " : "") << "void *out" << i << "_";
    os << ") {\n";
    for (size_t i = 0; i < s.inputs.size(); ++i)
      os << "  [[maybe_unused]] const " << libraryType(inType(i)) << " *in" << i << " = (const "
         << libraryType(inType(i)) << " *)in" << i << "_; // " << shapeComment({inType(i), inShape(i)}) << "\n";
    for (size_t i = 0; i < s.outputs.size(); ++i)
      os << "  " << libraryType(outType(i)) << " *out" << i << " = (" << libraryType(outType(i)) << " *)out" << i
         << "_; // " << shapeComment({outType(i), out(i).local()}) << "\n";
  }

private:
  const exec::RankProgram &p;
  const exec::Step &s;
};

/// What a wrapper's body is written from: the step's buffers, its
/// attributes, where the rank's block lies, and its signature's variant
/// (ir/KernelDesc.h's LibrarySignature).
struct Call {
  const Wrapper &w;
  AttrReader &at;
  const exec::Step &s;
  const MeshSizes &mesh;
  bool variant;
};

// One body per library signature: the runtime call with the step's shapes
// and attributes as constants; "" or why the step does not fit it.

std::string wrapCausalMask(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  const Shape &x = w.inShape(0);
  if (x.size() < 2) return "a mask of rank below 2";
  int64_t rows = x[x.size() - 2], cols = x.back();
  b << "  planc::cpu::causalMask(in0, out0, " << elements(x, 0, x.size() - 2) << ", " << rows << ", " << cols << ", "
    << (c.variant ? "-INFINITY" : "0.0") << ", " << w.acc(0) << ");\n";
  return "";
}

std::string wrapRope(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const Shape &x = w.inShape(0);
  if (x.size() != 4) return "rope of rank other than 4";
  b << "  planc::cpu::rope(in0, out0, " << x[0] << ", " << x[1] << ", " << x[2] << ", " << x[3] << ", "
    << num(at.getFloat("theta", 10000.0)) << ", " << (at.getBool("inverse", false) ? "true" : "false") << ", "
    << w.acc(0) << ");\n";
  return "";
}

std::string wrapDropout(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const MeshSizes &mesh = c.mesh;
  const Shape &x = w.inShape(0);
  double p = at.getFloat("p");
  int64_t seed = at.getInt("seed"), stream = at.getInt("stream");
  std::vector<int64_t> split = at.getInts("batch_split", std::vector<int64_t>{});
  if (!split.empty() && split.size() != 3) return "a batch_split of other than three numbers";
  if (!split.empty()) b << "  static const int64_t split[3] = {" << split[0] << ", " << split[1] << ", " << split[2] << "};\n";
  // On a block of a split value the mask's counters are the elements'
  // indices in the global value: where the block lies is the rank's.
  const bool placed = isSplitOverMesh(w.in(0).type(), mesh);
  if (placed) {
    std::string place = blockPlace(w.in(0).type(), mesh);
    if (place.empty()) return "dropout on a split value of rank above 8";
    b << "  // The rank's block: its sizes, rows of data, the global sizes, its offsets.\n"
      << "  const planc::cpu::BlockPlace place" << place << ";\n";
  }
  b << "  planc::cpu::dropout(in0, out0, " << elements(x) << ", " << (x.empty() ? 0 : x[0]) << ", " << num(p) << ", "
    << "uint64_t(" << seed << "ll), uint64_t(" << stream << "ll), planc_draw_seed, " << (split.empty() ? "nullptr" : "split")
    << ", " << w.acc(0) << (placed ? ", &place" : "") << ");\n";
  return "";
}

std::string wrapFlashAttention(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const MeshSizes &mesh = c.mesh;
  const Shape &q = w.inShape(0), &k = w.inShape(1), &v = w.inShape(2);
  const size_t r = q.size();
  if (r < 2 || k.size() != r || v.size() != r) return "attention of rank below 2";
  double p = at.getFloat("p", 0.0);
  std::vector<int64_t> split = at.getInts("batch_split", std::vector<int64_t>{});
  if (!split.empty() && split.size() != 3) return "a batch_split of other than three numbers";
  if (!split.empty()) b << "  static const int64_t split[3] = {" << split[0] << ", " << split[1] << ", " << split[2] << "};\n";
  // The mask is over the probabilities [..., S, Tk], typed as q with its
  // last dim Tk (ir/ops/FlashAttention.cpp): on a split q, a rank's block.
  TensorType probs = w.in(0).type();
  if (!probs.shape.empty() && w.in(1).type().rank() == r) probs.shape.back() = w.in(1).type().shape[r - 2];
  const bool placed = p > 0 && isSplitOverMesh(probs, mesh);
  if (placed) {
    std::string place = blockPlace(probs, mesh);
    if (place.empty()) return "dropout on a split value of rank above 8";
    b << "  // The rank's block: its sizes, rows of data, the global sizes, its offsets.\n"
      << "  const planc::cpu::BlockPlace place" << place << ";\n";
  }
  b << "  const planc::cpu::FlashShape shape{" << elements(q, 0, r - 2) << ", " << q[r - 2] << ", " << k[r - 2] << ", "
    << q[r - 1] << ", " << v[r - 1] << ", " << (r > 2 ? q[0] : 1) << ", " << num(at.getFloat("scale")) << ", "
    << (at.getBool("causal", false) ? "true" : "false") << ", " << num(p) << ", "
    << "planc::cpu::dropoutKey(uint64_t(" << at.getInt("seed", 0) << "ll), uint64_t(" << at.getInt("stream", 0)
    << "ll), planc_draw_seed), " << (split.empty() ? "nullptr" : "split") << (placed ? ", &place" : "") << "};\n";
  if (!c.variant)
    b << "  planc::cpu::flashAttention(in0, in1, in2, out0, out1, shape, " << w.acc(0) << ", " << w.acc(1) << ");\n";
  else
    b << "  planc::cpu::flashAttentionGrad(in0, in1, in2, in3, in4, in5, out0, out1, out2, shape, " << w.acc(0) << ", "
      << w.acc(1) << ", " << w.acc(2) << ");\n";
  return "";
}

std::string wrapGather(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  const MeshSizes &mesh = c.mesh;
  // A vocab-split table holds the rows from the rank's offset on.
  const Shape &table = w.inShape(0);
  if (table.empty()) return "a gather from a scalar";
  b << "  planc::cpu::gather(in0, in1, out0, " << elements(w.inShape(1)) << ", " << table[0] << ", "
    << elements(table, 1) << ", " << blockOffsetExpr(w.in(0).type(), 0, mesh) << ", " << w.in(0).type().shape[0]
    << ", " << w.acc(0) << ");\n";
  return "";
}

std::string wrapScatterAdd(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  const MeshSizes &mesh = c.mesh;
  const Shape &res = w.out(0).local();
  if (res.empty()) return "a scatter into a scalar";
  b << "  planc::cpu::scatterAdd(in0, in1, out0, " << elements(w.inShape(0)) << ", " << res[0] << ", "
    << elements(res, 1) << ", " << blockOffsetExpr(w.out(0).type(), 0, mesh) << ", " << w.out(0).type().shape[0]
    << ", " << w.acc(0) << ");\n";
  return "";
}

std::string wrapCopyBlocks(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const exec::Step &s = c.s;
  const Shape &y = w.out(0).local();
  int64_t dim = at.getInt("dim");
  if (dim < 0) dim += int64_t(y.size());
  if (dim < 0 || size_t(dim) >= y.size()) return "a dim out of range";
  const int64_t inner = elements(y, size_t(dim) + 1), outer = elements(y, 0, size_t(dim));
  if (c.variant) {
    int64_t repeats = at.getInt("repeats");
    int64_t size = w.inShape(0)[size_t(dim)];
    b << "  planc::cpu::copyBlocks(in0, out0, " << outer * size << ", " << inner << ", " << repeats * inner << ", 0, "
      << repeats << ", " << w.acc(0) << ");\n";
  } else {
    int64_t offset = 0;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      if (w.inType(i) != w.outType(0)) return "a concat of mixed dtypes";
      int64_t size = w.inShape(i)[size_t(dim)];
      b << "  planc::cpu::copyBlocks(in" << i << ", out0, " << outer << ", " << size * inner << ", "
        << y[size_t(dim)] * inner << ", " << offset * inner << ", 1, " << w.acc(0) << ");\n";
      offset += size;
    }
  }
  return "";
}

std::string wrapCrossEntropy(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const Shape &logits = w.inShape(0);
  if (logits.empty()) return "cross-entropy of a scalar";
  if (w.in(0).type().shape.back() != logits.back()) return "vocab-split logits (vocab_ce_stats does that)";
  int64_t V = logits.back(), N = elements(w.inShape(1));
  double denominator = at.getFloat("denominator", double(N));
  if (!c.variant)
    b << "  planc::cpu::crossEntropy(in0, in1, out0, " << N << ", " << V << ", " << num(denominator) << ", "
      << w.acc(0) << ");\n";
  else
    b << "  planc::cpu::crossEntropyGrad(in0, in1, in2, out0, " << N << ", " << V << ", " << num(denominator)
      << ", " << w.acc(0) << ");\n";
  return "";
}

std::string wrapVocabCe(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const MeshSizes &mesh = c.mesh;
  // The rank's columns of logits split along the vocab: from its offset
  // on, the targets' range the whole vocabulary.
  const Shape &logits = w.inShape(0);
  if (logits.empty()) return "cross-entropy of a scalar";
  const TensorType &global = w.in(0).type();
  const std::string first = blockOffsetExpr(global, global.rank() - 1, mesh);
  int64_t V = logits.back(), N = elements(w.inShape(1));
  if (!c.variant) {
    if (w.outType(0) != w.outType(1)) return "statistics of mixed dtypes";
    b << "  planc::cpu::vocabCeStats(in0, in1, in2, out0, out1, " << N << ", " << V << ", " << first << ", "
      << global.shape.back() << ", " << w.acc(0) << ", " << w.acc(1) << ");\n";
  } else {
    b << "  planc::cpu::vocabCeGrad(in0, in1, in2, in3, in4, out0, " << N << ", " << V << ", " << first << ", "
      << global.shape.back() << ", " << num(at.getFloat("denominator", double(N))) << ", " << w.acc(0) << ");\n";
  }
  return "";
}

std::string wrapGlobalNorm(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const exec::Step &s = c.s;
  b << "  double sum = 0;\n";
  for (size_t i = 0; i < s.inputs.size(); ++i)
    b << "  sum = planc::cpu::addSquares(sum, in" << i << ", " << elements(w.inShape(i)) << ");\n";
  b << "  planc::cpu::put(out0, 0, " << (at.getBool("squared", false) ? "sum" : "std::sqrt(sum)") << ", "
    << w.acc(0) << ");\n";
  return "";
}

std::string wrapNormGrad(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const exec::Step &s = c.s;
  const bool centered = c.variant;
  const Shape &x = w.inShape(0);
  if (x.empty()) return "a norm of a scalar";
  for (size_t i = 1; i < s.inputs.size(); ++i)
    if (w.inType(i) != w.inType(0)) return "a norm of mixed dtypes";
  for (size_t k = 0; k < s.outputs.size(); ++k)
    if (w.outType(k) != w.inType(0)) return "a norm of mixed dtypes";
  int64_t h = x.back();
  b << "  planc::cpu::normGrad(in0, in1, in" << (centered ? 3 : 2) << ", out0, out1, "
    << (centered ? "out2" : "(decltype(out0))nullptr") << ", " << elements(x) / std::max<int64_t>(h, 1) << ", " << h
    << ", " << num(at.getFloat("eps", kNormDefaultEps)) << ", " << (centered ? "true" : "false") << ", " << w.acc(0)
    << ", " << w.acc(1) << ", " << (centered ? w.acc(2) : "false") << ");\n";
  return "";
}

std::string wrapLrSchedule(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  std::string decay = at.getString("decay", std::string("constant"));
  const char *d = decay == "linear" ? "Linear" : decay == "cosine" ? "Cosine" : "Constant";
  if (decay != "linear" && decay != "cosine" && decay != "constant") return "an unknown decay";
  int64_t warmup = at.getInt("warmup", 0);
  b << "  planc::cpu::put(out0, 0, planc::cpu::learningRate(double(in0[0]), " << num(at.getFloat("lr")) << ", "
    << warmup << ", planc::cpu::Decay::" << d << ", " << at.getInt("decay_steps", 0) << ", "
    << num(at.getFloat("min_lr", 0.0)) << "), " << w.acc(0) << ");\n";
  return "";
}

std::string wrapSgdUpdate(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  AttrReader &at = c.at;
  const exec::Step &s = c.s;
  if (s.accumulates(0) || s.accumulates(1)) return "an accumulating update";
  b << "  planc::cpu::sgdUpdate(in0, in1, in2, in3, out0, out1, " << elements(w.inShape(0)) << ", "
    << num(at.getFloat("momentum", 0.0)) << ", " << num(at.getFloat("weight_decay", 0.0)) << ", "
    << (at.getBool("nesterov", false) ? "true" : "false") << ");\n";
  return "";
}

std::string wrapAllFinite(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  const exec::Step &s = c.s;
  b << "  bool finite = true;\n";
  for (size_t i = 0; i < s.inputs.size(); ++i)
    b << "  finite = finite && planc::cpu::allFinite(in" << i << ", " << elements(w.inShape(i)) << ");\n";
  if (s.accumulates(0)) return "an accumulating all_finite";
  b << "  out0[0] = finite;\n";
  return "";
}

std::string wrapSelect(const Call &c, llvm::raw_ostream &b) {
  const Wrapper &w = c.w;
  const Shape &y = w.out(0).local();
  if (w.inType(1) != w.outType(0) || w.inType(2) != w.outType(0)) return "a select of mixed dtypes";
  b << "  const int64_t n = " << elements(y) << ";\n";
  b << "  for (int64_t i = 0; i < n; ++i)\n";
  b << "    planc::cpu::put(out0, i, in0[" << (elements(w.inShape(0)) == 1 ? "0" : broadcastOffset(w.inShape(0), y, "i"))
    << "] != 0 ? double(in1[i]) : double(in2[i]), " << w.acc(0) << ");\n";
  return "";
}

std::string wrapLossScaleUpdate(const Call &c, llvm::raw_ostream &b) {
  AttrReader &at = c.at;
  const exec::Step &s = c.s;
  if (s.accumulates(0) || s.accumulates(1)) return "an accumulating update";
  b << "  planc::cpu::lossScaleUpdate(in0, in1, in2, out0, out1, " << num(at.getFloat("growth", 2.0)) << ", "
    << num(at.getFloat("backoff", 0.5)) << ", " << at.getInt("window", 2000) << ");\n";
  return "";
}

using WrapperFn = std::string (*)(const Call &c, llvm::raw_ostream &b);

/// The wrapper bodies by signature name (the names ir/ops/ declares).
const std::map<llvm::StringRef, WrapperFn> &wrappers() {
  static const std::map<llvm::StringRef, WrapperFn> table = {
      {"causal_mask", wrapCausalMask},
      {"rope", wrapRope},
      {"dropout", wrapDropout},
      {"flash_attention", wrapFlashAttention},
      {"gather", wrapGather},
      {"scatter_add", wrapScatterAdd},
      {"copy_blocks", wrapCopyBlocks},
      {"cross_entropy", wrapCrossEntropy},
      {"vocab_ce", wrapVocabCe},
      {"global_norm", wrapGlobalNorm},
      {"norm_grad", wrapNormGrad},
      {"lr_schedule", wrapLrSchedule},
      {"sgd_update", wrapSgdUpdate},
      {"all_finite", wrapAllFinite},
      {"select", wrapSelect},
      {"loss_scale_update", wrapLossScaleUpdate},
  };
  return table;
}

} // namespace

bool backend::hasLibraryKernel(OpKind kind) {
  if (kind >= OpKind::NumOps) return false;
  const char *name = opDef(kind).kernel.library.name;
  return name && wrappers().count(name);
}

std::string backend::renderLibraryKernel(const exec::RankProgram &program, const exec::Step &s,
                                         const std::string &name, const std::string &banner, const CLanguage &lang,
                                         llvm::raw_ostream &os, const MeshSizes &mesh) {
  if (!hasLibraryKernel(s.kind)) return "no hand-written kernel";
  if (lang.noLibrary) return lang.noLibrary;
  Wrapper w(program, s);
  if (std::string why = w.check(); !why.empty()) return why;
  AttrReader at(s.attrs.map());
  const ir::LibrarySignature &sig = opDef(s.kind).kernel.library;
  std::string body;
  llvm::raw_string_ostream b(body);
  if (std::string why = wrappers().at(sig.name)({w, at, s, mesh, sig.variant}, b); !why.empty()) return why;
  if (!at.ok()) return at.error;
  b.flush();
  w.open(name, banner, os);
  os << body << "}\n\n";
  return "";
}
