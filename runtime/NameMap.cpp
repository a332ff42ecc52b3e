//===- runtime/NameMap.cpp - parameters under another file's names -------===//

#include "runtime/NameMap.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

using namespace planc::runtime;

namespace {

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

HostTensor transposed(const HostTensor &t) {
  const int64_t rows = t.shape[0], cols = t.shape[1];
  const unsigned w = byteSize(t.type);
  HostTensor out{t.type, {cols, rows}, std::vector<uint8_t>(t.bytes.size())};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(out.bytes.data() + size_t(c * rows + r) * w, t.bytes.data() + size_t(r * cols + c) * w, w);
  return out;
}

/// The columns of `t` from the parameter's factor order to the file's
/// (toFile) or back.
HostTensor reordered(const HostTensor &t, const NameStep &step, bool toFile) {
  const size_t n = step.factors.size();
  const int64_t cols = t.shape.back(), rows = cols ? t.numel() / cols : 0;
  // A column's position in the file: its factor indices, in the file's order.
  std::vector<int64_t> fileStride(n, 1);
  for (size_t k = n; k-- > 1;) fileStride[k - 1] = fileStride[k] * step.factors[size_t(step.order[k])];
  std::vector<int64_t> fileCol(static_cast<size_t>(cols));
  std::vector<int64_t> index(n, 0);
  for (int64_t c = 0; c < cols; ++c) {
    int64_t at = 0;
    for (size_t k = 0; k < n; ++k) at += index[size_t(step.order[k])] * fileStride[k];
    fileCol[size_t(c)] = at;
    for (size_t k = n; k-- > 0;) { // the parameter's multi-index, last factor fastest
      if (++index[k] < step.factors[k]) break;
      index[k] = 0;
    }
  }
  const unsigned w = byteSize(t.type);
  HostTensor out{t.type, t.shape, std::vector<uint8_t>(t.bytes.size())};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t from = toFile ? c : fileCol[size_t(c)], to = toFile ? fileCol[size_t(c)] : c;
      std::memcpy(out.bytes.data() + size_t(r * cols + to) * w, t.bytes.data() + size_t(r * cols + from) * w, w);
    }
  return out;
}

/// Whether `step` can apply to a tensor of `shape`; the reason when not.
std::string unfit(const NameStep &step, const std::vector<int64_t> &shape) {
  if (step.kind == NameStep::Kind::Transpose && shape.size() != 2) return "a transpose needs a matrix";
  if (step.kind == NameStep::Kind::Crop && shape.empty()) return "a crop needs rows";
  if (step.kind == NameStep::Kind::Columns) {
    int64_t product = 1;
    for (int64_t f : step.factors) product *= f;
    if (shape.empty() || product != shape.back() || step.order.size() != step.factors.size())
      return "its columns are not the factors " + shapeText(step.factors);
  }
  return "";
}

} // namespace

Result<HostTensor> planc::runtime::toFileTensor(const HostTensor &param, const NamedTensor &named) {
  HostTensor t = param;
  for (const NameStep &step : named.steps) {
    if (std::string why = unfit(step, t.shape); !why.empty())
      return errorStatus("'" + named.param + "' " + shapeText(t.shape) + " cannot be written as '" + named.files[0] +
                         "': " + why);
    if (step.kind == NameStep::Kind::Transpose) t = transposed(t);
    else if (step.kind == NameStep::Kind::Columns) t = reordered(t, step, /*toFile=*/true);
    // Crop: the file written holds the plan's rows.
  }
  return t;
}

