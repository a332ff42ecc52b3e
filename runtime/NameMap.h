//===- runtime/NameMap.h - parameters under another file's names -*- C++ -*-===//
//
// A name map, resolved by the compiler against the model (frontend/NameMaps.h
// reads the `names` declarations of std.hf or of the plan): for each
// parameter it names, the file's name of its tensor and the steps from the
// parameter to that tensor (a transpose, columns in another order, rows a
// longer file has). The executable reads `--init-from` files of those names
// with it and records it in each checkpoint's index, from which `planc
// convert --to` writes the checkpoint back out under the same names.
//
// Every step moves whole elements, so a file read and written back holds the
// same bytes.
//
//===----------------------------------------------------------------------===//
#ifndef PLANC_RUNTIME_NAMEMAP_H
#define PLANC_RUNTIME_NAMEMAP_H

#include "runtime/HostTensor.h"
#include "runtime/Status.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace planc::runtime {

/// One step from a parameter to the file's tensor.
struct NameStep {
  enum class Kind { Transpose, Columns, Crop };
  Kind kind = Kind::Transpose;
  std::vector<int64_t> factors; // Columns: the last dim's factors, as the parameter groups them
  std::vector<int64_t> order;   // Columns: the file's order of those factors
};

/// A parameter and its file name (files[0]; the rest are spellings a file
/// may use instead, such as GPT-2's `transformer.` prefix).
struct NamedTensor {
  std::string param;
  std::vector<std::string> files;
  std::vector<NameStep> steps;
};

/// A file tensor that must equal another (`sameAs`, a NamedTensor's
/// files[0]) because the plan ties it: a tied output head.
struct TiedTensor {
  std::vector<std::string> files;
  std::string sameAs;
};

struct NameMap {
  std::string name;   // "hf_llama"
  std::string config; // the config.json of the family the map declares; "" when none
  std::vector<NamedTensor> tensors;
  std::vector<TiedTensor> tied;
  std::vector<std::string> ignored; // file names that are not weights (buffers)
  bool empty() const { return name.empty(); }
};

/// The file's tensor of a parameter's whole tensor: the steps in order.
Result<HostTensor> toFileTensor(const HostTensor &param, const NamedTensor &named);

/// The parameter's whole tensor, of `shape`, from the file's tensor named
/// `fileName` (one of named.files): the steps undone in reverse. `note`
/// says what a crop left out.
Result<HostTensor> fromFileTensor(const HostTensor &file, const std::string &fileName, const NamedTensor &named,
                                  const std::vector<int64_t> &shape, std::string &note);

/// The map as the checkpoint index holds it ("names"), and back.
nlohmann::json nameMapJson(const NameMap &map);
Result<NameMap> nameMapFromJson(const nlohmann::json &json);

/// `--to hf-llama` names the map `hf_llama`: dashes and underscores alike.
bool sameMapName(const std::string &a, const std::string &b);

} // namespace planc::runtime

#endif
