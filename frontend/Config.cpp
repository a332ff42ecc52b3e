//===- frontend/Config.cpp - interpreting train, cluster and parallel -----===//
//
// The settings are read in two steps. First every block and the --set options
// aimed at it become one Entry per key: unknown and duplicate keys are reported
// here, and an override replaces the setting of its key (or adds one argument
// to it). Then the block files read each entry's value. What needs two blocks
// (dp from the cluster size, the cluster size from the mesh, micro-batches from
// the batch) is settled last, in interpretConfig.
//
//===----------------------------------------------------------------------===//

#include "frontend/Config.h"
#include "frontend/ConfigReader.h"
#include "support/Plural.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cassert>
#include <algorithm>
#include <cmath>

using namespace planc;
using namespace planc::config;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

int64_t ParallelConfig::meshSize() const {
  // Saturates instead of overflowing: a mesh that large is reported as too big.
  int64_t product = 1;
  for (int64_t s : axisSize) {
    if (s <= 0) return 0;
    if (__builtin_mul_overflow(product, s, &product)) return std::numeric_limits<int64_t>::max();
  }
  return product;
}

bool PlanConfig::isInvalid(llvm::StringRef setting) const {
  return llvm::is_contained(invalidSettings, setting);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

namespace {

const char *binarySpelling(ast::BinaryExpr::Op op) {
  using Op = ast::BinaryExpr::Op;
  switch (op) {
  case Op::Add: return "+";
  case Op::Sub: return "-";
  case Op::Mul: return "*";
  case Op::Div: return "/";
  case Op::Mod: return "%";
  case Op::MatMul: return "@";
  case Op::Eq: return "==";
  case Op::Ne: return "!=";
  case Op::Lt: return "<";
  case Op::Le: return "<=";
  case Op::Gt: return ">";
  case Op::Ge: return ">=";
  case Op::And: return "and";
  case Op::Or: return "or";
  }
  return "?";
}

/// The value as the user would write it (the AST keeps no source text).
std::string spell(const ast::Expr *e) {
  if (!e) return "";
  auto join = [](const std::vector<ast::ExprPtr> &elements) {
    std::string out;
    for (const auto &x : elements) out += (out.empty() ? "" : ", ") + spell(x.get());
    return out;
  };
  switch (e->getKind()) {
  case ast::Expr::Kind::Number: return llvm::cast<ast::NumberExpr>(e)->text;
  case ast::Expr::Kind::Quantity: return llvm::cast<ast::QuantityExpr>(e)->text;
  case ast::Expr::Kind::String: return "\"" + llvm::cast<ast::StringExpr>(e)->value + "\"";
  case ast::Expr::Kind::Bool: return llvm::cast<ast::BoolExpr>(e)->value ? "true" : "false";
  case ast::Expr::Kind::Name: return llvm::cast<ast::NameExpr>(e)->name;
  case ast::Expr::Kind::Call: {
    auto *c = llvm::cast<ast::CallExpr>(e);
    std::string out = c->callee + "(";
    for (size_t i = 0; i < c->args.size(); ++i) {
      if (i) out += ", ";
      if (!c->args[i].name.empty()) out += c->args[i].name + " = ";
      out += spell(c->args[i].value.get());
    }
    return out + ")";
  }
  case ast::Expr::Kind::Member: {
    auto *m = llvm::cast<ast::MemberExpr>(e);
    return spell(m->base.get()) + "." + m->member;
  }
  case ast::Expr::Kind::Named: {
    auto *n = llvm::cast<ast::NamedExpr>(e);
    return spell(n->inner.get()) + " as " + n->name;
  }
  case ast::Expr::Kind::Annotated: {
    auto *a = llvm::cast<ast::AnnotatedExpr>(e);
    return spell(a->inner.get()) + " @" + a->annotation.name;
  }
  case ast::Expr::Kind::Unary: {
    auto *u = llvm::cast<ast::UnaryExpr>(e);
    return (u->op == ast::UnaryExpr::Op::Neg ? "-" : "not ") + spell(u->operand.get());
  }
  case ast::Expr::Kind::Binary: {
    auto *b = llvm::cast<ast::BinaryExpr>(e);
    return spell(b->lhs.get()) + " " + binarySpelling(b->op) + " " + spell(b->rhs.get());
  }
  case ast::Expr::Kind::Tuple: return "(" + join(llvm::cast<ast::TupleExpr>(e)->elements) + ")";
  case ast::Expr::Kind::List: return "[" + join(llvm::cast<ast::ListExpr>(e)->elements) + "]";
  }
  return "?";
}

/// A constant number: an integer while every step is an exact integer operation.
struct Num {
  bool isInt = true;
  int64_t i = 0;
  double f = 0;
};

/// Folds literals with + - * / % and unary minus, so `global_batch = 64 * 8`
/// works. None if the value is not a constant number; `overflow` is set when an
/// integer step overflowed (reported by the caller).
std::optional<Num> evalNumber(const ast::Expr *e, bool &overflow) {
  if (!e) return std::nullopt;
  if (auto *n = llvm::dyn_cast<ast::NumberExpr>(e)) {
    if (n->isInteger && !n->overflow) return Num{true, n->intValue, double(n->intValue)};
    return Num{false, 0, n->floatValue};
  }
  if (auto *u = llvm::dyn_cast<ast::UnaryExpr>(e)) {
    if (u->op != ast::UnaryExpr::Op::Neg) return std::nullopt;
    auto x = evalNumber(u->operand.get(), overflow);
    if (!x) return std::nullopt;
    if (x->isInt && x->i == std::numeric_limits<int64_t>::min()) overflow = true;
    return x->isInt ? Num{true, -x->i, -x->f} : Num{false, 0, -x->f};
  }
  auto *b = llvm::dyn_cast<ast::BinaryExpr>(e);
  if (!b) return std::nullopt;
  auto l = evalNumber(b->lhs.get(), overflow), r = evalNumber(b->rhs.get(), overflow);
  if (!l || !r) return std::nullopt;
  using Op = ast::BinaryExpr::Op;
  if (l->isInt && r->isInt) {
    int64_t out = 0;
    switch (b->op) {
    case Op::Add: overflow |= __builtin_add_overflow(l->i, r->i, &out); return Num{true, out, double(out)};
    case Op::Sub: overflow |= __builtin_sub_overflow(l->i, r->i, &out); return Num{true, out, double(out)};
    case Op::Mul: overflow |= __builtin_mul_overflow(l->i, r->i, &out); return Num{true, out, double(out)};
    case Op::Mod:
      if (r->i == 0) return std::nullopt;
      if (r->i == -1) return Num{true, 0, 0}; // INT64_MIN % -1 traps
      return Num{true, l->i % r->i, double(l->i % r->i)};
    case Op::Div:
      if (r->i == 0) return std::nullopt;
      if (r->i != -1 && l->i % r->i == 0) return Num{true, l->i / r->i, double(l->i / r->i)};
      break; // inexact (or INT64_MIN / -1): a float
    default: return std::nullopt;
    }
  }
  // A product or quotient of non-zero numbers that comes out zero (or
  // subnormal) has underflowed, as one past the largest double overflowed:
  // both are reported, never a silent 0 or inf.
  auto checked = [&](double x) {
    if (!std::isfinite(x) || (x != 0 && std::fabs(x) < std::numeric_limits<double>::min()) ||
        (x == 0 && l->f != 0 && (b->op == Op::Mul ? r->f != 0 : b->op == Op::Div)))
      overflow = true;
    return Num{false, 0, x};
  };
  switch (b->op) {
  case Op::Add: return Num{false, 0, l->f + r->f};
  case Op::Sub: return Num{false, 0, l->f - r->f};
  case Op::Mul: return checked(l->f * r->f);
  case Op::Div:
    if (r->f == 0) return std::nullopt;
    return checked(l->f / r->f);
  default: return std::nullopt;
  }
}

/// `80 GiB`, `8 * 200 Gb/s`, `1.6 TB/s / 8`, in base units.
std::optional<Quantity> evalQuantity(const ast::Expr *e) {
  if (!e) return std::nullopt;
  if (auto *q = llvm::dyn_cast<ast::QuantityExpr>(e)) return toBaseUnits(*q);
  if (auto *u = llvm::dyn_cast<ast::UnaryExpr>(e)) {
    auto x = u->op == ast::UnaryExpr::Op::Neg ? evalQuantity(u->operand.get()) : std::nullopt;
    if (x) x->value = -x->value;
    return x;
  }
  auto *b = llvm::dyn_cast<ast::BinaryExpr>(e);
  if (!b) return std::nullopt;
  bool overflow = false;
  using Op = ast::BinaryExpr::Op;
  if (b->op == Op::Mul) {
    auto lq = evalQuantity(b->lhs.get()), rq = evalQuantity(b->rhs.get());
    auto ln = evalNumber(b->lhs.get(), overflow), rn = evalNumber(b->rhs.get(), overflow);
    if (ln && rq) return Quantity{ln->f * rq->value, rq->dim};
    if (lq && rn) return Quantity{lq->value * rn->f, lq->dim};
  } else if (b->op == Op::Div) {
    auto lq = evalQuantity(b->lhs.get());
    auto rn = evalNumber(b->rhs.get(), overflow);
    if (lq && rn && rn->f != 0) return Quantity{lq->value / rn->f, lq->dim};
  }
  return std::nullopt;
}

SMRange exprRange(const ast::Expr *e) { return e ? e->range : SMRange(); }

std::vector<std::string> toStrings(ArrayRef<StringRef> names) {
  std::vector<std::string> out;
  for (StringRef n : names) out.push_back(n.str());
  return out;
}

} // namespace

std::string config::joinChoices(ArrayRef<StringRef> choices) {
  return llvm::join(choices.begin(), choices.end(), ", ");
}

const KeySpec &config::keySpec(ArrayRef<KeySpec> keys, StringRef key) {
  for (const KeySpec &k : keys)
    if (key == k.name) return k;
  assert(false && "a key missing from its block's table");
  return keys.front();
}

SMRange config::fieldRange(const Field &f) {
  if (f.nameRange.isValid() && f.value && f.value->range.isValid() && !f.fromOverride)
    return SMRange(f.nameRange.Start, f.value->range.End);
  return f.range.isValid() ? f.range : exprRange(f.value);
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

std::string Reader::describe(const ast::Expr *e) {
  std::string text = spell(e);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  bool isNumber = llvm::isa_and_nonnull<ast::NumberExpr>(e) ||
                  (llvm::isa_and_nonnull<ast::UnaryExpr>(e) &&
                   llvm::isa<ast::NumberExpr>(llvm::cast<ast::UnaryExpr>(e)->operand.get()));
  return isNumber ? text : "'" + text + "'";
}

void Reader::suggest(DiagBuilder &diag, StringRef name, SMRange range, ArrayRef<StringRef> candidates) {
  std::string best = closestMatch(name, toStrings(candidates));
  if (best.empty()) return;
  diag.note(DiagID::note_did_you_mean, range, {best});
  if (range.isValid()) diag.fixit(range, best);
}

void Reader::formError(StringRef key, SMRange at, StringRef example) {
  diags.report(DiagID::err_setting_form, at) << key << example;
}

const ast::Expr *Reader::scalar(const Entry &e, const KeySpec &spec) {
  for (const ArgOverride &o : e.argOverrides)
    diags.report(DiagID::err_unknown_named_arg, o.nameRange) << e.key << o.name;
  if (!e.setting) return nullptr;
  const ast::Setting &s = *e.setting;
  if ((s.form == ast::Setting::Form::Assign || s.form == ast::Setting::Form::Word) && s.value)
    return s.value.get();
  formError(e.key, e.keyRange, spec.example);
  return nullptr;
}

namespace {
Field fieldOf(const ast::Arg &a) {
  Field f{a.name, a.nameRange, a.value.get(), exprRange(a.value.get()), false};
  f.range = fieldRange(f);
  return f;
}

/// `name` or `name(args)`: fills the head and fields; false for any other value.
bool takeHead(const ast::Expr &value, Structured &s) {
  if (auto *n = llvm::dyn_cast<ast::NameExpr>(&value)) {
    s.head = n->name;
    s.headRange = n->range;
    return true;
  }
  if (auto *c = llvm::dyn_cast<ast::CallExpr>(&value)) {
    s.head = c->callee;
    s.headRange = c->calleeRange;
    for (const ast::Arg &a : c->args) s.fields.push_back(fieldOf(a));
    return true;
  }
  return false;
}
} // namespace

Structured Reader::structured(const ast::Expr &value) {
  Structured s;
  s.written = true;
  if (!takeHead(value, s)) s.scalar = &value;
  return s;
}

std::optional<Structured> Reader::structured(const Entry &e, const KeySpec &spec) {
  Structured s;
  s.overrides = e.argOverrides;
  if (!e.setting) return s;
  s.written = true;
  const ast::Setting &st = *e.setting;
  switch (st.form) {
  case ast::Setting::Form::Assign:
  case ast::Setting::Form::Word:
    if (st.value && !takeHead(*st.value, s)) s.scalar = st.value.get();
    return s;
  case ast::Setting::Form::Args:
    for (const ast::Arg &a : st.args) s.fields.push_back(fieldOf(a));
    return s;
  case ast::Setting::Form::Nested:
    if (st.value && !takeHead(*st.value, s)) {
      formError(e.key, e.keyRange, spec.example);
      return std::nullopt;
    }
    for (const ast::SettingPtr &n : st.nested) {
      if ((n->form != ast::Setting::Form::Assign && n->form != ast::Setting::Form::Word) || !n->value) {
        formError(n->key, n->keyRange, "'" + n->key + " = value'");
        continue;
      }
      s.fields.push_back(Field{n->key, n->keyRange, n->value.get(), n->range, false});
    }
    return s;
  }
  return s;
}

Bound Reader::bind(StringRef owner, const Structured &s, ArrayRef<StringRef> params,
                   unsigned maxPositional, StringRef example,
                   llvm::function_ref<void(StringRef, SMRange)> onUnknown) {
  auto unknown = [&](StringRef name, SMRange range) {
    if (onUnknown) return onUnknown(name, range);
    auto d = diags.report(DiagID::err_unknown_named_arg, range);
    d << owner << name;
    suggest(d, name, range, params);
    d.note(DiagID::note_valid_choices, SMRange(), {joinChoices(params)});
  };
  Bound out;
  unsigned positionals = llvm::count_if(s.fields, [](const Field &f) { return f.name.empty(); });
  unsigned nextPositional = 0;
  bool sawNamed = false, reportedExtra = false;
  for (const Field &f : s.fields) {
    std::string name = f.name;
    if (name.empty()) {
      if (sawNamed) {
        diags.report(DiagID::err_positional_after_named, exprRange(f.value));
        continue;
      }
      if (nextPositional >= std::min<size_t>(maxPositional, params.size())) {
        if (!reportedExtra) {
          if (maxPositional == 0)
            diags.report(DiagID::err_setting_positional, exprRange(f.value)) << owner << example;
          else
            diags.report(DiagID::err_too_many_args, exprRange(f.value))
                << owner << counted(int64_t(std::min<size_t>(maxPositional, params.size())), "argument") << positionals;
        }
        reportedExtra = true;
        continue;
      }
      name = params[nextPositional++].str();
    } else {
      sawNamed = true;
      if (!llvm::is_contained(params, StringRef(name))) {
        unknown(name, f.nameRange);
        continue;
      }
    }
    auto [it, inserted] = out.emplace(name, f);
    if (!inserted) {
      diags.report(DiagID::err_duplicate_arg, f.name.empty() ? exprRange(f.value) : f.nameRange)
              .note(DiagID::note_previous_definition, it->second.range)
          << name;
      continue;
    }
    it->second.name = name;
  }
  for (const ArgOverride &o : s.overrides) {
    if (!llvm::is_contained(params, StringRef(o.name))) {
      unknown(o.name, o.nameRange);
      continue;
    }
    out[o.name] = Field{o.name, o.nameRange, o.value, o.range, true};
  }
  return out;
}

void Reader::readInteger(const Block &block, const KeySpec &spec, int64_t &value,
                         SettingSource &source, int64_t min, int64_t max) {
  with(block, spec.name, [&](const Entry &e) {
    if (const ast::Expr *x = scalar(e, spec))
      if (auto v = integer(x, spec.name, min, max)) {
        value = *v;
        source.range = e.source;
      }
  });
}

void Reader::readBool(const Block &block, const KeySpec &spec, bool &value, SettingSource &source) {
  with(block, spec.name, [&](const Entry &e) {
    if (const ast::Expr *x = scalar(e, spec))
      if (auto v = boolean(x, spec.name)) {
        value = *v;
        source.range = e.source;
      }
  });
}

std::optional<int64_t> Reader::integer(const ast::Expr *e, StringRef key, int64_t min, int64_t max) {
  bool overflow = false;
  auto v = evalNumber(e, overflow);
  if (overflow) {
    diags.report(DiagID::err_dim_overflow, exprRange(e)) << ("'" + key + "'").str();
    return std::nullopt;
  }
  // `steps = 1e5` is an integer too, as long as the double holds it exactly.
  if (v && !v->isInt && std::nearbyint(v->f) == v->f && std::fabs(v->f) <= 9007199254740992.0)
    v = Num{true, int64_t(v->f), v->f};
  if (!v || !v->isInt || v->i < min || v->i > max) {
    // Name the bound that matters: a small range whole, else the side crossed.
    std::string what = max - min <= 1024 || (v && v->isInt && v->i > max)
                           ? "an integer from " + std::to_string(min) + " to " + std::to_string(max)
                       : min == 1 ? "a positive integer"
                       : min == 0 ? "a non-negative integer"
                                  : "an integer of at least " + std::to_string(min);
    diags.report(DiagID::err_setting_value, exprRange(e)) << key << what << describe(e);
    return std::nullopt;
  }
  return v->i;
}

std::optional<double> Reader::number(const ast::Expr *e, StringRef key, const NumberRange &range) {
  bool overflow = false;
  auto v = evalNumber(e, overflow);
  double x = v ? v->f : 0;
  bool ok = v && !overflow && std::isfinite(x) && (range.minOpen ? x > range.min : x >= range.min) &&
            (range.maxOpen ? x < range.max : x <= range.max);
  if (!ok) {
    diags.report(DiagID::err_setting_value, exprRange(e)) << key << range.what << describe(e);
    return std::nullopt;
  }
  // The training step computes these numbers in fp32: a non-zero one it
  // cannot hold would silently become 0 (lr = 1e-40) or inf there.
  double magnitude = std::fabs(x);
  if (x != 0 && (magnitude < double(std::numeric_limits<float>::min()) ||
                 magnitude > double(std::numeric_limits<float>::max()))) {
    diags.report(DiagID::err_setting_value, exprRange(e))
        << key << "0 or a magnitude from 1.2e-38 to 3.4e38 (fp32, the type the training step computes it in)"
        << describe(e);
    return std::nullopt;
  }
  return x;
}

std::optional<bool> Reader::boolean(const ast::Expr *e, StringRef key) {
  if (auto *b = llvm::dyn_cast_or_null<ast::BoolExpr>(e)) return b->value;
  diags.report(DiagID::err_setting_value, exprRange(e)) << key << "true or false" << describe(e);
  return std::nullopt;
}

std::optional<std::string> Reader::string(const ast::Expr *e, StringRef key) {
  auto *s = llvm::dyn_cast_or_null<ast::StringExpr>(e);
  if (s && !s->value.empty()) return s->value;
  diags.report(DiagID::err_setting_value, exprRange(e)) << key << "a non-empty string" << describe(e);
  return std::nullopt;
}

std::optional<double> Reader::quantity(const ast::Expr *e, StringRef key, UnitDim dim, bool allowZero) {
  auto q = evalQuantity(e);
  if (!q || q->dim != dim) {
    diags.report(DiagID::err_unknown_unit, exprRange(e)) << key << describeDimension(dim) << spell(e);
    return std::nullopt;
  }
  if (!std::isfinite(q->value) || q->value < 0 || (!allowZero && q->value == 0)) {
    static const char *const positive[] = {"a positive size", "a positive bandwidth",
                                           "a positive FLOP rate", "a positive time"};
    diags.report(DiagID::err_setting_value, exprRange(e))
        << key << (allowZero ? "not negative" : positive[unsigned(dim)]) << describe(e);
    return std::nullopt;
  }
  return q->value;
}

std::optional<unsigned> Reader::choice(StringRef what, StringRef value, SMRange range,
                                       ArrayRef<StringRef> choices) {
  for (unsigned i = 0; i < choices.size(); ++i)
    if (choices[i] == value) return i;
  auto d = diags.report(DiagID::err_unknown_choice, range);
  d << what << value;
  suggest(d, value, range, choices);
  d.note(DiagID::note_valid_choices, SMRange(), {joinChoices(choices)});
  return std::nullopt;
}

std::optional<unsigned> Reader::choiceOf(const ast::Expr *e, StringRef key, StringRef what,
                                         ArrayRef<StringRef> choices) {
  if (auto *n = llvm::dyn_cast_or_null<ast::NameExpr>(e)) return choice(what, n->name, n->range, choices);
  diags.report(DiagID::err_setting_value, exprRange(e))
      << key << ("one of " + joinChoices(choices)) << describe(e);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Blocks and overrides
//===----------------------------------------------------------------------===//

namespace {

/// The range of component `index` (0: block, 1: key, 2: argument) of the
/// option text an override was parsed from, so a misspelt key is underlined in
/// `<--set parallel.zeroo=2>` itself.
SMRange pathRange(const SetOverride &o, unsigned index) {
  const ast::Setting *s = o.setting.get();
  if (!s) return {};
  if (!s->range.isValid()) return s->keyRange;
  StringRef text(s->range.Start.getPointer(), s->range.End.getPointer() - s->range.Start.getPointer());
  llvm::SmallVector<StringRef, 4> parts;
  text.split('=').first.trim().split(parts, '.');
  if (index >= parts.size()) return s->keyRange;
  return SMRange(llvm::SMLoc::getFromPointer(parts[index].begin()),
                 llvm::SMLoc::getFromPointer(parts[index].end()));
}

SMRange optionRange(const SetOverride &o) {
  if (!o.setting) return {};
  return o.setting->range.isValid() ? o.setting->range : exprRange(o.setting->value.get());
}

/// A setting's range without the `,` that may separate it from the next one.
SMRange withoutSeparator(SMRange r) {
  if (!r.isValid()) return r;
  StringRef text(r.Start.getPointer(), r.End.getPointer() - r.Start.getPointer());
  StringRef trimmed = text.rtrim(" \t\r\n,");
  if (trimmed.empty()) return r;
  return SMRange(r.Start, llvm::SMLoc::getFromPointer(trimmed.end()));
}

void reportUnknownKey(DiagnosticEngine &diags, StringRef key, SMRange range,
                      ast::ConfigBlock::Kind kind, ArrayRef<KeySpec> keys) {
  llvm::SmallVector<StringRef, 16> names;
  for (const KeySpec &k : keys) names.push_back(k.name);
  auto d = diags.report(DiagID::err_unknown_setting, range);
  d << key << ast::spelling(kind);
  Reader::suggest(d, key, range, names);
}

bool isKey(ArrayRef<KeySpec> keys, StringRef key) {
  return llvm::any_of(keys, [&](const KeySpec &k) { return key == k.name; });
}

Block collect(ast::ConfigBlock::Kind kind, const ast::ConfigBlock *file,
              ArrayRef<SetOverride *> overrides, ArrayRef<KeySpec> keys, DiagnosticEngine &diags) {
  Block block;
  block.kind = kind;
  if (file) {
    for (const ast::SettingPtr &s : file->settings) {
      if (!isKey(keys, s->key)) {
        reportUnknownKey(diags, s->key, s->keyRange, kind, keys);
        continue;
      }
      if (const Entry *previous = block.find(s->key)) {
        diags.report(DiagID::err_duplicate_setting, s->keyRange)
                .note(DiagID::note_previous_definition, previous->keyRange)
            << s->key;
        continue; // the first one stays, as it would for a redefinition
      }
      block.entries.push_back(Entry{s->key, s.get(), {}, s->keyRange, withoutSeparator(s->range)});
    }
  }
  // Options apply in command-line order: a later one wins.
  for (const SetOverride *o : overrides) {
    if (!o || !o->setting || o->block != kind || o->path.empty() || o->path.size() > 2) continue;
    const std::string &key = o->path[0];
    SMRange keyRange = pathRange(*o, 1);
    if (!isKey(keys, key)) {
      reportUnknownKey(diags, key, keyRange, kind, keys);
      continue;
    }
    Entry *entry = nullptr;
    for (Entry &e : block.entries)
      if (e.key == key) entry = &e;
    if (!entry) {
      block.entries.push_back(Entry{key, nullptr, {}, keyRange, {}});
      entry = &block.entries.back();
    }
    entry->source = optionRange(*o);
    if (o->path.size() == 1) {
      // The whole setting is replaced, whatever form the file wrote it in, and
      // so are earlier options' arguments for it.
      entry->setting = o->setting.get();
      entry->keyRange = keyRange;
      entry->argOverrides.clear();
    } else {
      entry->argOverrides.push_back(
          ArgOverride{o->path[1], pathRange(*o, 2), o->setting->value.get(), optionRange(*o)});
    }
  }
  return block;
}

/// dp when the mesh does not say: the devices left over by the other axes.
void resolveMesh(PlanConfig &config, const ClusterFacts &facts) {
  ParallelConfig &p = config.parallel;
  ClusterConfig &c = config.cluster;
  int64_t others = 1; // product of the axes other than dp, saturated
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    if (MeshAxis(i) != MeshAxis::DP && __builtin_mul_overflow(others, p.axisSize[i], &others))
      others = kMaxInt;
  int64_t &dp = p.axisSize[unsigned(MeshAxis::DP)];
  // Without nodes or gpus_per_node the plan describes one machine with as many
  // devices as the mesh asks for, so `mesh(tp = 2)` alone is a 2-device plan.
  if (!facts.sizesWritten) {
    int64_t devices = 1;
    if (__builtin_mul_overflow(others, dp ? dp : 1, &devices)) devices = kMaxInt;
    c.nodes = 1;
    c.gpusPerNode = devices;
  }
  // Megatron's rule: dp is what the other axes leave of the world. When they do
  // not divide it, dp stays 1 and checkConfig reports the mesh size.
  if (dp == 0) {
    int64_t world = 0;
    if (__builtin_mul_overflow(c.nodes, c.gpusPerNode, &world)) world = kMaxInt;
    dp = world % others == 0 ? world / others : 1;
  }
}

} // namespace

PlanConfig planc::interpretConfig(const ast::ConfigBlock *train, const ast::ConfigBlock *cluster,
                                  const ast::ConfigBlock *parallel,
                                  llvm::ArrayRef<SetOverride *> overrides, DiagnosticEngine &diags) {
  PlanConfig config;
  config.hasTrain = train != nullptr;
  config.hasCluster = cluster != nullptr;
  config.hasParallel = parallel != nullptr;
  for (const SetOverride *o : overrides)
    if (o && o->setting && (o->path.empty() || o->path.size() > 2))
      diags.report(DiagID::err_set_syntax, optionRange(*o)) << o->text;

  Reader reader(diags);
  using Kind = ast::ConfigBlock::Kind;
  interpretTrain(collect(Kind::Train, train, overrides, trainKeys(), diags), config.train, reader);
  ClusterFacts facts = interpretCluster(collect(Kind::Cluster, cluster, overrides, clusterKeys(), diags),
                                        config.cluster, reader);
  interpretParallel(collect(Kind::Parallel, parallel, overrides, parallelKeys(), diags), config.parallel,
                    reader);

  resolveMesh(config, facts);
  // inter_node is written as the node's total (`8 * 200 Gb/s`: eight NICs);
  // the cost model wants each GPU's share.
  if (facts.interNodeWritten && config.cluster.gpusPerNode > 0)
    config.cluster.interNode.bandwidth /= double(config.cluster.gpusPerNode);

  ParallelConfig &p = config.parallel;
  TrainConfig &t = config.train;
  int64_t perStep = 0; // one micro-batch on every data-parallel rank
  if (__builtin_mul_overflow(t.microBatch, p.size(MeshAxis::DP), &perStep)) perStep = 0;
  // Without global_batch a step is one micro-batch per data-parallel rank (or
  // the pipeline's micro_batches of them), so no batch setting is needed to
  // try a mesh; written, it decides the number of micro-batches.
  if (t.globalBatchSource.isDefault() && perStep > 0 &&
      __builtin_mul_overflow(perStep, std::max<int64_t>(p.microBatches, 1), &t.globalBatch))
    t.globalBatch = perStep;
  if (p.microBatches == 0 && perStep > 0 && t.globalBatch % perStep == 0)
    p.microBatches = t.globalBatch / perStep;
  if (!p.schedule && p.size(MeshAxis::PP) > 1) p.schedule = defaults::kSchedule;

  config.invalidSettings = std::move(reader.invalid);
  return config;
}
