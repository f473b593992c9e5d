// int8's accuracy targets: a user's bound adds to the defaults, never removes one (issue 30: with
// `--min-agreement 1` a classifier used to run with no |Δp| target, an embedding model with none).
#include "sched/int8_plan.h"

#include <gtest/gtest.h>

namespace mcinfer::sched {
namespace {

TEST(Int8Targets, AUserBoundAddsToTheDefaults) {
  const model::TaskSpec classify(model::TaskKind::kClassify, model::Pooling::kMean);
  const model::TaskSpec embed(model::TaskKind::kEmbed, model::Pooling::kMean);

  PrecisionBounds t = int8_targets(classify, {});
  EXPECT_EQ(t.max_abs_diff, 0.05);
  EXPECT_FALSE(t.min_cosine || t.min_agreement);

  t = int8_targets(classify, {.min_agreement = 1.0});
  EXPECT_EQ(t.max_abs_diff, 0.05);  // kept
  EXPECT_EQ(t.min_agreement, 1.0);  // added

  t = int8_targets(classify, {.min_cosine = 0.999});
  EXPECT_EQ(t.max_abs_diff, 0.05);
  EXPECT_EQ(t.min_cosine, 0.999);

  t = int8_targets(embed, {});
  EXPECT_EQ(t.min_cosine, 0.99);
  EXPECT_FALSE(t.max_abs_diff || t.min_agreement);

  // The same kind replaces the default, tighter or looser: the user's number is the target.
  EXPECT_EQ(int8_targets(embed, {.min_cosine = 0.999}).min_cosine, 0.999);
  EXPECT_EQ(int8_targets(embed, {.min_cosine = 0.9}).min_cosine, 0.9);
}

}  // namespace
}  // namespace mcinfer::sched
