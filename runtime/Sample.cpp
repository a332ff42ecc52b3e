//===- runtime/Sample.cpp - generating text with a compiled plan ----------===//

#include "runtime/Sample.h"
#include "runtime/Arena.h"
#include "runtime/ElementBits.h"
#include "runtime/Philox.h"
#include "runtime/ParamInit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

using namespace planc::runtime;

namespace {

/// The prompt's tokens: its bytes for a byte-level model, else ids.
Status promptTokens(const ExecInference &inf, const std::string &prompt, std::vector<int64_t> &tokens) {
  if (inf.vocab == 256) {
    for (unsigned char c : prompt) tokens.push_back(c);
  } else {
    std::istringstream in(prompt);
    std::string word;
    while (in >> word) {
      char *end = nullptr;
      long long id = std::strtoll(word.c_str(), &end, 10);
      if (*end || id < 0 || id >= inf.vocab)
        return errorStatus("--prompt: '" + word + "' is not a token id in [0, " + std::to_string(inf.vocab) +
                           ") (this model's vocabulary is not bytes: its prompt is token ids)");
      tokens.push_back(id);
    }
  }
  if (tokens.empty()) return errorStatus("--prompt is empty");
  return Status::success();
}

} // namespace

Status planc::runtime::sampleTokens(const ExecutableModel &m, const uint8_t *trained, const SampleOptions &o,
                                    std::FILE *out) {
  const ExecInference &inf = m.inference;
  if (!inf.run) return errorStatus("--sample: plan '" + m.plan + "' was built without an inference step");
  Arena arena(inf.arenaBytes);
  uint8_t *mem = arena.data();
  std::map<std::string, const ExecParam *> byName;
  for (const ExecParam &p : m.params) byName[p.name] = &p;
  for (const ExecInference::Param &p : inf.params) {
    auto it = byName.find(p.name);
    if (it == byName.end()) return errorStatus("--sample: the inference step's parameter '" + p.name + "' is none of the training step's");
    const ExecParam &t = *it->second;
    if (t.type == p.type) {
      std::memcpy(mem + p.offset, trained + t.offset, size_t(p.elements) * byteSize(p.type));
    } else {
      std::vector<double> v(size_t(p.elements));
      decodeBuffer(t.type, trained + t.offset, v.size(), v.data());
      encodeBuffer(p.type, v.data(), v.size(), mem + p.offset);
    }
  }
  std::vector<int64_t> text;
  if (Status s = promptTokens(inf, o.prompt, text); !s.ok()) return s;

  const uint64_t key = initKey("sample", o.seed);
  std::vector<double> row(size_t(inf.vocab));
  std::vector<size_t> order(row.size());
  const size_t tokenBytes = byteSize(inf.tokensType);
  for (int64_t n = 0; n < o.count; ++n) {
    // Row 0: the last `seq` tokens; the other rows and positions zeros.
    const int64_t start = std::max<int64_t>(0, int64_t(text.size()) - inf.seq);
    const int64_t len = int64_t(text.size()) - start;
    std::memset(mem + inf.tokensOffset, 0, size_t(inf.rows * inf.seq) * tokenBytes);
    for (int64_t i = 0; i < len; ++i) {
      uint64_t bits = encodeElement(inf.tokensType, double(text[size_t(start + i)]));
      std::memcpy(mem + inf.tokensOffset + size_t(i) * tokenBytes, &bits, tokenBytes);
    }
    inf.run(mem);
    decodeBuffer(inf.logitsType, mem + inf.logitsOffset + size_t(len - 1) * size_t(inf.vocab) * byteSize(inf.logitsType),
                 row.size(), row.data());
    int64_t next = 0;
    if (o.temperature <= 0) {
      next = int64_t(std::max_element(row.begin(), row.end()) - row.begin());
    } else {
      for (size_t v = 0; v < order.size(); ++v) order[v] = v;
      size_t k = o.topK > 0 ? std::min(order.size(), size_t(o.topK)) : order.size();
      std::partial_sort(order.begin(), order.begin() + long(k), order.end(),
                        [&](size_t a, size_t b) { return row[a] > row[b]; });
      double top = row[order[0]], total = 0;
      std::vector<double> p(k);
      for (size_t j = 0; j < k; ++j) total += p[j] = std::exp((row[order[j]] - top) / o.temperature);
      double u = philoxUniform(key, uint64_t(n)) * total;
      size_t j = 0;
      while (j + 1 < k && u >= p[j]) u -= p[j++];
      next = int64_t(order[j]);
    }
    text.push_back(next);
    if (inf.vocab == 256) std::fputc(int(next), out);
    else std::fprintf(out, "%s%lld", n ? " " : "", (long long)next);
    std::fflush(out);
  }
  std::fputc('\n', out);
  return Status::success();
}
