//===- runtime/Sample.h - generating text with a compiled plan ----*- C++ -*-===//
//
// `./model --sample N` (nanoGPT's sample.py): the plan's inference step
// (the forward program up to the logits, ExecInference) in an arena of its
// own, fed the trained parameters by name, run once per generated token on
// the last `seq` tokens of the text so far (row 0 of its batch; the causal
// model's logits at the last real position do not see the rest). The next
// token is drawn from softmax(logits / temperature) over the top k, by
// Philox keyed with the seed, so a seed gives the same text.
//
// A byte-level model (vocabulary 256) takes its prompt as bytes and prints
// bytes; any other prints token ids separated by spaces and takes its
// prompt as such ids.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_SAMPLE_H
#define PLANC_RUNTIME_SAMPLE_H

#include "runtime/Executable.h"
#include "runtime/Status.h"

#include <cstdio>
#include <string>

namespace planc::runtime {

struct SampleOptions {
  int64_t count = 0;        // tokens to generate
  std::string prompt = "\n";
  double temperature = 0.8; // 0: always the most likely token
  int64_t topK = 200;       // 0: the whole vocabulary
  uint64_t seed = 0;
};

/// Generates and prints to `out`; `trained` is the training step's arena.
/// Errors: a plan without an inference step, a parameter it lacks, a prompt
/// of tokens outside the vocabulary.
Status sampleTokens(const ExecutableModel &model, const uint8_t *trained, const SampleOptions &options, std::FILE *out);

} // namespace planc::runtime

#endif
