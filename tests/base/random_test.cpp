#include "tessel/base/random.hpp"

#include <gtest/gtest.h>

#include <set>

namespace tessel {
namespace {

TEST(RandomHex, GivesTwoLowercaseHexDigitsPerByteAndNeverRepeats) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto k = random_hex(32);
    ASSERT_TRUE(k) << k.error().message;
    ASSERT_EQ(k->size(), 64U);
    EXPECT_EQ(k->find_first_not_of("0123456789abcdef"), std::string::npos) << *k;
    EXPECT_TRUE(seen.insert(*k).second);
  }
  EXPECT_EQ(random_hex(0).value(), "");
}

}  // namespace
}  // namespace tessel
