#include "core/crc32.h"

#include <gtest/gtest.h>

namespace mcinfer {
namespace {

// Check values from the CRC catalogue (CRC-32/ISO-HDLC): "123456789" -> 0xCBF43926.
TEST(Crc32, CatalogueCheckValue) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("6789", crc32("12345")), 0xCBF43926u);  // incremental
}

}  // namespace
}  // namespace mcinfer
