//===- passes/Reshard.h - the collectives that change a layout --*- C++ -*-===//
//
// Collective insertion: given a value and the sharding a consumer needs, the
// shortest sequence of collectives that turns one layout into the other,
// appended to the module:
//
//   partial over a -> split over a along d   reduce_scatter(a, d)
//   partial over a -> anything else          all_reduce(a)
//   split over a along d -> along d'         all_to_all(a, split d', concat d)
//   split over a along d -> whole            all_gather(a, d)
//   whole -> split over a along d            shard_slice(a, d) (no communication)
//
// Reductions come first (a reduce-scatter then leaves less to gather), then
// the moves and gathers, then the local slices. Results are memoised per
// (value, layout, key), so a value needed the same way by several consumers
// is moved once; a key keeps apart the gathers that must be repeated (ZeRO-3
// gathers a parameter again in backward after releasing it in forward).
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_PASSES_RESHARD_H
#define PLANC_PASSES_RESHARD_H

#include "ir/IR.h"

#include <map>
#include <string>
#include <tuple>

namespace planc {

/// Where inserted ops come from: the consumer's location, layer path and the
/// attributes that place it (phase, stage, micro_batch).
struct OpStamp {
  ir::Location loc;
  std::string path;
  ir::AttrMap attrs;
  static OpStamp of(const ir::Op &op);
};

class Resharder {
public:
  explicit Resharder(ir::Module &m) : m(m) {}

  /// `v` laid out as `target`. `allReduceFirst` reduces a partial sum with an
  /// all-reduce even where a reduce-scatter would do (for a caller that keeps
  /// the whole sum as well). Returns null and sets `error` for a layout no
  /// collective reaches (a partial sum that `v` is not).
  ir::Value *to(ir::Value *v, const ir::Sharding &target, const OpStamp &stamp, bool allReduceFirst = false,
                const std::string &key = "");

  /// Appends `kind` (a collective or any op) with its inferred result types.
  ir::Op *emit(ir::OpKind kind, std::vector<ir::Value *> operands, ir::AttrMap attrs, const OpStamp &stamp);

  /// The first value that completed `v`'s partial sums (its reduction), or
  /// null: a consumer that could take the partial sum takes this instead, so a
  /// value is reduced once however many consumers it has.
  ir::Value *reducedOf(const ir::Value *v) const {
    auto it = reduced.find(v);
    return it == reduced.end() ? nullptr : it->second;
  }

  std::string error;

private:
  std::map<const ir::Value *, ir::Value *> reduced;
  ir::Module &m;
  std::map<std::tuple<const ir::Value *, std::string, std::string>, ir::Value *> memo;
};

/// `s` with `dims` sized to `rank` (empty entries for missing dims).
ir::Sharding normalized(ir::Sharding s, size_t rank);

} // namespace planc

#endif
