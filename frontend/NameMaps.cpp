//===- frontend/NameMaps.cpp - `names` declarations against the model ----===//
//
// Each declaration is read once into rules (patterns and steps), then the one
// the plan follows is matched against every parameter path. Patterns are
// tiny (literal text, `{name}` placeholders of digits, `*` segments and
// `[optional]` text), so a hand-written backtracking matcher is all it takes.
//
//===----------------------------------------------------------------------===//

#include "frontend/NameMaps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Casting.h"

#include <cstdio>
#include <set>

using namespace planc;
using llvm::SMRange;
using llvm::StringRef;

namespace {

/// One piece of a pattern.
struct Piece {
  enum class Kind { Text, Placeholder, Star, Optional };
  Kind kind;
  std::string text; // Text, Optional: the text; Placeholder: its name
};
using Pattern = std::vector<Piece>;

bool isNameChar(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

/// Reads a pattern; an empty `why` on success. File patterns may have
/// optional text, parameter patterns `*` segments.
Pattern parsePattern(StringRef text, bool file, std::string &why) {
  Pattern out;
  auto addText = [&](char c) {
    if (out.empty() || out.back().kind != Piece::Kind::Text) out.push_back({Piece::Kind::Text, ""});
    out.back().text += c;
  };
  if (text.empty()) why = "it is empty";
  // Tensor names are short; the limits keep matching and spelling bounded.
  if (text.size() > 512) why = "it is longer than 512 characters";
  for (size_t i = 0; i < text.size() && why.empty(); ++i) {
    char c = text[i];
    if (c == '{') {
      size_t end = text.find('}', i);
      StringRef name = end == StringRef::npos ? StringRef() : text.slice(i + 1, end);
      if (name.empty() || !llvm::all_of(name, isNameChar)) {
        why = "a placeholder is '{' a name '}', as in {i}";
        break;
      }
      if (!out.empty() && out.back().kind != Piece::Kind::Text) {
        why = "a placeholder must follow text";
        break;
      }
      out.push_back({Piece::Kind::Placeholder, name.str()});
      i = end;
    } else if (c == '*' && !file) {
      if (!out.empty() && out.back().kind != Piece::Kind::Text) {
        why = "'*' must follow text";
        break;
      }
      out.push_back({Piece::Kind::Star, ""});
    } else if (c == '[' && file) {
      size_t end = text.find(']', i);
      StringRef inner = end == StringRef::npos ? StringRef() : text.slice(i + 1, end);
      if (inner.empty() || inner.find_first_of("{}[*") != StringRef::npos) {
        why = "optional text is '[' plain text ']', as in [transformer.]";
        break;
      }
      out.push_back({Piece::Kind::Optional, inner.str()});
      i = end;
      if (llvm::count_if(out, [](const Piece &x) { return x.kind == Piece::Kind::Optional; }) > 4)
        why = "a pattern has at most 4 optional texts";
    } else if (c == '}' || c == ']' || c == '[' || c == '*' || std::isspace((unsigned char)c)) {
      why = std::string("unexpected '") + c + "'";
    } else {
      addText(c);
    }
  }
  return out;
}

std::set<std::string> placeholders(const Pattern &p) {
  std::set<std::string> names;
  for (const Piece &piece : p)
    if (piece.kind == Piece::Kind::Placeholder) names.insert(piece.text);
  return names;
}

/// Whether `path` from `pos` on matches pieces [i, end); placeholders bind
/// digits (a name bound twice must match the same digits).
bool matchFrom(const Pattern &p, size_t i, StringRef path, size_t pos, std::map<std::string, std::string> &bound) {
  if (i == p.size()) return pos == path.size();
  const Piece &piece = p[i];
  switch (piece.kind) {
  case Piece::Kind::Text:
  case Piece::Kind::Optional:
    return path.substr(pos).startswith(piece.text) && matchFrom(p, i + 1, path, pos + piece.text.size(), bound);
  case Piece::Kind::Placeholder: {
    if (auto it = bound.find(piece.text); it != bound.end())
      return path.substr(pos).startswith(it->second) && matchFrom(p, i + 1, path, pos + it->second.size(), bound);
    for (size_t end = pos + 1; end <= path.size() && std::isdigit((unsigned char)path[end - 1]); ++end) {
      bound[piece.text] = path.slice(pos, end).str();
      if (matchFrom(p, i + 1, path, end, bound)) return true;
    }
    bound.erase(piece.text);
    return false;
  }
  case Piece::Kind::Star:
    for (size_t end = pos + 1; end <= path.size() && path[end - 1] != '.'; ++end)
      if (matchFrom(p, i + 1, path, end, bound)) return true;
    return false;
  }
  return false;
}

/// Every spelling of a file pattern with its placeholders filled: without
/// optional text first (the name written), then with each combination.
std::vector<std::string> spellings(const Pattern &p, const std::map<std::string, std::string> &bound) {
  size_t optional = llvm::count_if(p, [](const Piece &x) { return x.kind == Piece::Kind::Optional; });
  std::vector<std::string> out;
  for (size_t mask = 0; mask < (size_t(1) << optional); ++mask) {
    std::string s;
    size_t k = 0;
    for (const Piece &piece : p) {
      if (piece.kind == Piece::Kind::Placeholder) s += bound.at(piece.text);
      else if (piece.kind == Piece::Kind::Optional) s += (mask >> k++) & 1 ? piece.text : "";
      else s += piece.text;
    }
    out.push_back(s);
  }
  return out;
}

/// A rule read from the declaration.
struct Rule {
  enum class Kind { Param, Tied, Ignored };
  Kind kind = Kind::Param;
  Pattern file, param;
  std::string fileText; // the pattern as written (tied() names rules by it)
  std::string sameAs;   // Tied
  std::vector<NameMapStep> steps; // Param: plan -> file; Columns without factors yet
  SMRange range, fileRange;
};

const char *kTargetForms = "a parameter pattern (a string), transpose(...), columns(..., order), crop(...), "
                           "tied(\"file name\") or ignored";

/// The value of a rule: a parameter pattern and its steps; false after an error.
bool readTarget(const ast::Expr *e, Rule &rule, std::vector<NameMapStep> &steps, DiagnosticEngine &diags,
                bool top) {
  if (!e) return false;
  if (auto *s = llvm::dyn_cast<ast::StringExpr>(e)) {
    std::string why;
    rule.param = parsePattern(s->value, /*file=*/false, why);
    if (!why.empty()) {
      diags.report(DiagID::err_names_pattern, s->range) << s->value << why;
      return false;
    }
    return true;
  }
  if (auto *n = llvm::dyn_cast<ast::NameExpr>(e); n && top && n->name == "ignored") {
    rule.kind = Rule::Kind::Ignored;
    return true;
  }
  auto *call = llvm::dyn_cast<ast::CallExpr>(e);
  if (!call || call->args.empty() || !call->args[0].name.empty()) {
    diags.report(DiagID::err_names_target, e->range) << kTargetForms;
    return false;
  }
  if (call->callee == "tied" && top) {
    auto *s = llvm::dyn_cast<ast::StringExpr>(call->args[0].value.get());
    if (!s || call->args.size() != 1) {
      diags.report(DiagID::err_names_target, e->range) << "tied(\"file name\"), naming the file tensor it equals";
      return false;
    }
    rule.kind = Rule::Kind::Tied;
    rule.sameAs = s->value;
    return true;
  }
  NameMapStep step;
  if (call->callee == "transpose" && call->args.size() == 1) {
    step.kind = NameMapStep::Kind::Transpose;
  } else if (call->callee == "crop" && call->args.size() == 1) {
    if (!top) {
      diags.report(DiagID::err_names_target, e->range) << "crop(...) outermost: it says how many rows the file has";
      return false;
    }
    step.kind = NameMapStep::Kind::Crop;
  } else if (call->callee == "columns" && call->args.size() >= 3) {
    step.kind = NameMapStep::Kind::Columns;
    std::set<int64_t> seen;
    for (size_t i = 1; i < call->args.size(); ++i) {
      auto *num = llvm::dyn_cast<ast::NumberExpr>(call->args[i].value.get());
      int64_t k = num && num->isInteger ? num->intValue : -1;
      if (k < 0 || k >= int64_t(call->args.size() - 1) || !seen.insert(k).second || !call->args[i].name.empty()) {
        diags.report(DiagID::err_names_target, call->args[i].value->range)
            << "columns(p, order...) with the order a permutation of 0 to " + std::to_string(call->args.size() - 2);
        return false;
      }
      step.order.push_back(k);
    }
  } else {
    diags.report(DiagID::err_names_target, e->range) << kTargetForms;
    return false;
  }
  if (!readTarget(call->args[0].value.get(), rule, steps, diags, /*top=*/false)) return false;
  steps.push_back(step); // the inner value's steps come first
  return true;
}

/// The rules and settings of one declaration; false after an error.
bool readDecl(const ast::NamesDecl &decl, std::vector<Rule> &rules, ResolvedNameMap *into, DiagnosticEngine &diags) {
  bool ok = true;
  for (const ast::NameRule &r : decl.rules) {
    Rule rule;
    rule.range = r.range;
    rule.fileRange = r.fileRange;
    rule.fileText = r.file;
    std::string why;
    rule.file = parsePattern(r.file, /*file=*/true, why);
    if (!why.empty()) {
      diags.report(DiagID::err_names_pattern, r.fileRange) << r.file << why;
      ok = false;
      continue;
    }
    if (!readTarget(r.target.get(), rule, rule.steps, diags, /*top=*/true)) {
      ok = false;
      continue;
    }
    if (rule.kind == Rule::Kind::Param) {
      std::set<std::string> inFile = placeholders(rule.file), inParam = placeholders(rule.param);
      for (const std::string &n : inFile)
        if (!inParam.count(n)) {
          diags.report(DiagID::err_names_placeholders, r.range) << n << "the file's name" << "the parameter's";
          ok = false;
        }
      for (const std::string &n : inParam)
        if (!inFile.count(n)) {
          diags.report(DiagID::err_names_placeholders, r.range) << n << "the parameter's name" << "the file's";
          ok = false;
        }
    }
    rules.push_back(std::move(rule));
  }
  for (const Rule &t : rules) {
    if (t.kind != Rule::Kind::Tied) continue;
    std::string why;
    std::set<std::string> inSame = placeholders(parsePattern(t.sameAs, /*file=*/true, why)), inFile = placeholders(t.file);
    for (const std::string &n : inSame)
      if (!inFile.count(n)) {
        diags.report(DiagID::err_names_placeholders, t.range) << n << "the tied name" << "the file's";
        ok = false;
      }
  }
  for (const Rule &t : rules)
    if (t.kind == Rule::Kind::Tied &&
        !llvm::any_of(rules, [&](const Rule &r) { return r.kind == Rule::Kind::Param && r.fileText == t.sameAs; })) {
      diags.report(DiagID::err_names_tied_unknown, t.range) << t.sameAs << decl.name;
      ok = false;
    }
  for (const ast::SettingPtr &s : decl.settings) {
    const ast::Expr *v = s->form == ast::Setting::Form::Assign ? s->value.get() : nullptr;
    auto *str = llvm::dyn_cast_or_null<ast::StringExpr>(v);
    if (s->key == "config") {
      if (!str || !llvm::is_contained(nameMapFamilies(), str->value)) {
        std::string list;
        for (const std::string &f : nameMapFamilies()) list += (list.empty() ? "\"" : ", \"") + f + "\"";
        diags.report(DiagID::err_names_config, v ? v->range : s->range) << (str ? str->value : "") << list;
        ok = false;
      } else if (into) {
        into->family = str->value;
      }
      continue;
    }
    // Any other `key = value` is a config.json field written as given.
    std::string json;
    if (auto *num = llvm::dyn_cast_or_null<ast::NumberExpr>(v)) {
      // JSON's spelling: 500000.0 stays a float, 8 an integer.
      char text[40];
      std::snprintf(text, sizeof text, "%.17g", num->floatValue);
      json = num->isInteger && !num->overflow ? std::to_string(num->intValue) : text;
      if (!num->isInteger && json.find_first_of(".en") == std::string::npos) json += ".0";
    }
    else if (auto *b = llvm::dyn_cast_or_null<ast::BoolExpr>(v)) json = b->value ? "true" : "false";
    else if (str) {
      json = "\"";
      for (char c : str->value) json += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
      json += "\"";
    }
    if (json.empty()) {
      diags.report(DiagID::err_names_setting, s->range)
          << s->key << "a setting is `config = \"llama\"` or a config.json field `key = number, string or bool`";
      ok = false;
    } else if (into) {
      into->configOverrides[s->key] = json;
    }
  }
  return ok;
}

/// The map the plan follows, matched against every parameter.
bool resolve(const ast::NamesDecl &decl, const std::vector<Rule> &rules, const ModelInfo &model,
             DiagnosticEngine &diags, ResolvedNameMap &out) {
  bool ok = true;
  std::map<std::string, std::set<std::string>> values; // placeholder -> every value bound
  std::map<std::string, const NamedParam *> byFile;
  for (const ParamInfo &p : model.params) {
    const Rule *found = nullptr;
    std::map<std::string, std::string> bound;
    for (const Rule &r : rules) {
      if (r.kind != Rule::Kind::Param) continue;
      std::map<std::string, std::string> b;
      if (!matchFrom(r.param, 0, p.path, 0, b)) continue;
      if (found) {
        diags.report(DiagID::err_names_two_rules, r.range).note(DiagID::note_names_other_rule, found->range)
            << p.path << decl.name;
        ok = false;
        break;
      }
      found = &r;
      bound = b;
    }
    if (!found) continue;
    NamedParam named;
    named.param = p.path;
    named.files = spellings(found->file, bound);
    named.rule = found->range;
    for (NameMapStep step : found->steps) {
      std::string why;
      if (step.kind == NameMapStep::Kind::Transpose && p.shape.size() != 2)
        why = "transpose needs a matrix";
      if (step.kind == NameMapStep::Kind::Crop && p.shape.empty()) why = "crop needs rows";
      if (step.kind == NameMapStep::Kind::Columns) {
        if (p.columns.size() != step.order.size())
          why = p.columns.empty() ? "it declares no @columns factors"
                                  : "it declares " + std::to_string(p.columns.size()) + " @columns factors, the rule orders " +
                                        std::to_string(step.order.size());
        step.factors = p.columns;
      }
      if (!why.empty()) {
        diags.report(DiagID::err_names_transform, found->range)
            << (step.kind == NameMapStep::Kind::Transpose ? "transpose"
                : step.kind == NameMapStep::Kind::Crop    ? "crop"
                                                          : "columns")
            << p.path << formatShape(p.shape) << why;
        ok = false;
      }
      named.steps.push_back(step);
    }
    for (const auto &[k, v] : bound) values[k].insert(v);
    out.params.push_back(std::move(named));
  }
  for (const NamedParam &n : out.params) {
    auto [it, fresh] = byFile.emplace(n.files.front(), &n);
    if (!fresh) {
      diags.report(DiagID::err_names_two_params, n.rule) << n.files.front() << it->second->param << n.param;
      ok = false;
    }
  }
  for (const Rule &r : rules) {
    if (r.kind == Rule::Kind::Param) continue;
    // Placeholders take the values the parameters bound: the model's layers.
    std::vector<std::map<std::string, std::string>> fills{{}};
    for (const std::string &name : placeholders(r.file)) {
      std::vector<std::map<std::string, std::string>> next;
      for (const auto &f : fills)
        for (const std::string &v : values[name]) {
          auto g = f;
          g[name] = v;
          next.push_back(g);
        }
      fills = std::move(next);
      if (fills.size() > (1u << 16)) {
        diags.report(DiagID::err_names_pattern, r.fileRange) << r.fileText << "it would name more than 65536 tensors";
        return false;
      }
    }
    for (const auto &f : fills) {
      std::vector<std::string> names = spellings(r.file, f);
      if (r.kind == Rule::Kind::Ignored) {
        out.ignored.insert(out.ignored.end(), names.begin(), names.end());
      } else if (!byFile.count(names.front())) {
        std::string why;
        out.tied.push_back({names, spellings(parsePattern(r.sameAs, /*file=*/true, why), f).front()});
      }
    }
  }
  return ok;
}

} // namespace

const std::vector<std::string> &planc::nameMapFamilies() {
  static const std::vector<std::string> families{"llama", "qwen2", "gpt2", "gpt_neox"};
  return families;
}

bool planc::checkNameMaps(const Program &program, const PlanConfig &config, const ModelInfo &model,
                          DiagnosticEngine &diags, ResolvedNameMap &resolved) {
  bool ok = true;
  const std::string &chosen = config.train.names;
  for (const auto &[name, decl] : program.nameMaps) {
    std::vector<Rule> rules;
    bool follows = name == chosen;
    if (!readDecl(*decl, rules, follows ? &resolved : nullptr, diags)) {
      ok = false;
      continue;
    }
    if (!follows) continue;
    resolved.name = name;
    resolved.setting = config.train.namesSource.range;
    ok &= resolve(*decl, rules, model, diags, resolved);
  }
  if (!chosen.empty() && !program.nameMaps.count(chosen)) {
    std::vector<std::string> declared;
    for (const auto &[name, decl] : program.nameMaps) declared.push_back(name);
    auto d = diags.report(DiagID::err_names_unknown_map, config.train.namesRange);
    d << chosen;
    if (!declared.empty()) d.suggest(chosen, declared, config.train.namesRange);
    else if (StringRef(chosen).startswith("hf_")) d.note(DiagID::note_names_import_std, config.train.namesRange);
    ok = false;
  }
  return ok;
}
