// The build really has the checks it was configured with (issue 11: the sanitizer pass once ran
// with -DNDEBUG, so every assert() was compiled out and could not fire).
#include <gtest/gtest.h>

#include <cassert>
#include <cstdlib>
#include <string>

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
#if defined(MCINFER_SANITIZER_ADDRESS) || defined(MCINFER_SANITIZER_THREAD)
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

// The sanitizer the macros say is linked in: its runtime's entry points resolve (weak
// declarations stay null without it), whichever compiler built the tree.
extern "C" int __asan_address_is_poisoned(const volatile void*) __attribute__((weak));
extern "C" void __tsan_acquire(void*) __attribute__((weak));

TEST(BuildConfig, SanitizerRuntimeIsTheOneConfigured) {
#if defined(MCINFER_SANITIZER_ADDRESS)
  EXPECT_NE(&__asan_address_is_poisoned, nullptr) << "MCINFER_SANITIZER_ADDRESS without ASan";
#else
  EXPECT_EQ(&__asan_address_is_poisoned, nullptr) << "ASan linked into an unsanitized build";
#endif
#if defined(MCINFER_SANITIZER_THREAD)
  EXPECT_NE(&__tsan_acquire, nullptr) << "MCINFER_SANITIZER_THREAD without TSan";
#else
  EXPECT_EQ(&__tsan_acquire, nullptr) << "TSan linked into a build not configured for it";
#endif
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

// Parquet's tests are built only with Arrow; where it is required (CI's Release phase sets
// MCINFER_REQUIRE_ARROW=1) a build without it fails here instead of passing without them.
TEST(BuildConfig, ArrowWhereRequired) {
  const char* required = std::getenv("MCINFER_REQUIRE_ARROW");
  if (required == nullptr || std::string(required) != "1") GTEST_SKIP() << "Arrow not required";
  EXPECT_TRUE(MCINFER_ARROW_ON != 0)
      << "MCINFER_REQUIRE_ARROW=1 but this build has no Arrow (scripts/setup.sh makes "
         ".venv-arrow; MCINFER_ARROW=AUTO finds it), so the Parquet tests were not built";
}

}  // namespace
