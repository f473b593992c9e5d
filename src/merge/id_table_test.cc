#include "merge/id_table.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>

namespace mcinfer::merge {
namespace {

TEST(IdTable, SlotsCountUpAndIdsSurviveGrowth) {
  IdTable table(12345);
  std::unordered_map<std::string, std::uint32_t> reference;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 100000; ++i) {
      std::string id =
          (i % 3 == 0) ? std::to_string(i) : "long-identifier-" + std::to_string(i * 7919);
      bool inserted = false;
      std::uint32_t slot = table.insert(id, inserted);
      auto [it, fresh] = reference.emplace(id, static_cast<std::uint32_t>(reference.size()));
      ASSERT_EQ(inserted, fresh) << id;
      ASSERT_EQ(slot, it->second) << id;
    }
  }
  EXPECT_EQ(table.size(), reference.size());
  for (const auto& [id, slot] : reference) ASSERT_EQ(table.id_of(slot), id);
}

TEST(IdTable, EmptyLongAndBinaryIds) {
  IdTable table(1);
  bool inserted = false;
  std::string big(3 << 20, 'x');  // larger than an arena block
  std::string binary("a\0b", 3);
  EXPECT_EQ(table.insert("", inserted), 0u);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(table.insert(big, inserted), 1u);
  EXPECT_EQ(table.insert(binary, inserted), 2u);
  EXPECT_EQ(table.insert(std::string("a\0c", 3), inserted), 3u);
  EXPECT_EQ(table.insert("", inserted), 0u);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(table.id_of(1), big);
  EXPECT_EQ(table.id_of(2), binary);
}

TEST(IdTable, ReserveKeepsSlots) {
  IdTable table(99);
  bool inserted = false;
  for (int i = 0; i < 1000; ++i) table.insert(std::to_string(i), inserted);
  table.reserve(1 << 20);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(table.insert(std::to_string(i), inserted), static_cast<std::uint32_t>(i));
    ASSERT_FALSE(inserted);
  }
}

TEST(BlockArray, AppendZeroesAndKeepsAddresses) {
  BlockArray<double> a(3);
  double* first = a.append();
  first[0] = 1;
  for (int i = 1; i < 200000; ++i) {
    double* p = a.append();
    ASSERT_EQ(p[0] + p[1] + p[2], 0.0);
    p[2] = i;
  }
  EXPECT_EQ(a[0], first);  // blocks never move
  EXPECT_EQ(a[0][0], 1.0);
  EXPECT_EQ(a[199999][2], 199999.0);
}

}  // namespace
}  // namespace mcinfer::merge
