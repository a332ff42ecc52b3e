//===- ir/ops/Formula.cpp - the formulas of the elementwise ops ----------===//
//
// Each formula spells its op's arithmetic in the order the reference kernels
// always computed it (see the comments for the expression each mirrors), so
// the f64 evaluation is unchanged by going through the formula.
//
//===----------------------------------------------------------------------===//

#include "ir/ops/Formula.h"
#include "ir/ops/OpSupport.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>

using namespace planc;
using namespace planc::ir;

const char *ir::spelling(FormulaOp op) {
  switch (op) {
  case FormulaOp::Input: return "input";
  case FormulaOp::Const: return "const";
  case FormulaOp::Attr: return "attr";
  case FormulaOp::Neg: return "neg";
  case FormulaOp::Exp: return "exp";
  case FormulaOp::Log: return "log";
  case FormulaOp::Sqrt: return "sqrt";
  case FormulaOp::Tanh: return "tanh";
  case FormulaOp::Abs: return "abs";
  case FormulaOp::Add: return "add";
  case FormulaOp::Sub: return "sub";
  case FormulaOp::Mul: return "mul";
  case FormulaOp::Div: return "div";
  case FormulaOp::Pow: return "pow";
  case FormulaOp::Less: return "less";
  case FormulaOp::LessEq: return "less_eq";
  case FormulaOp::Select: return "select";
  }
  return "";
}

unsigned ir::arity(FormulaOp op) {
  switch (op) {
  case FormulaOp::Input:
  case FormulaOp::Const:
  case FormulaOp::Attr: return 0;
  case FormulaOp::Neg:
  case FormulaOp::Exp:
  case FormulaOp::Log:
  case FormulaOp::Sqrt:
  case FormulaOp::Tanh:
  case FormulaOp::Abs: return 1;
  case FormulaOp::Select: return 3;
  default: return 2;
  }
}

std::vector<const char *> Formula::attrs() const {
  std::vector<const char *> names;
  for (const FormulaNode &n : nodes)
    if (n.op == FormulaOp::Attr &&
        std::none_of(names.begin(), names.end(), [&](const char *s) { return std::strcmp(s, n.attr) == 0; }))
      names.push_back(n.attr);
  return names;
}

int FormulaBuilder::push(FormulaNode n) {
  f.nodes.push_back(n);
  return int(f.nodes.size()) - 1;
}

int FormulaBuilder::input(int index) {
  FormulaNode n;
  n.op = FormulaOp::Input;
  n.index = index;
  f.inputs = std::max(f.inputs, unsigned(index + 1));
  return push(n);
}

int FormulaBuilder::constant(double value) {
  FormulaNode n;
  n.op = FormulaOp::Const;
  n.value = value;
  return push(n);
}

int FormulaBuilder::attr(const char *name, double otherwise) {
  FormulaNode n;
  n.op = FormulaOp::Attr;
  n.attr = name;
  n.value = otherwise;
  return push(n);
}

int FormulaBuilder::unary(FormulaOp op, int a) {
  FormulaNode n;
  n.op = op;
  n.a = a;
  return push(n);
}

int FormulaBuilder::binary(FormulaOp op, int a, int b) {
  FormulaNode n;
  n.op = op;
  n.a = a;
  n.b = b;
  return push(n);
}

int FormulaBuilder::select(int cond, int ifTrue, int ifFalse) {
  FormulaNode n;
  n.op = FormulaOp::Select;
  n.a = cond;
  n.b = ifTrue;
  n.c = ifFalse;
  return push(n);
}

Formula FormulaBuilder::done(int result) { return done(std::vector<int>{result}); }

Formula FormulaBuilder::done(std::vector<int> results) {
  f.result = results.empty() ? -1 : results[0];
  f.results = std::move(results);
  return std::move(f);
}

