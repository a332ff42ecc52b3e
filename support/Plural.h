//===- support/Plural.h - "1 device", "8 devices" ---------------*- C++ -*-===//
//
// A count and its noun as English writes them, for every message that
// prints one: "1 rank", "2 ranks", "1 micro-batch", "4 micro-batches". The
// noun is given in the singular; the plural follows the regular rules (+es
// after s, x, z, ch and sh; a consonant's y becomes ies; +s otherwise), or
// is given when the noun is irregular. The runtime, which links nothing of
// planc, keeps the same two functions in runtime/Plural.h.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_SUPPORT_PLURAL_H
#define PLANC_SUPPORT_PLURAL_H

#include <cstdint>
#include <string>
#include <string_view>

namespace planc {

/// `noun` as a count of `count` needs it: the singular for 1 (and -1), else
/// `plural`, or the regular plural when none is given.
inline std::string pluralOf(int64_t count, std::string_view noun, std::string_view plural = {}) {
  if (count == 1 || count == -1) return std::string(noun);
  if (!plural.empty()) return std::string(plural);
  auto endsWith = [&](std::string_view end) {
    return noun.size() >= end.size() && noun.substr(noun.size() - end.size()) == end;
  };
  if (endsWith("s") || endsWith("x") || endsWith("z") || endsWith("ch") || endsWith("sh"))
    return std::string(noun) + "es";
  if (endsWith("y") && noun.size() > 1 && std::string_view("aeiou").find(noun[noun.size() - 2]) == std::string_view::npos)
    return std::string(noun.substr(0, noun.size() - 1)) + "ies";
  return std::string(noun) + "s";
}

/// "1 device", "8 devices".
inline std::string counted(int64_t count, std::string_view noun, std::string_view plural = {}) {
  return std::to_string(count) + " " + pluralOf(count, noun, plural);
}

} // namespace planc

#endif
