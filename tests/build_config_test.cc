// The build really has the checks it was configured with (issue 11: the sanitizer pass once ran
// with -DNDEBUG, so every assert() was compiled out and could not fire).
#include <gtest/gtest.h>

#include <cassert>

namespace {

#ifdef NDEBUG
constexpr bool kAssertOn = false;
#else
constexpr bool kAssertOn = true;
#endif
#ifdef _GLIBCXX_ASSERTIONS
constexpr bool kLibstdcxxChecksOn = true;
#else
constexpr bool kLibstdcxxChecksOn = false;
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(BuildConfig, AssertionsAreWhatCMakeAskedFor) {
  EXPECT_EQ(kAssertOn, MCINFER_ASSERTIONS_ON != 0)
      << "assert() state differs from MCINFER_ASSERTIONS";
  EXPECT_EQ(kLibstdcxxChecksOn, MCINFER_ASSERTIONS_ON != 0)
      << "_GLIBCXX_ASSERTIONS state differs from MCINFER_ASSERTIONS";
}

TEST(BuildConfig, SanitizedBuildsKeepAssertionsOn) {
  if (!kSanitized) GTEST_SKIP() << "not a sanitizer build";
  EXPECT_TRUE(kAssertOn) << "a sanitizer build with NDEBUG: assert() is compiled out";
  EXPECT_TRUE(kLibstdcxxChecksOn) << "a sanitizer build without _GLIBCXX_ASSERTIONS";
}

TEST(BuildConfig, AssertFiresWhenOn) {
  if (!kAssertOn) GTEST_SKIP() << "assertions are off in this build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  [[maybe_unused]] volatile bool broken = true;
  EXPECT_DEATH(assert(!broken), "broken");
}

}  // namespace
