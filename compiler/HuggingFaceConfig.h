//===- compiler/HuggingFaceConfig.h - a name map for the executable -*- C++ -*-===//
//
// The name map the plan follows (frontend/NameMaps.h), as the executable
// carries it (runtime/NameMap.h): the parameters' file names and steps, and
// the config.json of the family the map declares (`config = "llama"`), so
// that `planc convert --to` writes a folder transformers' from_pretrained
// loads. The config's figures come from the model, never from a template:
// sizes from the named parameters' shapes, head counts from their
// `@columns`, epsilons from the norms that read the named weights, the
// rotary base and width from the model's rope, the context from its tokens.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_COMPILER_HUGGINGFACECONFIG_H
#define PLANC_COMPILER_HUGGINGFACECONFIG_H

#include "frontend/Frontend.h"
#include "ir/IR.h"
#include "runtime/NameMap.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace planc {

/// The executable's name map of the checked plan in `c`; an empty map when
/// the plan follows none. Errors: a fact the family's config needs that the
/// model does not have (a head count without `@columns`, a norm the map
/// does not name), naming the map and the fact. `forward` is the model
/// lowered to IR (compile's ForwardIR), which a map of a config family reads
/// (its norms, ropes and dropout); null where the caller knows the map
/// declares no family (nameMapReadsIR).
llvm::Expected<runtime::NameMap> executableNameMap(Compilation &c, const ir::Module *forward);

/// Whether executableNameMap needs the forward IR: the map declares a
/// config family.
bool nameMapReadsIR(Compilation &c);

/// `planc emit --emit=names`: the map as text, one parameter a line
/// (`blocks.0.attention.wq  <-  model.layers.0.self_attn.q_proj.weight
/// transpose`), then the tied and ignored names and the config.json.
void printNameMap(Compilation &c, const runtime::NameMap &map, llvm::raw_ostream &os);

} // namespace planc

#endif
