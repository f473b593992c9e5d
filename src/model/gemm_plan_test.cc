#include "model/gemm_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace mcinfer::model {
namespace {

TEST(GemmPlan, ParsesLayersAndSlotsSortedWithoutDuplicates) {
  const auto got = parse_gemm_list("3.ffn_out,1,3.ffn_out,0.attn_out", 12);
  const std::vector<GemmId> want = {{0, GemmSlot::kAttnOut}, {1, GemmSlot::kQkv},
                                    {1, GemmSlot::kAttnOut}, {1, GemmSlot::kFfnIn},
                                    {1, GemmSlot::kFfnOut},  {3, GemmSlot::kFfnOut}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(parse_gemm_list("none", 12).empty());
  for (const GemmId& id : want) EXPECT_EQ(parse_gemm_list(gemm_key(id), 12).front(), id);
}

TEST(GemmPlan, RefusesWhatNamesNoGemmOfTheModel) {
  for (const char* bad : {"", "12", "-1", "1.", "1.mlp", "a", "1,,2", "1.qkv.x", "01x", " 1"}) {
    try {
      parse_gemm_list(bad, 12);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--int8-keep"), std::string::npos) << e.what();
    }
  }
}

TEST(GemmPlan, SummaryNamesTheKeptGemms) {
  EXPECT_EQ(int8_plan_summary({}, 12, "bf16"), "int8: 48 of 48 GEMMs");
  const std::vector<GemmId> kept = {{3, GemmSlot::kQkv}, {11, GemmSlot::kFfnOut}};
  EXPECT_EQ(int8_plan_summary(kept, 12, "bf16"),
            "int8: 46 of 48 GEMMs, bf16: layer 3 QKV, layer 11 FFN out");
}

TEST(GemmPlan, InputRangesKeepTheLargestMagnitudePerChannel) {
  InputRanges a, b;
  const float x[] = {1, -5, 2, 0.5f, 3, -4};  // 2 rows of 3 channels
  a.add({1, GemmSlot::kFfnIn}, x, 2, 3);
  EXPECT_EQ(a.of({0, GemmSlot::kQkv}), nullptr);
  const float y[] = {-7, 0, 0};
  b.add({1, GemmSlot::kFfnIn}, y, 1, 3);
  a.merge(b);
  const float* m = a.of({1, GemmSlot::kFfnIn});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m[0], 7);
  EXPECT_EQ(m[1], 5);
  EXPECT_EQ(m[2], 4);
}

}  // namespace
}  // namespace mcinfer::model
