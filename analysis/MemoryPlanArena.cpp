//===- analysis/MemoryPlanArena.cpp - buffers at fixed offsets in one arena -===//

#include "analysis/MemoryPlanArena.h"

#include <algorithm>

using namespace planc::memory;

void HolesByOffset::update(int32_t t) {
  Node &n = nodes[size_t(t)];
  n.largest = std::max({n.hole.size, largestOf(n.left), largestOf(n.right)});
}

void HolesByOffset::split(int32_t t, uint64_t offset, int32_t &lower, int32_t &rest) {
  if (t < 0) {
    lower = rest = -1;
    return;
  }
  if (nodes[size_t(t)].hole.offset < offset) {
    split(nodes[size_t(t)].right, offset, nodes[size_t(t)].right, rest);
    lower = t;
  } else {
    split(nodes[size_t(t)].left, offset, lower, nodes[size_t(t)].left);
    rest = t;
  }
  update(t);
}

int32_t HolesByOffset::merge(int32_t a, int32_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  if (nodes[size_t(a)].priority > nodes[size_t(b)].priority) {
    nodes[size_t(a)].right = merge(nodes[size_t(a)].right, b);
    update(a);
    return a;
  }
  nodes[size_t(b)].left = merge(a, nodes[size_t(b)].left);
  update(b);
  return b;
}

void HolesByOffset::insert(Hole h) {
  int32_t t;
  if (!unused.empty()) {
    t = unused.back();
    unused.pop_back();
  } else {
    t = int32_t(nodes.size());
    nodes.emplace_back();
  }
  seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5; // xorshift32
  nodes[size_t(t)] = {h, h.size, seed, -1, -1};
  path.clear();
  root = insertInto(root, t);
  ++count;
}

int32_t HolesByOffset::insertInto(int32_t t, int32_t fresh) {
  // Down to where the new node's priority belongs, then split that subtree.
  Node &f = nodes[size_t(fresh)];
  if (t < 0) return fresh;
  if (f.priority > nodes[size_t(t)].priority) {
    split(t, f.hole.offset, f.left, f.right);
    update(fresh);
    return fresh;
  }
  if (f.hole.offset < nodes[size_t(t)].hole.offset) {
    int32_t l = insertInto(nodes[size_t(t)].left, fresh);
    nodes[size_t(t)].left = l;
  } else {
    int32_t r = insertInto(nodes[size_t(t)].right, fresh);
    nodes[size_t(t)].right = r;
  }
  update(t);
  return t;
}

int32_t HolesByOffset::eraseFrom(int32_t t, uint64_t offset) {
  if (t < 0) return t;
  Node &n = nodes[size_t(t)];
  if (n.hole.offset == offset) {
    unused.push_back(t);
    --count;
    return merge(n.left, n.right);
  }
  if (offset < n.hole.offset) {
    int32_t l = eraseFrom(n.left, offset);
    nodes[size_t(t)].left = l;
  } else {
    int32_t r = eraseFrom(n.right, offset);
    nodes[size_t(t)].right = r;
  }
  update(t);
  return t;
}

void HolesByOffset::erase(uint64_t offset) {
  path.clear();
  root = eraseFrom(root, offset);
}

int32_t HolesByOffset::onPath(uint64_t offset) const {
  for (size_t i = path.size(); i-- > 0;)
    if (nodes[size_t(path[i])].hole.offset == offset) return int32_t(i);
  return -1;
}

void HolesByOffset::reshape(uint64_t offset, Hole to) {
  int32_t at = onPath(offset);
  if (at < 0) {
    path.clear();
    for (int32_t t = root; t >= 0;) {
      path.push_back(t);
      const Node &n = nodes[size_t(t)];
      if (n.hole.offset == offset) break;
      t = offset < n.hole.offset ? n.left : n.right;
    }
    at = int32_t(path.size()) - 1;
  }
  nodes[size_t(path[size_t(at)])].hole = to;
  for (int32_t i = at; i >= 0; --i) update(path[size_t(i)]);
  path.clear();
}

std::optional<HolesByOffset::Hole> HolesByOffset::firstFit(uint64_t size) {
  path.clear();
  int32_t t = root;
  if (largestOf(t) < size) return std::nullopt;
  // The largest hole under each node says which side holds the lowest fit.
  while (true) {
    path.push_back(t);
    const Node &n = nodes[size_t(t)];
    if (largestOf(n.left) >= size) t = n.left;
    else if (n.hole.size >= size) return n.hole;
    else t = n.right;
  }
}

std::pair<std::optional<HolesByOffset::Hole>, std::optional<HolesByOffset::Hole>>
HolesByOffset::around(uint64_t at) {
  // Both neighbours of `at` lie on the path that searches for it.
  path.clear();
  std::optional<Hole> lower, upper;
  for (int32_t t = root; t >= 0;) {
    path.push_back(t);
    const Node &n = nodes[size_t(t)];
    if (n.hole.offset < at) lower = n.hole, t = n.right;
    else upper = n.hole, t = n.left;
  }
  return {lower, upper};
}

std::optional<HolesByOffset::Hole> HolesByOffset::last() const {
  std::optional<Hole> best;
  for (int32_t t = root; t >= 0; t = nodes[size_t(t)].right) best = nodes[size_t(t)].hole;
  return best;
}

void Arena::add(Hole h) {
  holes.insert(h);
  if (bestFit) bySize.insert({h.size, h.offset});
}

void Arena::erase(Hole h) {
  holes.erase(h.offset);
  if (bestFit) bySize.erase({h.size, h.offset});
}

void Arena::reshape(Hole from, Hole to) {
  holes.reshape(from.offset, to);
  if (bestFit) {
    // Reuse the set's node: no allocation per placement.
    auto node = bySize.extract({from.size, from.offset});
    node.value() = {to.size, to.offset};
    bySize.insert(std::move(node));
  }
}

uint64_t Arena::allocate(uint64_t size) {
  std::optional<Hole> hole;
  if (bestFit) {
    auto it = bySize.lower_bound({size, 0});
    if (it != bySize.end()) hole = Hole{it->second, it->first};
  } else {
    hole = holes.firstFit(size);
  }
  if (hole) {
    // The buffer takes the hole's start; the rest stays a hole.
    if (hole->size == size) erase(*hole);
    else reshape(*hole, {hole->offset + size, hole->size - size});
    return hole->offset;
  }
  // Grow, absorbing a hole that ends at the top.
  uint64_t at = end;
  if (std::optional<Hole> top = holes.last(); top && top->offset + top->size == end) {
    at = top->offset;
    erase(*top);
  }
  end = std::max(end, at + size);
  return at;
}

void Arena::release(uint64_t at, uint64_t size) {
  // Merge with the holes just above and just below.
  auto [prev, next] = holes.around(at);
  bool joinsNext = next && at + size == next->offset, joinsPrev = prev && prev->offset + prev->size == at;
  if (joinsPrev && joinsNext) {
    erase(*next); // then prev is searched again
    reshape(*prev, {prev->offset, prev->size + size + next->size});
  } else if (joinsPrev) {
    reshape(*prev, {prev->offset, prev->size + size});
  } else if (joinsNext) {
    reshape(*next, {at, size + next->size});
  } else {
    add({at, size});
  }
}
