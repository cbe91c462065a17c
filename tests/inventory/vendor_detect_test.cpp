#include "tessel/agent/vendor_detect.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.hpp"

namespace tessel::agent {
namespace {

namespace fs = std::filesystem;

void make_tool(const fs::path& p, bool executable = true) {
  testing::write_file(p, "#!/bin/sh\nexit 0\n");
  fs::permissions(p, executable ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write);
}

TEST(VendorDetect, PrefersHabana) {
  testing::TempDir dir;
  make_tool(dir.path() / "hl-smi");
  make_tool(dir.path() / "nvidia-smi");
  InventoryConfig c;
  c.path_env = "/nonexistent:" + dir.path().string();
  auto v = detect_vendor(c);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, api::Vendor::habana);
}

TEST(VendorDetect, FallsBackToNvidia) {
  testing::TempDir dir;
  make_tool(dir.path() / "nvidia-smi");
  make_tool(dir.path() / "hl-smi-not-exec", false);
  InventoryConfig c;
  c.path_env = dir.path().string();
  EXPECT_EQ(*detect_vendor(c), api::Vendor::nvidia);
  // An explicit hl-smi path that is not executable does not count.
  c.hl_smi = (dir.path() / "hl-smi-not-exec").string();
  EXPECT_EQ(*detect_vendor(c), api::Vendor::nvidia);
}

TEST(VendorDetect, ExplicitPathWins) {
  testing::TempDir dir;
  make_tool(dir.path() / "bin" / "my-hl-smi");
  InventoryConfig c;
  c.path_env = "";
  c.hl_smi = (dir.path() / "bin" / "my-hl-smi").string();
  EXPECT_EQ(*detect_vendor(c), api::Vendor::habana);
}

TEST(VendorDetect, NothingFound) {
  InventoryConfig c;
  c.path_env = "/nonexistent";
  auto v = detect_vendor(c);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().message,
            "no hl-smi, nvidia-smi, amd-smi, npu-smi, xpu-smi, neuron-ls, mthreads-gmi, cnmon or TPU chip found");
  ProcessRunner runner;
  auto source = make_inventory_source("auto", runner, c);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.error().message,
            "no hl-smi, nvidia-smi, amd-smi, npu-smi, xpu-smi, neuron-ls, mthreads-gmi, cnmon or TPU chip found");
  EXPECT_FALSE(make_inventory_source("rocm", runner, c).ok());
  EXPECT_TRUE(make_inventory_source("tpu", runner, c).ok());     // Explicit: fails later, on read().
  EXPECT_TRUE(make_inventory_source("nvidia", runner, c).ok());  // Explicit: fails later, on read().
  EXPECT_TRUE(make_inventory_source("amd", runner, c).ok());
  EXPECT_TRUE(make_inventory_source("ascend", runner, c).ok());
  EXPECT_TRUE(make_inventory_source("intel", runner, c).ok());
  EXPECT_TRUE(make_inventory_source("neuron", runner, c).ok());
  EXPECT_TRUE(make_inventory_source("mthreads", runner, c).ok());
  EXPECT_TRUE(make_inventory_source("cambricon", runner, c).ok());
}

}  // namespace
}  // namespace tessel::agent
