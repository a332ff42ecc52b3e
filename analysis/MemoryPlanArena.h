//===- analysis/MemoryPlanArena.h - buffers at fixed offsets in one arena -*- C++ -*-===//
//
// The arena the memory planner (analysis/MemoryPlan.h) places one rank's
// buffers in: each buffer gets a fixed offset when it is made and gives its
// bytes back when it dies; free neighbours merge into one hole. Two
// placements:
//
//   first fit  the hole at the lowest address that is large enough;
//   best fit   the smallest hole that is large enough (of equal ones, the
//              lowest address).
//
// Without a hole large enough the arena grows at its top (taking a hole
// that ends there). A large pipeline allocates millions of buffers among
// thousands of holes, so neither placement scans the holes: best fit looks
// the size up in the holes ordered by (size, offset), first fit descends a
// tree of the holes by offset that knows the largest hole under every node;
// both are O(log holes) per allocation and release.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_ANALYSIS_MEMORYPLANARENA_H
#define PLANC_ANALYSIS_MEMORYPLANARENA_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace planc::memory {

/// The free holes of an arena by offset, each node also holding the largest
/// hole of its subtree, so "the lowest offset whose hole holds n bytes" is
/// one descent. A treap (random priorities; no answer depends on them).
class HolesByOffset {
public:
  struct Hole {
    uint64_t offset = 0, size = 0;
  };
  bool empty() const { return root < 0; }
  size_t size() const { return count; }
  void insert(Hole h);
  void erase(uint64_t offset);
  /// The lowest hole of at least `size` bytes.
  std::optional<Hole> firstFit(uint64_t size);
  /// The last hole below `at` and the first at or above it.
  std::pair<std::optional<Hole>, std::optional<Hole>> around(uint64_t at);
  std::optional<Hole> last() const;
  /// Moves the hole at `offset` to `to`; no other hole may lie between the
  /// two offsets (its place in the order stays). After firstFit or around,
  /// a hole they returned is reshaped without searching again.
  void reshape(uint64_t offset, Hole to);

private:
  struct Node {
    Hole hole;
    uint64_t largest = 0;
    uint32_t priority = 0;
    int32_t left = -1, right = -1;
  };
  uint64_t largestOf(int32_t t) const { return t < 0 ? 0 : nodes[size_t(t)].largest; }
  void update(int32_t t);
  /// Splits `t` into the holes below `offset` and the others.
  void split(int32_t t, uint64_t offset, int32_t &lower, int32_t &rest);
  int32_t merge(int32_t a, int32_t b);
  int32_t insertInto(int32_t t, int32_t fresh);
  int32_t eraseFrom(int32_t t, uint64_t offset);
  /// The node of `offset` on `path` (the last descent), or -1.
  int32_t onPath(uint64_t offset) const;

  std::vector<Node> nodes;
  std::vector<int32_t> unused;
  std::vector<int32_t> path; // the nodes the last descent visited, root first
  int32_t root = -1;
  size_t count = 0;
  uint32_t seed = 0x9e3779b9u;
};

/// One rank's arena.
class Arena {
public:
  explicit Arena(bool bestFit) : bestFit(bestFit) {}
  /// The offset of a new buffer of `size` bytes.
  uint64_t allocate(uint64_t size);
  /// Gives back the buffer of `size` bytes at `at`.
  void release(uint64_t at, uint64_t size);
  /// The arena's size: the top of the highest buffer it ever held.
  uint64_t size() const { return end; }
  size_t numHoles() const { return holes.size(); }

private:
  using Hole = HolesByOffset::Hole;
  void add(Hole h);
  void erase(Hole h);
  void reshape(Hole from, Hole to);

  bool bestFit;
  HolesByOffset holes;                            // by offset (first fit, neighbours)
  std::set<std::pair<uint64_t, uint64_t>> bySize; // best fit: (size, offset)
  uint64_t end = 0;
};

} // namespace planc::memory

#endif