Result<HostTensor> planc::runtime::fromFileTensor(const HostTensor &file, const std::string &fileName,
                                                  const NamedTensor &named, const std::vector<int64_t> &shape,
                                                  std::string &note) {
  // The shape each step leaves, from the parameter's: the file's is last.
  std::vector<std::vector<int64_t>> shapes{shape};
  std::string how;
  for (const NameStep &step : named.steps) {
    std::vector<int64_t> s = shapes.back();
    if (step.kind == NameStep::Kind::Transpose && s.size() == 2) std::swap(s[0], s[1]);
    shapes.push_back(s);
    how += step.kind == NameStep::Kind::Transpose ? ", transposed" : step.kind == NameStep::Kind::Crop ? ", or more rows" : "";
  }
  const std::string what = "tensor '" + fileName + "'";
  const std::vector<int64_t> &want = shapes.back();
  const bool crop = !named.steps.empty() && named.steps.back().kind == NameStep::Kind::Crop;
  const bool longer = crop && file.shape.size() == want.size() && !want.empty() && file.shape[0] > want[0] &&
                      std::equal(file.shape.begin() + 1, file.shape.end(), want.begin() + 1);
  if (file.shape != want && !longer)
    return errorStatus(what + " has shape " + shapeText(file.shape) + ", but the plan's '" + named.param + "' is " +
                       shapeText(shape) + (how.empty() ? "" : " (the file's " + shapeText(want) + ", " + how.substr(2) + ")"));
  HostTensor t = file;
  for (size_t i = named.steps.size(); i-- > 0;) {
    const NameStep &step = named.steps[i];
    if (std::string why = unfit(step, shapes[i]); !why.empty()) return errorStatus(what + ": " + why);
    if (step.kind == NameStep::Kind::Transpose) {
      t = transposed(t);
    } else if (step.kind == NameStep::Kind::Columns) {
      t = reordered(t, step, /*toFile=*/false);
    } else if (t.shape[0] > shapes[i][0]) {
      // The plan's context is shorter than the file's: its first rows
      // (nanoGPT's crop_block_size).
      note += "; '" + fileName + "': its first " + std::to_string(shapes[i][0]) + " of " +
              std::to_string(t.shape[0]) + " rows";
      t.bytes.resize(size_t(t.byteSize() / uint64_t(t.shape[0]) * uint64_t(shapes[i][0])));
      t.shape[0] = shapes[i][0];
    }
  }
  return t;
}

nlohmann::json planc::runtime::nameMapJson(const NameMap &map) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const NamedTensor &n : map.tensors) {
    nlohmann::json steps = nlohmann::json::array();
    for (const NameStep &s : n.steps) {
      nlohmann::json j = {{"kind", s.kind == NameStep::Kind::Transpose ? "transpose"
                                   : s.kind == NameStep::Kind::Columns ? "columns"
                                                                       : "crop"}};
      if (s.kind == NameStep::Kind::Columns) {
        j["factors"] = s.factors;
        j["order"] = s.order;
      }
      steps.push_back(j);
    }
    tensors.push_back({{"param", n.param}, {"files", n.files}, {"steps", steps}});
  }
  nlohmann::json tied = nlohmann::json::array();
  for (const TiedTensor &t : map.tied) tied.push_back({{"files", t.files}, {"same_as", t.sameAs}});
  return {{"name", map.name}, {"config", map.config}, {"tensors", tensors}, {"tied", tied}, {"ignored", map.ignored}};
}

Result<NameMap> planc::runtime::nameMapFromJson(const nlohmann::json &json) {
  try {
    NameMap map;
    map.name = json.at("name").get<std::string>();
    map.config = json.at("config").get<std::string>();
    for (const nlohmann::json &t : json.at("tensors")) {
      NamedTensor n;
      n.param = t.at("param").get<std::string>();
      n.files = t.at("files").get<std::vector<std::string>>();
      if (n.files.empty()) return errorStatus("a tensor of the name map has no file name");
      for (const nlohmann::json &s : t.at("steps")) {
        NameStep step;
        const std::string kind = s.at("kind").get<std::string>();
        if (kind == "transpose") step.kind = NameStep::Kind::Transpose;
        else if (kind == "crop") step.kind = NameStep::Kind::Crop;
        else if (kind == "columns") {
          step.kind = NameStep::Kind::Columns;
          step.factors = s.at("factors").get<std::vector<int64_t>>();
          step.order = s.at("order").get<std::vector<int64_t>>();
          std::vector<int64_t> sorted = step.order;
          std::sort(sorted.begin(), sorted.end());
          bool permutation = sorted.size() == step.factors.size();
          for (size_t k = 0; permutation && k < sorted.size(); ++k) permutation = sorted[k] == int64_t(k);
          for (int64_t f : step.factors) permutation = permutation && f > 0 && f <= (int64_t(1) << 40);
          if (!permutation) return errorStatus("'" + n.param + "': columns whose order is not a permutation");
        } else {
          return errorStatus("'" + n.param + "': unknown step '" + kind + "'");
        }
        n.steps.push_back(step);
      }
      map.tensors.push_back(std::move(n));
    }
    for (const nlohmann::json &t : json.at("tied"))
      map.tied.push_back({t.at("files").get<std::vector<std::string>>(), t.at("same_as").get<std::string>()});
    map.ignored = json.at("ignored").get<std::vector<std::string>>();
    return map;
  } catch (const nlohmann::json::exception &e) {
    return errorStatus(std::string("a name map that is not as planc writes it (") + e.what() + ")");
  }
}

bool planc::runtime::sameMapName(const std::string &a, const std::string &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}