namespace {

constexpr double kGeluC = 0.044715;

/// Numerically stable sigmoid: x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)).
int sigmoidOf(FormulaBuilder &b, int x) {
  int one = b.constant(1.0);
  int positive = b.div(one, b.add(one, b.exp(b.neg(x))));
  int e = b.exp(x);
  int negative = b.div(e, b.add(one, e));
  return b.select(b.binary(FormulaOp::LessEq, b.constant(0.0), x), positive, negative);
}

/// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + c * x * x * x))).
Formula gelu() {
  FormulaBuilder b;
  int x = b.input(0);
  int cube = b.mul(b.mul(b.mul(b.constant(kGeluC), x), x), x);
  int u = b.mul(b.constant(std::sqrt(2.0 / M_PI)), b.add(x, cube));
  return b.done(b.mul(b.mul(b.constant(0.5), x), b.add(b.constant(1.0), b.tanh(u))));
}

/// dy * (0.5 (1 + t) + 0.5 x (1 - t t) k (1 + 3 c x x)), t = tanh(k (x + c x^3)).
Formula geluGrad() {
  FormulaBuilder b;
  int x = b.input(0), dy = b.input(1);
  int k = b.constant(std::sqrt(2.0 / M_PI));
  int cube = b.mul(b.mul(b.mul(b.constant(kGeluC), x), x), x);
  int t = b.tanh(b.mul(k, b.add(x, cube)));
  int one = b.constant(1.0), half = b.constant(0.5);
  int left = b.mul(half, b.add(one, t));
  int right = b.mul(b.mul(b.mul(half, x), b.sub(one, b.mul(t, t))), k);
  int poly = b.add(one, b.mul(b.mul(b.constant(3.0 * kGeluC), x), x));
  return b.done(b.mul(dy, b.add(left, b.mul(right, poly))));
}

/// (param, grad, m, v, lr, step) -> (param', m', v'): Adam, AdamW with
/// `decoupled`, torch.optim's arithmetic in its order:
///   step_size = lr / (1 - beta1^step), bc2 = sqrt(1 - beta2^step)
///   decoupled: param *= 1 - lr wd; else grad += wd param
///   m' = m + (grad - m) (1 - beta1)          (exp_avg.lerp_)
///   v' = v beta2 + (1 - beta2) grad grad
///   param' = param - step_size m' / (sqrt(v') / bc2 + eps)
Formula adam() {
  FormulaBuilder b;
  int p = b.input(0), g = b.input(1), m = b.input(2), v = b.input(3), lr = b.input(4), step = b.input(5);
  int b1 = b.attr("beta1", 0.9), b2 = b.attr("beta2", 0.999), eps = b.attr("eps", 1e-8);
  int wd = b.attr("weight_decay", 0.0), decoupled = b.attr("decoupled", 0.0), one = b.constant(1.0);
  int stepSize = b.div(lr, b.sub(one, b.binary(FormulaOp::Pow, b1, step)));
  int bc2 = b.unary(FormulaOp::Sqrt, b.sub(one, b.binary(FormulaOp::Pow, b2, step)));
  int param = b.select(decoupled, b.mul(p, b.sub(one, b.mul(lr, wd))), p);
  int grad = b.select(decoupled, g, b.add(g, b.mul(wd, p)));
  int m2 = b.add(m, b.mul(b.sub(grad, m), b.sub(one, b1)));
  int v2 = b.add(b.mul(v, b2), b.mul(b.mul(b.sub(one, b2), grad), grad));
  int denom = b.add(b.div(b.unary(FormulaOp::Sqrt, v2), bc2), eps);
  int p2 = b.sub(param, b.div(b.mul(stepSize, m2), denom));
  return b.done({p2, m2, v2});
}

Formula unaryOf(FormulaOp op) {
  FormulaBuilder b;
  return b.done(b.unary(op, b.input(0)));
}

Formula binaryOf(FormulaOp op) {
  FormulaBuilder b;
  return b.done(b.binary(op, b.input(0), b.input(1)));
}

/// x op attr (scale, add_scalar, pow).
Formula withAttr(FormulaOp op, const char *name) {
  FormulaBuilder b;
  return b.done(b.binary(op, b.input(0), b.attr(name)));
}

std::array<Formula, size_t(OpKind::NumOps)> makeTable() {
  std::array<Formula, size_t(OpKind::NumOps)> t;
  t[size_t(OpKind::Neg)] = unaryOf(FormulaOp::Neg);
  t[size_t(OpKind::Exp)] = unaryOf(FormulaOp::Exp);
  t[size_t(OpKind::Log)] = unaryOf(FormulaOp::Log);
  t[size_t(OpKind::Sqrt)] = unaryOf(FormulaOp::Sqrt);
  t[size_t(OpKind::Tanh)] = unaryOf(FormulaOp::Tanh);
  t[size_t(OpKind::Abs)] = unaryOf(FormulaOp::Abs);
  {
    FormulaBuilder b; // 1 / sqrt(x)
    t[size_t(OpKind::Rsqrt)] = b.done(b.div(b.constant(1.0), b.unary(FormulaOp::Sqrt, b.input(0))));
  }
  {
    FormulaBuilder b; // x < 0 ? 0 : x (NaN stays NaN, as torch.relu)
    int x = b.input(0), zero = b.constant(0.0);
    t[size_t(OpKind::Relu)] = b.done(b.select(b.binary(FormulaOp::Less, x, zero), zero, x));
  }
  t[size_t(OpKind::Gelu)] = gelu();
  {
    FormulaBuilder b; // x * sigmoid(x)
    int x = b.input(0);
    t[size_t(OpKind::Silu)] = b.done(b.mul(x, sigmoidOf(b, x)));
  }
  {
    FormulaBuilder b;
    t[size_t(OpKind::Sigmoid)] = b.done(sigmoidOf(b, b.input(0)));
  }
  t[size_t(OpKind::Pow)] = withAttr(FormulaOp::Pow, "exponent");
  t[size_t(OpKind::Scale)] = withAttr(FormulaOp::Mul, "factor");
  t[size_t(OpKind::AddScalar)] = withAttr(FormulaOp::Add, "value");
  t[size_t(OpKind::Add)] = binaryOf(FormulaOp::Add);
  t[size_t(OpKind::Sub)] = binaryOf(FormulaOp::Sub);
  t[size_t(OpKind::Mul)] = binaryOf(FormulaOp::Mul);
  t[size_t(OpKind::Div)] = binaryOf(FormulaOp::Div);
  // The activations' derivatives: dx = dy * f'(v), v the forward input
  // (gelu, silu, relu) or result (sigmoid, tanh).
  t[size_t(OpKind::GeluGrad)] = geluGrad();
  {
    FormulaBuilder b; // dy * s (1 + x (1 - s)), s = sigmoid(x)
    int x = b.input(0), dy = b.input(1);
    int s = sigmoidOf(b, x), one = b.constant(1.0);
    t[size_t(OpKind::SiluGrad)] = b.done(b.mul(dy, b.mul(s, b.add(one, b.mul(x, b.sub(one, s))))));
  }
  {
    FormulaBuilder b; // dy * y (1 - y)
    int y = b.input(0), dy = b.input(1);
    t[size_t(OpKind::SigmoidGrad)] = b.done(b.mul(dy, b.mul(y, b.sub(b.constant(1.0), y))));
  }
  {
    FormulaBuilder b; // dy * (1 - y y)
    int y = b.input(0), dy = b.input(1);
    t[size_t(OpKind::TanhGrad)] = b.done(b.mul(dy, b.sub(b.constant(1.0), b.mul(y, y))));
  }
  {
    FormulaBuilder b; // dy * (0 < x ? 1 : 0): 0 at x = 0, as torch's threshold_backward
    int x = b.input(0), dy = b.input(1);
    int d = b.select(b.binary(FormulaOp::Less, b.constant(0.0), x), b.constant(1.0), b.constant(0.0));
    t[size_t(OpKind::ReluGrad)] = b.done(b.mul(dy, d));
  }
  t[size_t(OpKind::AdamUpdate)] = adam();
  {
    FormulaBuilder b; // min(1, max_norm / (norm + 1e-6)), as std::min(1.0, c): c < 1 ? c : 1
    int c = b.div(b.attr("max_norm"), b.add(b.input(0), b.constant(1e-6)));
    int one = b.constant(1.0);
    t[size_t(OpKind::ClipScale)] = b.done(b.select(b.binary(FormulaOp::Less, c, one), c, one));
  }
  return t;
}

const std::array<Formula, size_t(OpKind::NumOps)> &table() {
  static const std::array<Formula, size_t(OpKind::NumOps)> t = makeTable();
  return t;
}

double apply(FormulaOp op, double a, double b, double c) {
  switch (op) {
  case FormulaOp::Neg: return -a;
  case FormulaOp::Exp: return std::exp(a);
  case FormulaOp::Log: return std::log(a);
  case FormulaOp::Sqrt: return std::sqrt(a);
  case FormulaOp::Tanh: return std::tanh(a);
  case FormulaOp::Abs: return std::fabs(a);
  case FormulaOp::Add: return a + b;
  case FormulaOp::Sub: return a - b;
  case FormulaOp::Mul: return a * b;
  case FormulaOp::Div: return a / b;
  case FormulaOp::Pow: return std::pow(a, b);
  case FormulaOp::Less: return a < b ? 1.0 : 0.0;
  case FormulaOp::LessEq: return a <= b ? 1.0 : 0.0;
  case FormulaOp::Select: return a != 0 ? b : c;
  default: return 0;
  }
}

} // namespace

