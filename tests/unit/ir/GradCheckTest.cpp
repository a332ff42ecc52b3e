//===- tests/unit/ir/GradCheckTest.cpp - gradient rules vs differences -------===//
//
// For every op kind with a gradient rule: a module inputs -> op -> scalar
// loss = sum(result * r) with a fixed random r (so no symmetry hides a wrong
// rule), the rule applied by a small reverse sweep written here (the autodiff
// pass is tested on its own), everything evaluated in f64 by the interpreter
// and compared with central differences (step 1e-6) on every input element.
// The error of an input's gradient is max |analytic - numeric| over the
// elements, relative to the largest numeric component of that gradient; it
// must stay under 1e-6.
//
//===----------------------------------------------------------------------===//

#include "OpTestHelpers.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

using namespace planc;
using namespace planc::ir;
using namespace planc::ir::testing;

namespace {

//===----------------------------------------------------------------------===//
// The reverse sweep
//===----------------------------------------------------------------------===//

/// Applies the gradient rules of ops [0, forwardOps) in reverse from
/// d(loss) = 1, summing the contributions of every use (fan-out). Returns the
/// gradient of each value reached, and the op kinds whose rule ran in `used`.
std::map<const Value *, Value *> reverseSweep(Module &m, Value *loss, size_t forwardOps, std::set<OpKind> &used) {
  Builder b(m);
  std::map<const Value *, Value *> grads;
  grads[loss] = b.value(OpKind::Fill, {}, {{"value", 1.0}, {"shape", Shape{}}, {"dtype", std::string("f64")}});
  for (size_t i = forwardOps; i-- > 0;) {
    const Op &op = *m.ops[i];
    std::vector<Value *> dResults;
    bool reached = false;
    for (Value *r : op.results) {
      auto it = grads.find(r);
      dResults.push_back(it == grads.end() ? nullptr : it->second);
      reached |= it != grads.end();
    }
    if (!reached) continue;
    const OpDef &def = opDef(op.kind);
    if (!def.grad) {
      ADD_FAILURE() << "'" << spelling(op.kind) << "' is on the path to the loss but has no gradient rule";
      continue;
    }
    BuilderScope scope(b, op);
    std::vector<Value *> dOperands;
    def.grad(b, op, dResults, dOperands);
    used.insert(op.kind);
    EXPECT_EQ(dOperands.size(), op.operands.size()) << spelling(op.kind);
    for (size_t k = 0; k < dOperands.size() && k < op.operands.size(); ++k) {
      if (!dOperands[k]) continue;
      const TensorType &want = op.operands[k]->type;
      EXPECT_TRUE(dOperands[k]->type.shape == want.shape && dOperands[k]->type.dtype == want.dtype)
          << spelling(op.kind) << ": gradient of operand " << k << " is " << toString(dOperands[k]->type)
          << ", the operand " << toString(want);
      Value *&g = grads[op.operands[k]];
      g = g ? b.add(g, dOperands[k]) : dOperands[k];
    }
  }
  return grads;
}

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

enum class Data { Normal, Positive, AwayFromZero, Indices };

struct InputSpec {
  std::string name;
  Shape shape;
  Data data = Data::Normal;
  int64_t indexLimit = 0; // indices are drawn from [0, indexLimit)
};

struct GradCase {
  std::string name;
  OpKind kind; // the op whose rule is checked (others may appear around it)
  std::vector<InputSpec> inputs;
  std::function<Value *(Builder &, const std::vector<Value *> &)> body;
  std::string tableKey = ""; // the row of the error table; the op's name by default
};

void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

using Ints = std::vector<int64_t>;
Value *unary(Builder &b, OpKind k, Value *x, AttrMap a = {}) { return b.value(k, {x}, std::move(a)); }

std::vector<GradCase> gradCases() {
  std::vector<GradCase> cases;
  auto add = [&](std::string name, OpKind kind, std::vector<InputSpec> inputs,
                 std::function<Value *(Builder &, const std::vector<Value *> &)> body) {
    cases.push_back({std::move(name), kind, std::move(inputs), std::move(body)});
  };
  auto unaryCase = [&](OpKind kind, Data data, AttrMap attrs = {}, std::string suffix = "") {
    add(std::string(spelling(kind)) + suffix, kind, {{"x", {2, 3, 4}, data}},
        [kind, attrs](Builder &b, const std::vector<Value *> &in) { return unary(b, kind, in[0], attrs); });
  };

  // ---- unary
  unaryCase(OpKind::Neg, Data::Normal);
  unaryCase(OpKind::Exp, Data::Normal);
  unaryCase(OpKind::Log, Data::Positive);
  unaryCase(OpKind::Sqrt, Data::Positive);
  unaryCase(OpKind::Rsqrt, Data::Positive);
  unaryCase(OpKind::Tanh, Data::Normal);
  unaryCase(OpKind::Relu, Data::AwayFromZero);
  unaryCase(OpKind::Gelu, Data::Normal);
  unaryCase(OpKind::Silu, Data::Normal);
  unaryCase(OpKind::Sigmoid, Data::Normal);
  unaryCase(OpKind::Abs, Data::AwayFromZero);
  unaryCase(OpKind::Pow, Data::Positive, {{"exponent", 2.5}}, " 2.5");
  unaryCase(OpKind::Pow, Data::Normal, {{"exponent", 3.0}}, " 3 of any sign");
  unaryCase(OpKind::Pow, Data::Normal, {{"exponent", 1.0}}, " 1");
  unaryCase(OpKind::Scale, Data::Normal, {{"factor", -2.5}});
  unaryCase(OpKind::AddScalar, Data::Normal, {{"value", 0.75}});

  // ---- binary, with broadcasting both ways
  auto binaryCase = [&](OpKind kind, Shape a, Shape b, Data bData, std::string label) {
    add(std::string(spelling(kind)) + " " + label, kind, {{"a", a}, {"b", b, bData}},
        [kind](Builder &bld, const std::vector<Value *> &in) {
          return bld.value(kind, {in[0], in[1]});
        });
  };
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
    Data bData = k == OpKind::Div ? Data::AwayFromZero : Data::Normal;
    binaryCase(k, {2, 3}, {2, 3}, bData, "same shape");
    binaryCase(k, {2, 3, 4}, {3, 1}, bData, "[2,3,4] by [3,1]");
    binaryCase(k, {4}, {2, 3, 1}, bData, "[4] by [2,3,1]");
  }

