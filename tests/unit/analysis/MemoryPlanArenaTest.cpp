//===- tests/unit/analysis/MemoryPlanArenaTest.cpp - first fit and best fit placement ---===//
//
// The arena's trees must place every buffer where the plain definitions
// place it: first fit, the lowest hole that is large enough; best fit, the
// smallest such hole, the lowest of equal ones; growing at the top (into a
// hole that ends there) when none is. A reference that scans a list of
// holes states those definitions; random sequences of allocations and
// releases, with thousands of holes at once, must give the same offsets and
// arena size in both.
//
//===----------------------------------------------------------------------===//

#include "analysis/MemoryPlanArena.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <random>

using namespace planc::memory;

namespace {

/// The definitions, by scanning every hole.
class ReferenceArena {
public:
  explicit ReferenceArena(bool bestFit) : bestFit(bestFit) {}
  uint64_t allocate(uint64_t size) {
    auto chosen = holes.end();
    for (auto it = holes.begin(); it != holes.end(); ++it)
      if (it->second >= size && (chosen == holes.end() || it->second < chosen->second)) {
        chosen = it;
        if (!bestFit) break;
      }
    if (chosen != holes.end()) {
      uint64_t at = chosen->first, left = chosen->second - size;
      holes.erase(chosen);
      if (left) holes[at + size] = left;
      return at;
    }
    uint64_t at = end;
    if (!holes.empty() && std::prev(holes.end())->first + std::prev(holes.end())->second == end) {
      at = std::prev(holes.end())->first;
      holes.erase(std::prev(holes.end()));
    }
    end = std::max(end, at + size);
    return at;
  }
  void release(uint64_t at, uint64_t size) {
    auto it = holes.emplace(at, size).first;
    if (auto next = std::next(it); next != holes.end() && at + size == next->first) {
      it->second += next->second;
      holes.erase(next);
    }
    if (it != holes.begin())
      if (auto prev = std::prev(it); prev->first + prev->second == at) {
        prev->second += it->second;
        holes.erase(it);
      }
  }
  uint64_t size() const { return end; }
  size_t numHoles() const { return holes.size(); }

private:
  bool bestFit;
  std::map<uint64_t, uint64_t> holes;
  uint64_t end = 0;
};

void compareOn(bool bestFit, unsigned seed, size_t live, int steps) {
  Arena arena(bestFit);
  ReferenceArena reference(bestFit);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<uint64_t, uint64_t>> buffers; // (offset, size)
  size_t mostHoles = 0;
  for (int i = 0; i < steps; ++i) {
    // Keep about `live` buffers: allocate below it, release above it.
    bool allocate = buffers.empty() || (buffers.size() < 2 * live && rng() % (2 * live) >= buffers.size());
    if (allocate) {
      uint64_t size = 64 * (1 + rng() % (rng() % 4 == 0 ? 1000 : 16));
      uint64_t at = arena.allocate(size);
      ASSERT_EQ(at, reference.allocate(size)) << "step " << i << ", " << size << " bytes";
      buffers.push_back({at, size});
    } else {
      size_t k = rng() % buffers.size();
      arena.release(buffers[k].first, buffers[k].second);
      reference.release(buffers[k].first, buffers[k].second);
      buffers[k] = buffers.back();
      buffers.pop_back();
    }
    ASSERT_EQ(arena.size(), reference.size()) << "step " << i;
    ASSERT_EQ(arena.numHoles(), reference.numHoles()) << "step " << i;
    mostHoles = std::max(mostHoles, arena.numHoles());
  }
  // The sequences reach many holes (not only the trees' easy cases).
  EXPECT_GT(mostHoles, live / 8);
}

TEST(MemoryPlanArena, FirstFitPlacesAsTheLowestHoleThatFits) {
  for (unsigned seed : {1u, 2u, 3u}) compareOn(false, seed, 2000, 40000);
  compareOn(false, 4, 8, 5000);
}

TEST(MemoryPlanArena, BestFitPlacesInTheSmallestHoleThatFits) {
  for (unsigned seed : {1u, 2u, 3u}) compareOn(true, seed, 2000, 40000);
  compareOn(true, 4, 8, 5000);
}

TEST(MemoryPlanArena, GrowsIntoAHoleAtTheTop) {
  for (bool bestFit : {false, true}) {
    Arena a(bestFit);
    EXPECT_EQ(a.allocate(64), 0u);
    EXPECT_EQ(a.allocate(128), 64u);
    a.release(64, 128);     // a hole of 128 at the top
    EXPECT_EQ(a.allocate(256), 64u); // grows from the hole's start
    EXPECT_EQ(a.size(), 320u);
    a.release(0, 64);
    a.release(64, 256);     // everything merges into one hole
    EXPECT_EQ(a.numHoles(), 1u);
    EXPECT_EQ(a.allocate(320), 0u);
    EXPECT_EQ(a.size(), 320u);
  }
}

TEST(MemoryPlanArena, BestFitAndFirstFitChooseDifferently) {
  for (bool bestFit : {false, true}) {
    Arena a(bestFit);
    uint64_t big = a.allocate(512), sep1 = a.allocate(64), small = a.allocate(128), sep2 = a.allocate(64);
    (void)sep1, (void)sep2;
    a.release(big, 512);
    a.release(small, 128);
    // First fit takes the 512-byte hole at 0; best fit the 128-byte one.
    EXPECT_EQ(a.allocate(128), bestFit ? small : big);
  }
}

} // namespace
