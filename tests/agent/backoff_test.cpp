#include "tessel/agent/backoff.hpp"

#include <gtest/gtest.h>

using namespace tessel::agent;
using namespace std::chrono;

TEST(Backoff, GrowsWithJitterAndCaps) {
  Backoff b(milliseconds(100), milliseconds(2000), 42);
  int64_t ceiling = 100;
  for (int i = 0; i < 10; ++i) {
    auto d = b.next().count();
    EXPECT_GE(d, ceiling / 2) << i;
    EXPECT_LE(d, ceiling) << i;
    ceiling = std::min<int64_t>(ceiling * 2, 2000);
  }
  EXPECT_EQ(b.failures(), 10);
  b.reset();
  EXPECT_LE(b.next().count(), 100);
}

TEST(Backoff, SameSeedSameDelays) {
  Backoff a(milliseconds(50), seconds(30), 7), b(milliseconds(50), seconds(30), 7);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(Backoff, DifferentSeedsSpread) {
  Backoff a(milliseconds(1000), seconds(30), 1), b(milliseconds(1000), seconds(30), 2);
  bool differ = false;
  for (int i = 0; i < 5; ++i) differ |= a.next() != b.next();
  EXPECT_TRUE(differ);
}

TEST(Backoff, ManyFailuresDoNotOverflow) {
  Backoff b(milliseconds(200), seconds(30), 3);
  for (int i = 0; i < 200; ++i) {
    auto d = b.next();
    EXPECT_LE(d, seconds(30));
    EXPECT_GE(d, milliseconds(100));
  }
}