  // ---- matmul: every transpose combination, with batch broadcasting
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Shape a = ta ? Shape{2, 1, 4, 3} : Shape{2, 1, 3, 4}; // op(a) [2, 1, 3, 4]
      Shape b = tb ? Shape{3, 5, 4} : Shape{3, 4, 5};       // op(b) [3, 4, 5]
      add(std::string("matmul ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0") + " batch [2,1] by [3]",
          OpKind::MatMul, {{"a", a}, {"b", b}},
          [ta, tb](Builder &bld, const std::vector<Value *> &in) { return bld.matmul(in[0], in[1], ta, tb); });
    }
  add("matmul [b,s,h] @ [h,f]", OpKind::MatMul, {{"x", {2, 3, 4}}, {"w", {4, 5}}},
      [](Builder &b, const std::vector<Value *> &in) { return b.matmul(in[0], in[1]); });

  // ---- reductions
  auto reduceCase = [&](OpKind kind, Ints dims, bool keepdim) {
    std::string label = std::string(spelling(kind)) + " dims [";
    for (size_t i = 0; i < dims.size(); ++i) label += (i ? "," : "") + std::to_string(dims[i]);
    label += keepdim ? "] keepdim" : "]";
    add(label, kind, {{"x", {2, 3, 4}}}, [kind, dims, keepdim](Builder &b, const std::vector<Value *> &in) {
      return b.value(kind, {in[0]}, {{"dims", dims}, {"keepdim", keepdim}});
    });
  };
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax}) {
    reduceCase(k, {1}, false);
    reduceCase(k, {0, -1}, true);
    reduceCase(k, {0, 1, 2}, false);
  }
  add("sum_to [2,3,4] -> [3,1]", OpKind::SumTo, {{"x", {2, 3, 4}}}, [](Builder &b, const std::vector<Value *> &in) {
    return b.sumTo(in[0], {3, 1});
  });
  add("broadcast_to [3,1] -> [2,3,4]", OpKind::BroadcastTo, {{"x", {3, 1}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return b.value(OpKind::BroadcastTo, {in[0]}, {{"shape", Shape{2, 3, 4}}});
      });

  // ---- softmax, norms, attention pieces
  for (int64_t dim : {-1, 0}) {
    add("softmax dim " + std::to_string(dim), OpKind::Softmax, {{"x", {2, 3, 4}}},
        [dim](Builder &b, const std::vector<Value *> &in) {
          return unary(b, OpKind::Softmax, in[0], {{"dim", dim}});
        });
    add("log_softmax dim " + std::to_string(dim), OpKind::LogSoftmax, {{"x", {2, 3, 4}}},
        [dim](Builder &b, const std::vector<Value *> &in) {
          return unary(b, OpKind::LogSoftmax, in[0], {{"dim", dim}});
        });
  }
  add("layernorm", OpKind::LayerNorm, {{"x", {2, 3, 5}}, {"w", {5}}, {"b", {5}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return b.value(OpKind::LayerNorm, {in[0], in[1], in[2]}, {{"eps", 1e-5}});
      });
  add("rmsnorm", OpKind::RmsNorm, {{"x", {3, 6}}, {"w", {6}}}, [](Builder &b, const std::vector<Value *> &in) {
    return b.value(OpKind::RmsNorm, {in[0], in[1]}, {{"eps", 1e-6}});
  });
  // -inf entries would make the loss infinite: the mask is checked under the softmax it feeds.
  add("causal_mask under softmax", OpKind::CausalMask, {{"scores", {2, 4, 4}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return unary(b, OpKind::Softmax, unary(b, OpKind::CausalMask, in[0]), {{"dim", int64_t(-1)}});
      });
  add("causal_mask rectangular [3,5]", OpKind::CausalMask, {{"scores", {3, 5}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return unary(b, OpKind::Softmax, unary(b, OpKind::CausalMask, in[0]), {{"dim", int64_t(-1)}});
      });
  add("causal_mask_grad", OpKind::MaskGrad, {{"x", {2, 3, 3}}},
      [](Builder &b, const std::vector<Value *> &in) { return unary(b, OpKind::MaskGrad, in[0]); });
  add("rope", OpKind::Rope, {{"x", {2, 3, 2, 4}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Rope, in[0], {{"theta", 10000.0}});
  });
  add("rope inverse theta 10", OpKind::Rope, {{"x", {1, 4, 2, 6}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Rope, in[0], {{"theta", 10.0}, {"inverse", true}});
  });
  add("dropout", OpKind::Dropout, {{"x", {4, 6}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Dropout, in[0], {{"p", 0.3}, {"seed", int64_t(7)}, {"stream", int64_t(2)}});
  });

  // flash_attention: the gradient rule (flash_attention_grad) against
  // finite differences of the output; lse has no reader, so no gradient.
  for (bool causal : {false, true})
    for (double p : {0.0, 0.3}) {
      AttrMap attrs = {{"scale", 0.6}, {"causal", causal}};
      if (p > 0) {
        attrs["p"] = p;
        attrs["seed"] = int64_t(4);
        attrs["stream"] = int64_t(1);
      }
      Shape k = causal ? Shape{2, 4, 3} : Shape{2, 5, 3};
      add(std::string("flash_attention") + (causal ? " causal" : "") + (p > 0 ? " dropout" : ""),
          OpKind::FlashAttention, {{"q", {2, 4, 3}}, {"k", k}, {"v", causal ? Shape{2, 4, 2} : Shape{2, 5, 2}}},
          [attrs](Builder &b, const std::vector<Value *> &in) {
            return b.create(OpKind::FlashAttention, {in[0], in[1], in[2]}, attrs)->results[0];
          });
    }

  // ---- data movement
  add("reshape", OpKind::Reshape, {{"x", {2, 3, 4}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Reshape, in[0], {{"shape", Shape{4, -1}}});
  });
  add("transpose [2,0,1]", OpKind::Transpose, {{"x", {2, 3, 4}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Transpose, in[0], {{"perm", Ints{2, 0, 1}}});
  });
  add("slice dim 1 [1,3)", OpKind::Slice, {{"x", {2, 4, 3}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Slice, in[0], {{"dim", int64_t(1)}, {"start", int64_t(1)}, {"end", int64_t(3)}});
  });
  add("pad dim -1", OpKind::Pad, {{"x", {2, 3}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Pad, in[0], {{"dim", int64_t(-1)}, {"before", int64_t(1)}, {"after", int64_t(2)}});
  });
  add("concat of 3 dim 1", OpKind::Concat, {{"a", {2, 1, 3}}, {"b", {2, 2, 3}}, {"c", {2, 3, 3}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return b.value(OpKind::Concat, {in[0], in[1], in[2]}, {{"dim", int64_t(1)}});
      });
  add("concat of one value twice", OpKind::Concat, {{"a", {2, 3}}}, [](Builder &b, const std::vector<Value *> &in) {
    return b.value(OpKind::Concat, {in[0], in[0]}, {{"dim", int64_t(0)}});
  });
  add("cast f64 -> f64", OpKind::Cast, {{"x", {2, 3}}}, [](Builder &b, const std::vector<Value *> &in) {
    return unary(b, OpKind::Cast, in[0], {{"dtype", std::string("f64")}});
  });
  add("repeat_interleave", OpKind::RepeatInterleave, {{"x", {2, 3, 2}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return unary(b, OpKind::RepeatInterleave, in[0], {{"repeats", int64_t(3)}, {"dim", int64_t(1)}});
      });

  // ---- embedding and loss (indices are inputs without a gradient)
  add("gather with repeated indices", OpKind::Gather, {{"table", {5, 3}}, {"idx", {2, 4}, Data::Indices, 5}},
      [](Builder &b, const std::vector<Value *> &in) {
        return b.value(OpKind::Gather, {in[0], in[1]});
      });
  add("scatter_add", OpKind::ScatterAdd, {{"idx", {2, 3}, Data::Indices, 4}, {"dy", {2, 3, 2}}},
      [](Builder &b, const std::vector<Value *> &in) {
        return b.value(OpKind::ScatterAdd, {in[0], in[1]}, {{"rows", int64_t(4)}});
      });
  add("cross_entropy", OpKind::CrossEntropy, {{"logits", {2, 3, 5}}, {"targets", {2, 3}, Data::Indices, 5}},
      [](Builder &b, const std::vector<Value *> &in) {
        return b.value(OpKind::CrossEntropy, {in[0], in[1]});
      });

  // ---- a composition: pre-norm causal attention with rotary positions and a
  // residual, so values fan out and rules meet each other's results.
  add("attention block", OpKind::Add,
      {{"x", {1, 3, 4}}, {"w_ln", {4}}, {"b_ln", {4}}, {"wq", {4, 4}}, {"wk", {4, 4}}, {"wv", {4, 4}}},
      [](Builder &b, const std::vector<Value *> &in) {
        Value *h = b.value(OpKind::LayerNorm, {in[0], in[1], in[2]}, {{"eps", 1e-5}});
        auto heads = [&](Value *w) { return b.reshape(b.matmul(h, w), {1, 3, 2, 2}); }; // [b, s, n, d]
        Value *q = unary(b, OpKind::Rope, heads(in[3])), *k = unary(b, OpKind::Rope, heads(in[4]));
        Value *v = heads(in[5]);
        Ints toHeads{0, 2, 1, 3};
        q = unary(b, OpKind::Transpose, q, {{"perm", toHeads}});
        k = unary(b, OpKind::Transpose, k, {{"perm", toHeads}});
        v = unary(b, OpKind::Transpose, v, {{"perm", toHeads}});
        Value *scores = unary(b, OpKind::CausalMask, b.scale(b.matmul(q, k, false, true), 1 / std::sqrt(2.0)));
        Value *ctx = b.matmul(unary(b, OpKind::Softmax, scores, {{"dim", int64_t(-1)}}), v);
        ctx = b.reshape(unary(b, OpKind::Transpose, ctx, {{"perm", toHeads}}), {1, 3, 4});
        return b.add(in[0], unary(b, OpKind::Gelu, ctx));
      });
  cases.back().tableKey = "(attention block)";
  return cases;
}

//===----------------------------------------------------------------------===//
// The check
//===----------------------------------------------------------------------===//

struct CheckResult {
  double maxError = 0; // over the case's differentiable inputs
  std::set<OpKind> rulesApplied;
};

/// The worst observed error per op kind, printed at the end for the record.
std::map<std::string, double> &errorTable() {
  static std::map<std::string, double> table;
  return table;
}

CheckResult checkGradients(const GradCase &c) {
  CheckResult result;
  OpModule t;
  uint64_t seed = 0; // from the case's name: stable whatever the order of the cases
  for (char ch : c.name) seed = seed * 131 + uint64_t(static_cast<unsigned char>(ch));
  Random rng(seed);
  std::vector<Value *> inputs;
  std::vector<bool> differentiable;
  for (const InputSpec &spec : c.inputs) {
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    std::vector<double> values;
    DType dtype = DType::F64;
    switch (spec.data) {
    case Data::Normal:
      values = rng.normal(n);
      break;
    case Data::Positive:
      values = rng.uniform(n, 0.5, 2.0);
      break;
    case Data::AwayFromZero:
      values = rng.awayFromZero(n);
      break;
    case Data::Indices:
      values = rng.integers(n, 0, spec.indexLimit), dtype = DType::I64;
      break;
    }
    inputs.push_back(t.input(spec.name, spec.shape, values, dtype));
    differentiable.push_back(dtype == DType::F64);
  }
  Value *y = c.body(t.b, inputs);
  Value *r = t.input("r", y->type.shape, rng.normal(y->type.numel()));
  Ints all;
  for (size_t d = 0; d < y->type.rank(); ++d) all.push_back(int64_t(d));
  Value *loss = t.b.value(OpKind::ReduceSum, {t.b.mul(y, r)}, {{"dims", all}}, "loss");
  size_t forwardOps = t.m.ops.size();

  std::map<const Value *, Value *> grads = reverseSweep(t.m, loss, forwardOps, result.rulesApplied);
  t.m.outputs = {{"loss", loss}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = grads.find(inputs[i]);
    if (differentiable[i] && it != grads.end()) t.m.outputs.push_back({"d_" + inputs[i]->name, it->second});
  }
  llvm::Expected<TensorMap> analytic = interpret(t.m, t.feeds);
  if (!analytic) {
    ADD_FAILURE() << c.name << ": " << llvm::toString(analytic.takeError());
    return result;
  }

  const double eps = 1e-6;
  auto lossAt = [&](const TensorMap &feeds) {
    llvm::Expected<TensorMap> out = interpret(t.m, feeds);
    if (!out) {
      ADD_FAILURE() << llvm::toString(out.takeError());
      return 0.0;
    }
    return out->at("loss").data[0];
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!differentiable[i]) continue;
    const std::string &name = inputs[i]->name;
    auto dIt = analytic->find("d_" + name);
    std::vector<double> dA =
        dIt == analytic->end() ? std::vector<double>(t.feeds[name].data.size(), 0.0) : dIt->second.data;
    std::vector<double> dN(dA.size());
    TensorMap feeds = t.feeds;
    for (size_t k = 0; k < dN.size(); ++k) {
      double x0 = feeds[name].data[k];
      feeds[name].data[k] = x0 + eps;
      double up = lossAt(feeds);
      feeds[name].data[k] = x0 - eps;
      double down = lossAt(feeds);
      feeds[name].data[k] = x0;
      dN[k] = (up - down) / (2 * eps);
    }
    double scale = 0, diff = 0;
    for (size_t k = 0; k < dN.size(); ++k) {
      scale = std::max(scale, std::fabs(dN[k]));
      diff = std::max(diff, std::fabs(dA[k] - dN[k]));
    }
    EXPECT_GT(scale, 1e-3) << c.name << ": the gradient of %" << name << " vanishes, which checks nothing";
    double err = diff / std::max(scale, 1e-12);
    EXPECT_LT(err, 1e-6) << c.name << ": gradient of %" << name;
    result.maxError = std::max(result.maxError, err);
  }
  return result;
}

class GradCheckTest : public ::testing::TestWithParam<GradCase> {
protected:
  static void TearDownTestSuite() {
    std::string table;
    for (const auto &[name, err] : errorTable()) {
      char line[96];
      std::snprintf(line, sizeof line, "  %-18s %.1e\n", name.c_str(), err);
      table += line;
    }
    if (!table.empty()) std::printf("[ gradcheck ] max relative error per op kind:\n%s", table.c_str());
  }
};

TEST_P(GradCheckTest, MatchesCentralDifferences) {
  const GradCase &c = GetParam();
  CheckResult r = checkGradients(c);
  EXPECT_TRUE(r.rulesApplied.count(c.kind)) << c.name << ": the rule of '" << spelling(c.kind) << "' never ran";
  double &worst = errorTable()[c.tableKey.empty() ? spelling(c.kind) : c.tableKey];
  worst = std::max(worst, r.maxError);
}

std::string caseName(const ::testing::TestParamInfo<GradCase> &info) {
  std::string name;
  for (char ch : info.param.name) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return std::to_string(info.index) + "_" + name;
}

INSTANTIATE_TEST_SUITE_P(EveryRule, GradCheckTest, ::testing::ValuesIn(gradCases()), caseName);

TEST(GradCheckCoverageTest, EveryOpWithAGradientRuleHasACase) {
  std::set<OpKind> covered;
  for (const GradCase &c : gradCases()) covered.insert(c.kind);
  for (unsigned i = 0; i < unsigned(OpKind::NumOps); ++i) {
    if (!opDef(OpKind(i)).grad) continue;
    EXPECT_TRUE(covered.count(OpKind(i))) << "no gradient check for " << spelling(OpKind(i));
  }
}

} // namespace