double ir::applyFormulaOp(FormulaOp op, double a, double b, double c) { return apply(op, a, b, c); }

const Formula *ir::formulaOf(OpKind kind) {
  if (size_t(kind) >= size_t(OpKind::NumOps)) return nullptr;
  const Formula &f = table()[size_t(kind)];
  return f.result >= 0 ? &f : nullptr;
}

std::vector<double> ir::attrValues(const Formula &f, const AttrMap &attrs) {
  std::vector<double> values;
  for (const char *name : f.attrs()) {
    auto it = attrs.find(name);
    double v = 0;
    for (const FormulaNode &n : f.nodes)
      if (n.op == FormulaOp::Attr && std::strcmp(n.attr, name) == 0) {
        v = n.value;
        break;
      }
    if (it != attrs.end()) {
      if (const double *d = std::get_if<double>(&it->second)) v = *d;
      else if (const int64_t *i = std::get_if<int64_t>(&it->second)) v = double(*i);
      else if (const bool *b = std::get_if<bool>(&it->second)) v = *b ? 1.0 : 0.0;
    }
    values.push_back(v);
  }
  return values;
}

double ir::evalFormulaAt(const Formula &f, llvm::ArrayRef<double> attrs, llvm::ArrayRef<double> x) {
  std::vector<const char *> names = f.attrs();
  std::vector<double> v(f.nodes.size());
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const FormulaNode &n = f.nodes[i];
    switch (n.op) {
    case FormulaOp::Input: v[i] = x[size_t(n.index)]; break;
    case FormulaOp::Const: v[i] = n.value; break;
    case FormulaOp::Attr: {
      size_t k = 0;
      while (k < names.size() && std::strcmp(names[k], n.attr) != 0) ++k;
      v[i] = k < attrs.size() ? attrs[k] : 0.0;
      break;
    }
    default:
      v[i] = apply(n.op, n.a >= 0 ? v[size_t(n.a)] : 0, n.b >= 0 ? v[size_t(n.b)] : 0, n.c >= 0 ? v[size_t(n.c)] : 0);
    }
  }
  return v[size_t(f.result)];
}

