//===- compiler/HuggingFaceConfig.cpp - a name map for the executable ----===//
//
// Each family's config.json lists the fields its transformers config class
// reads (LlamaConfig, Qwen2Config, GPT2Config, GPTNeoXConfig), each from a
// parameter the map names by its file name: the embedding's shape is the
// vocabulary and the width, the first layer's q projection's @columns the
// heads, and so on. A fact the model does not have is an error that names
// it, so a config that would load another model is never written.
//
//===----------------------------------------------------------------------===//

#include "compiler/HuggingFaceConfig.h"

#include "support/Error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

using namespace planc;

namespace {

/// What the config of one plan is made from.
class Facts {
public:
  Facts(const ResolvedNameMap &map, const ModelInfo &model, const ir::Module &forward)
      : map(map), model(model), forward(forward) {}

  /// The plan's parameter named `file` in the file (its canonical name).
  const ParamInfo *param(const std::string &file) const {
    for (const NamedParam &n : map.params)
      if (n.files.front() == file)
        for (const ParamInfo &p : model.params)
          if (p.path == n.param) return &p;
    return nullptr;
  }
  llvm::Expected<const ParamInfo *> need(const std::string &file, const std::string &why) const {
    if (const ParamInfo *p = param(file)) return p;
    return fail("a parameter named '" + file + "' (" + why + ")");
  }
  /// Dim `i` of the parameter named `file`.
  llvm::Expected<int64_t> dim(const std::string &file, size_t i, const std::string &why) const {
    auto p = need(file, why);
    if (!p) return p.takeError();
    if (i >= (*p)->shape.size()) return fail("'" + (*p)->path + "' to have a dim " + std::to_string(i));
    return (*p)->shape[i];
  }
  /// Factor `i` of the @columns of the parameter named `file`.
  llvm::Expected<int64_t> factor(const std::string &file, size_t i, const std::string &why) const {
    auto p = need(file, why);
    if (!p) return p.takeError();
    if (i >= (*p)->columns.size())
      return fail(why + ": '" + (*p)->path + "' declares no @columns factors (as std.llama's and std.gpt's attention do)");
    return (*p)->columns[i];
  }
  /// Layers: the distinct indices N of file names starting with `prefix`N.
  int64_t layers(const std::string &prefix) const {
    std::set<std::string> seen;
    for (const NamedParam &n : map.params) {
      const std::string &f = n.files.front();
      if (f.compare(0, prefix.size(), prefix) != 0) continue;
      size_t end = prefix.size();
      while (end < f.size() && std::isdigit((unsigned char)f[end])) ++end;
      if (end > prefix.size()) seen.insert(f.substr(prefix.size(), end - prefix.size()));
    }
    return int64_t(seen.size());
  }
  /// The eps of the norm that reads the parameter named `file`.
  llvm::Expected<double> normEps(const std::string &file) const {
    auto p = need(file, "a norm's weight");
    if (!p) return p.takeError();
    for (const auto &op : forward.ops)
      if ((op->kind == ir::OpKind::RmsNorm || op->kind == ir::OpKind::LayerNorm) && op->operands.size() > 1 &&
          op->operands[1]->path == (*p)->path && op->has("eps"))
        return op->getFloat("eps");
    return fail("a norm that reads '" + (*p)->path + "'");
  }
  /// The model's rope: its base and how many dims it turns (one value for
  /// every rope of the model, or an error).
  llvm::Expected<std::pair<double, int64_t>> rope() const {
    std::set<std::pair<double, int64_t>> seen;
    for (const auto &op : forward.ops)
      if (op->kind == ir::OpKind::Rope && !op->operands.front()->type.shape.empty())
        seen.insert({op->getFloat("theta", 10000.0), op->operands.front()->type.shape.back()});
    if (seen.size() != 1)
      return fail(seen.empty() ? std::string("a rope") : std::string("one rope base and width (it has several)"));
    return *seen.begin();
  }
  /// The context: the last dim of the tokens input.
  llvm::Expected<int64_t> context() const {
    for (const InputInfo &in : model.inputs)
      if (in.name == "tokens" && in.shape.size() >= 2) return in.shape.back();
    return fail("an input 'tokens' of [batch, seq]");
  }
  /// The dropout probability of the model (the first dropout's), 0 without.
  double dropout() const {
    for (const auto &op : forward.ops)
      if (op->kind == ir::OpKind::Dropout) return op->getFloat("p");
    return 0.0;
  }
  /// transformers' torch_dtype of the named parameters.
  std::string dtype() const {
    for (const NamedParam &n : map.params)
      for (const ParamInfo &p : model.params)
        if (p.path == n.param) return p.dtype == "bf16" ? "bfloat16" : p.dtype == "f16" ? "float16" : "float32";
    return "float32";
  }
  bool has(const std::string &file) const { return param(file) != nullptr; }

