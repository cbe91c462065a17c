// The BLAS under LibTorch must give every thread the right product. Debian's
// libopenblas0-serial (0.3.21) does not: two threads multiplying at once share its
// buffers, and a few percent of 64x64 products come back wrong (the two-rank training
// test, whose ranks are threads, diverged from the one-process run by 1-30%).
// scripts/setup.sh installs libopenblas0-openmp, which is thread-safe; the reference
// BLAS is too. This test fails where the serial build provides libblas.so.3.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tessel::workers {
namespace {

TEST(BlasTest, ConcurrentMatmulsEqualTheProductOnOneThread) {
  torch::NoGradGuard no_grad;
  torch::set_num_threads(1);
  torch::manual_seed(7);
  const auto a = torch::rand({64, 64});
  const auto b = torch::rand({64, 64});
  const auto expected = torch::mm(a, b);
  constexpr int kThreads = 2;
  constexpr int kProducts = 3000;  // the serial build got ~5% wrong at this size
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kProducts; ++i)
        if (!torch::equal(torch::mm(a, b), expected)) wrong.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0) << "of " << kThreads * kProducts
                             << " products: the BLAS behind libblas.so.3 is not thread-safe "
                                "(update-alternatives --display libblas.so.3-x86_64-linux-gnu)";
}

}  // namespace
}  // namespace tessel::workers