void ir::evalFormula(const Formula &f, const AttrMap &attrMap, llvm::ArrayRef<const Tensor *> in, Tensor &out) {
  evalFormula(f, attrMap, in, llvm::MutableArrayRef<Tensor>(out));
}

void ir::evalFormula(const Formula &f, const AttrMap &attrMap, llvm::ArrayRef<const Tensor *> in,
                     llvm::MutableArrayRef<Tensor> outs) {
  // Node by node over blocks of elements: one dispatch per node and block,
  // not per element.
  constexpr size_t kBlock = 256;
  const Tensor &out = outs[0];
  const size_t n = out.data.size(), nodes = f.nodes.size();
  std::vector<double> attrs = attrValues(f, attrMap);
  std::vector<const char *> names = f.attrs();
  std::vector<double> attrOfNode(nodes, 0.0);
  for (size_t i = 0; i < nodes; ++i)
    if (f.nodes[i].op == FormulaOp::Attr)
      for (size_t k = 0; k < names.size(); ++k)
        if (std::strcmp(names[k], f.nodes[i].attr) == 0) attrOfNode[i] = attrs[k];
  // Each operand's element for each result element: the same index where
  // the shapes are equal, else through broadcast strides.
  // A one-element operand (an optimizer's learning rate) is read at 0
  // without the index walk.
  bool same = true;
  std::vector<bool> scalar;
  for (const Tensor *t : in) {
    scalar.push_back(t->data.size() == 1 && t->shape != out.shape);
    same &= t->shape == out.shape || scalar.back();
  }
  std::vector<std::vector<int64_t>> strides;
  if (!same)
    for (const Tensor *t : in) strides.push_back(broadcastStrides(t->shape, out.shape));
  std::optional<IndexWalker> walker;
  if (!same && n > 0) walker.emplace(out.shape, strides);

  std::vector<double> v(nodes * kBlock);
  std::vector<int64_t> offsets(in.size() * kBlock);
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t m = std::min(kBlock, n - start);
    if (!same) {
      for (size_t e = 0; e < m; ++e) {
        for (size_t k = 0; k < in.size(); ++k) offsets[k * kBlock + e] = walker->offset(k);
        walker->next();
      }
    }
    for (size_t i = 0; i < nodes; ++i) {
      const FormulaNode &node = f.nodes[i];
      double *r = &v[i * kBlock];
      switch (node.op) {
      case FormulaOp::Input: {
        const std::vector<double> &x = in[size_t(node.index)]->data;
        if (same && scalar[size_t(node.index)]) std::fill(r, r + m, x[0]);
        else if (same) std::copy(x.begin() + long(start), x.begin() + long(start + m), r);
        else
          for (size_t e = 0; e < m; ++e) r[e] = x[size_t(offsets[size_t(node.index) * kBlock + e])];
        break;
      }
      case FormulaOp::Const: std::fill(r, r + m, node.value); break;
      case FormulaOp::Attr: std::fill(r, r + m, attrOfNode[i]); break;
      default: {
        const double *a = node.a >= 0 ? &v[size_t(node.a) * kBlock] : nullptr;
        const double *b = node.b >= 0 ? &v[size_t(node.b) * kBlock] : nullptr;
        const double *c = node.c >= 0 ? &v[size_t(node.c) * kBlock] : nullptr;
        for (size_t e = 0; e < m; ++e) r[e] = apply(node.op, a ? a[e] : 0, b ? b[e] : 0, c ? c[e] : 0);
      }
      }
    }
    for (size_t r = 0; r < f.results.size() && r < outs.size(); ++r)
      std::copy(&v[size_t(f.results[r]) * kBlock], &v[size_t(f.results[r]) * kBlock] + m,
                outs[r].data.begin() + long(start));
  }
}