  llvm::Error fail(const std::string &what) const {
    return makeError("the name map '" + map.name + "' writes a config.json of family \"" + map.family +
                     "\", which needs " + what);
  }

private:
  const ResolvedNameMap &map;
  const ModelInfo &model;
  const ir::Module &forward;
};

/// Unwraps a list of Expected values into `out`, or returns the first error.
#define PLANC_TAKE(var, expr)                                                                                          \
  auto var##_or = (expr);                                                                                              \
  if (!var##_or) return var##_or.takeError();                                                                          \
  auto var = *var##_or

/// Llama and Qwen2 (their configs differ in the class and the biases).
llvm::Expected<nlohmann::json> llamaConfig(const Facts &f, bool qwen2) {
  const std::string q = "model.layers.0.self_attn.q_proj.weight", k = "model.layers.0.self_attn.k_proj.weight";
  PLANC_TAKE(vocab, f.dim("model.embed_tokens.weight", 0, "the embedding"));
  PLANC_TAKE(hidden, f.dim("model.embed_tokens.weight", 1, "the embedding"));
  PLANC_TAKE(ffn, f.dim("model.layers.0.mlp.gate_proj.weight", 1, "the feed-forward's width"));
  PLANC_TAKE(heads, f.factor(q, 0, "the query heads"));
  PLANC_TAKE(headDim, f.factor(q, 1, "the head dim"));
  PLANC_TAKE(kvHeads, f.factor(k, 0, "the key/value heads"));
  PLANC_TAKE(eps, f.normEps("model.norm.weight"));
  PLANC_TAKE(rope, f.rope());
  PLANC_TAKE(context, f.context());
  const bool bias = f.has("model.layers.0.self_attn.q_proj.bias");
  if (qwen2 && !bias) return f.fail("the q, k and v biases Qwen2 has (llama_attention(..., bias = true))");
  if (rope.second != headDim) return f.fail("rope to turn the whole head (" + std::to_string(headDim) + " dims)");
  nlohmann::json c = {{"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
                      {"model_type", qwen2 ? "qwen2" : "llama"},
                      {"vocab_size", vocab},
                      {"hidden_size", hidden},
                      {"intermediate_size", ffn},
                      {"num_hidden_layers", f.layers("model.layers.")},
                      {"num_attention_heads", heads},
                      {"num_key_value_heads", kvHeads},
                      {"head_dim", headDim},
                      {"hidden_act", "silu"},
                      {"max_position_embeddings", context},
                      {"rms_norm_eps", eps},
                      {"rope_theta", rope.first},
                      {"rope_scaling", nullptr},
                      {"tie_word_embeddings", !f.has("lm_head.weight")},
                      {"attention_dropout", 0.0},
                      {"initializer_range", 0.02},
                      {"use_cache", true},
                      {"torch_dtype", f.dtype()}};
  if (qwen2) {
    c["use_sliding_window"] = false;
    c["max_window_layers"] = f.layers("model.layers.");
  } else {
    c["attention_bias"] = bias;
    c["mlp_bias"] = false;
  }
  return c;
}

llvm::Expected<nlohmann::json> gpt2Config(const Facts &f) {
  const std::string attn = "h.0.attn.c_attn.weight";
  PLANC_TAKE(vocab, f.dim("wte.weight", 0, "the token embedding"));
  PLANC_TAKE(hidden, f.dim("wte.weight", 1, "the token embedding"));
  PLANC_TAKE(positions, f.dim("wpe.weight", 0, "the position table"));
  PLANC_TAKE(ffn, f.dim("h.0.mlp.c_fc.weight", 1, "the feed-forward's width"));
  PLANC_TAKE(heads, f.factor(attn, 0, "the heads"));
  PLANC_TAKE(eps, f.normEps("ln_f.weight"));
  const double p = f.dropout();
  return nlohmann::json{{"architectures", {"GPT2LMHeadModel"}},
                        {"model_type", "gpt2"},
                        {"vocab_size", vocab},
                        {"n_positions", positions},
                        {"n_ctx", positions},
                        {"n_embd", hidden},
                        {"n_layer", f.layers("h.")},
                        {"n_head", heads},
                        {"n_inner", ffn},
                        {"activation_function", "gelu_new"},
                        {"layer_norm_epsilon", eps},
                        {"resid_pdrop", p},
                        {"embd_pdrop", p},
                        {"attn_pdrop", p},
                        {"initializer_range", 0.02},
                        {"tie_word_embeddings", true},
                        {"use_cache", true},
                        {"torch_dtype", f.dtype()}};
}

llvm::Expected<nlohmann::json> neoxConfig(const Facts &f) {
  const std::string qkv = "gpt_neox.layers.0.attention.query_key_value.weight";
  PLANC_TAKE(vocab, f.dim("gpt_neox.embed_in.weight", 0, "the embedding"));
  PLANC_TAKE(hidden, f.dim("gpt_neox.embed_in.weight", 1, "the embedding"));
  PLANC_TAKE(ffn, f.dim("gpt_neox.layers.0.mlp.dense_h_to_4h.weight", 1, "the feed-forward's width"));
  PLANC_TAKE(heads, f.factor(qkv, 0, "the heads"));
  PLANC_TAKE(headDim, f.factor(qkv, 2, "the head dim"));
  PLANC_TAKE(eps, f.normEps("gpt_neox.final_layer_norm.weight"));
  PLANC_TAKE(rope, f.rope());
  PLANC_TAKE(context, f.context());
  return nlohmann::json{{"architectures", {"GPTNeoXForCausalLM"}},
                        {"model_type", "gpt_neox"},
                        {"vocab_size", vocab},
                        {"hidden_size", hidden},
                        {"intermediate_size", ffn},
                        {"num_hidden_layers", f.layers("gpt_neox.layers.")},
                        {"num_attention_heads", heads},
                        {"hidden_act", "gelu_new"},
                        {"rotary_pct", double(rope.second) / double(headDim)},
                        {"rotary_emb_base", rope.first},
                        {"max_position_embeddings", context},
                        {"layer_norm_eps", eps},
                        {"use_parallel_residual", true},
                        {"attention_bias", true},
                        {"attention_dropout", 0.0},
                        {"hidden_dropout", 0.0},
                        {"tie_word_embeddings", !f.has("embed_out.weight")},
                        {"initializer_range", 0.02},
                        {"use_cache", true},
                        {"torch_dtype", f.dtype()}};
}

#undef PLANC_TAKE

} // namespace

bool planc::nameMapReadsIR(Compilation &c) { return !c.getNameMap().empty() && !c.getNameMap().family.empty(); }

llvm::Expected<runtime::NameMap> planc::executableNameMap(Compilation &c, const ir::Module *forward) {
  const ResolvedNameMap &resolved = c.getNameMap();
  runtime::NameMap out;
  if (resolved.empty()) return out;
  out.name = resolved.name;
  for (const NamedParam &n : resolved.params) {
    runtime::NamedTensor t{n.param, n.files, {}};
    for (const NameMapStep &s : n.steps)
      t.steps.push_back({s.kind == NameMapStep::Kind::Transpose ? runtime::NameStep::Kind::Transpose
                         : s.kind == NameMapStep::Kind::Columns ? runtime::NameStep::Kind::Columns
                                                                : runtime::NameStep::Kind::Crop,
                         s.factors, s.order});
    out.tensors.push_back(std::move(t));
  }
  for (const TiedName &t : resolved.tied) out.tied.push_back({t.files, t.sameAs});
  out.ignored = resolved.ignored;
  if (resolved.family.empty()) return out;

  if (!forward) return makeError("internal error: the name map '" + resolved.name + "' needs the forward IR");
  Facts facts(resolved, c.getModel(), *forward);
  llvm::Expected<nlohmann::json> config = resolved.family == "gpt2"       ? gpt2Config(facts)
                                          : resolved.family == "gpt_neox" ? neoxConfig(facts)
                                                                          : llamaConfig(facts, resolved.family == "qwen2");
  if (!config) return config.takeError();
  for (const auto &[key, value] : resolved.configOverrides) (*config)[key] = nlohmann::json::parse(value);
  out.config = config->dump(2) + "\n";
  return out;
}

void planc::printNameMap(Compilation &c, const runtime::NameMap &names, llvm::raw_ostream &os) {
  const runtime::NameMap *map = &names;
  if (map->empty()) {
    os << "plan '" << c.getModel().name << "' follows no name map (train.names): --init-from reads its own names\n";
    return;
  }
  size_t width = 0;
  for (const runtime::NamedTensor &t : map->tensors) width = std::max(width, t.param.size());
  os << "name map '" << map->name << "': " << map->tensors.size() << " parameters of plan '" << c.getModel().name
     << "'\n";
  for (const runtime::NamedTensor &t : map->tensors) {
    os << "  " << t.param;
    os.indent(unsigned(width - t.param.size())) << "  <-  " << t.files.front();
    for (const runtime::NameStep &s : t.steps) {
      if (s.kind == runtime::NameStep::Kind::Transpose) os << "  transpose";
      else if (s.kind == runtime::NameStep::Kind::Crop) os << "  crop";
      else {
        os << "  columns [";
        for (size_t i = 0; i < s.order.size(); ++i) os << (i ? ", " : "") << s.factors[size_t(s.order[i])];
        os << "] of [";
        for (size_t i = 0; i < s.factors.size(); ++i) os << (i ? ", " : "") << s.factors[i];
        os << "]";
      }
    }
    for (size_t i = 1; i < t.files.size(); ++i) os << "  (or " << t.files[i] << ")";
    os << "\n";
  }
  for (const runtime::TiedTensor &t : map->tied)
    os << "tied: " << t.files.front() << " must equal " << t.sameAs << "\n";
  if (!map->ignored.empty()) {
    os << "ignored:";
    for (const std::string &n : map->ignored) os << " " << n;
    os << "\n";
  }
  if (map->config.empty()) os << "no config.json (the map declares no config family)\n";
  else os << "config.json:\n" << map->config;
}
