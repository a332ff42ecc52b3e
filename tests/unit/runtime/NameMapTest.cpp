//===- tests/unit/runtime/NameMapTest.cpp - parameters under another file's names -===//
//
// The steps between a parameter and a file's tensor, checked against index
// arithmetic worked out by hand (GPT-2's c_attn columns [3, heads, d]
// against std.gpt's [heads, 3, d]; nn.Linear's transpose), and the way back:
// every tensor read and written again is the same bytes. A file tensor of
// the wrong shape is an error naming both; the map's JSON round-trips and a
// corrupt one is an error, not an exception.
//
//===----------------------------------------------------------------------===//

#include "runtime/NameMap.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>

using namespace planc::runtime;

namespace {

/// A [rows, cols] f32 tensor whose element (r, c) is r * 1000 + c.
HostTensor indexed(int64_t rows, int64_t cols) {
  HostTensor t = HostTensor::zeros(ElementType::F32, {rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = float(r * 1000 + c);
      std::memcpy(t.bytes.data() + size_t(r * cols + c) * 4, &v, 4);
    }
  return t;
}

float at(const HostTensor &t, int64_t r, int64_t c) {
  float v;
  std::memcpy(&v, t.bytes.data() + size_t(r * t.shape[1] + c) * 4, 4);
  return v;
}

NamedTensor gpt2QkvColumns(int64_t heads, int64_t d) {
  NameStep step;
  step.kind = NameStep::Kind::Columns;
  step.factors = {heads, 3, d}; // std.gpt's w_qkv: [heads, 3, d]
  step.order = {1, 0, 2};       // GPT-2's c_attn: [3, heads, d]
  return {"blocks.0.attention.w_qkv", {"h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.weight"}, {step}};
}

TEST(NameMapTest, ColumnsReorderAsGpt2sAttentionSplitsThem) {
  const int64_t heads = 2, d = 3, h = 4;
  const NamedTensor named = gpt2QkvColumns(heads, d);
  HostTensor plan = indexed(h, 3 * heads * d);
  Result<HostTensor> file = toFileTensor(plan, named);
  ASSERT_TRUE(file.ok()) << file.error();
  // File column (part, head, i) = part * heads * d + head * d + i holds the
  // plan's column (head, part, i) = head * 3d + part * d + i.
  for (int64_t r = 0; r < h; ++r)
    for (int64_t part = 0; part < 3; ++part)
      for (int64_t head = 0; head < heads; ++head)
        for (int64_t i = 0; i < d; ++i)
          EXPECT_EQ(at(*file, r, part * heads * d + head * d + i), at(plan, r, head * 3 * d + part * d + i));
  std::string note;
  Result<HostTensor> back = fromFileTensor(*file, "h.0.attn.c_attn.weight", named, plan.shape, note);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->bytes, plan.bytes);
  EXPECT_TRUE(note.empty());
}

TEST(NameMapTest, TransposeIsNnLinearsLayout) {
  NamedTensor named{"wq", {"q_proj.weight"}, {NameStep{NameStep::Kind::Transpose, {}, {}}}};
  HostTensor plan = indexed(3, 5); // [in, out]
  Result<HostTensor> file = toFileTensor(plan, named);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->shape, (std::vector<int64_t>{5, 3})); // [out, in]
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(at(*file, c, r), at(plan, r, c));
  std::string note;
  Result<HostTensor> back = fromFileTensor(*file, "q_proj.weight", named, plan.shape, note);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->bytes, plan.bytes);

  // The file's [3, 5] is not the [5, 3] the transpose of the plan's [3, 5] is.
  Result<HostTensor> wrong = fromFileTensor(plan, "q_proj.weight", named, plan.shape, note);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error(),
            "tensor 'q_proj.weight' has shape [3, 5], but the plan's 'wq' is [3, 5] (the file's [5, 3], transposed)");
}

TEST(NameMapTest, CropTakesTheFirstRowsAndSaysSo) {
  NamedTensor named{"wpe.weight", {"wpe.weight"}, {NameStep{NameStep::Kind::Crop, {}, {}}}};
  HostTensor file = indexed(8, 2);
  std::string note;
  Result<HostTensor> plan = fromFileTensor(file, "transformer.wpe.weight", named, {5, 2}, note);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(plan->bytes, std::vector<uint8_t>(file.bytes.begin(), file.bytes.begin() + 5 * 2 * 4));
  EXPECT_EQ(note, "; 'transformer.wpe.weight': its first 5 of 8 rows");
  // Fewer rows than the plan's, or other columns, are errors.
  EXPECT_FALSE(fromFileTensor(indexed(4, 2), "wpe.weight", named, {5, 2}, note).ok());
  EXPECT_FALSE(fromFileTensor(indexed(8, 3), "wpe.weight", named, {5, 2}, note).ok());
  // Written back, the plan's rows are the file's.
  Result<HostTensor> out = toFileTensor(*plan, named);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->bytes, plan->bytes);
}

TEST(NameMapTest, StepsThatDoNotFitAreErrors) {
  NamedTensor named = gpt2QkvColumns(2, 3);
  Result<HostTensor> file = toFileTensor(indexed(4, 17), named); // 17 columns are not 2 x 3 x 3
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().find("its columns are not the factors [2, 3, 3]"), std::string::npos) << file.error();
  NamedTensor vector{"b", {"bias"}, {NameStep{NameStep::Kind::Transpose, {}, {}}}};
  HostTensor v = HostTensor::zeros(ElementType::F32, {4});
  EXPECT_FALSE(toFileTensor(v, vector).ok());
}

TEST(NameMapTest, JsonRoundTripsAndCorruptMapsAreErrors) {
  NameMap map;
  map.name = "hf_gpt2";
  map.config = "{\"model_type\": \"gpt2\"}\n";
  map.tensors.push_back(gpt2QkvColumns(12, 64));
  map.tied.push_back({{"lm_head.weight"}, "wte.weight"});
  map.ignored = {"h.0.attn.bias"};
  Result<NameMap> back = nameMapFromJson(nameMapJson(map));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(nameMapJson(*back), nameMapJson(map));
  EXPECT_EQ(back->tensors[0].steps[0].factors, (std::vector<int64_t>{12, 3, 64}));

  nlohmann::json bad = nameMapJson(map);
  bad["tensors"][0]["steps"][0]["order"] = {0, 0, 2};
  EXPECT_FALSE(nameMapFromJson(bad).ok());
  bad = nameMapJson(map);
  bad["tensors"][0]["steps"][0]["kind"] = "rotate";
  EXPECT_FALSE(nameMapFromJson(bad).ok());
  bad = nameMapJson(map);
  bad["tensors"][0].erase("files");
  Result<NameMap> missing = nameMapFromJson(bad);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("not as planc writes it"), std::string::npos);
  EXPECT_FALSE(nameMapFromJson(nlohmann::json::array()).ok());
}

TEST(NameMapTest, MapNamesCompareDashesAsUnderscores) {
  EXPECT_TRUE(sameMapName("hf-llama", "hf_llama"));
  EXPECT_TRUE(sameMapName("hf_llama", "hf_llama"));
  EXPECT_FALSE(sameMapName("hf-llama", "hf_llama2"));
  EXPECT_FALSE(sameMapName("hf-gpt2", "hf_llama"));
}

} // namespace
