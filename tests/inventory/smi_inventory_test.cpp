// SmiInventory end to end: the real runner, the fake tools, a temp sysfs tree.
#include "tessel/agent/smi_inventory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_util.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

class SmiInventoryTest : public ::testing::Test {
 protected:
  InventoryConfig config() const {
    InventoryConfig c;
    c.hl_smi = FAKE_HL_SMI_PATH;
    c.nvidia_smi = FAKE_NVIDIA_SMI_PATH;
    c.sysfs_root = sysfs_.path();
    c.timeout = 10s;
    c.path_env = "";
    return c;
  }
  std::string read_error(InventorySource& source) {
    auto r = source.read();
    return r.ok() ? std::string("(ok)") : r.error().message;
  }

  testing::TempDir sysfs_;
  testing::TempDir scratch_;
  ProcessRunner runner_;
  ScopedEnv hl_fixture_{"FAKE_HL_SMI_FIXTURE", testing::fixture_path("hl-smi/gaudi2-hl225-8.csv")};
  ScopedEnv nv_fixture_{"FAKE_NVIDIA_SMI_FIXTURE", testing::fixture_path("nvidia-smi/h200-8.csv")};
};

TEST_F(SmiInventoryTest, ReadsGaudiNode) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "normal");
  auto source = make_hl_smi_inventory(runner_, config());
  auto inv = source->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::habana);
  EXPECT_EQ(inv->driver_version, "1.17.0-e4d8f8b");
  ASSERT_EQ(inv->devices.size(), 8u);
  std::vector<int> modules;
  for (const auto& d : inv->devices) modules.push_back(d.module_id);
  EXPECT_EQ(modules, (std::vector<int>{1, 3, 2, 6, 0, 7, 5, 4}));
  EXPECT_EQ(inv->devices[0].memory_total_mib, 98304);
  EXPECT_EQ(inv->ports_error, "");  // The fake's default port state: three ports per card, all up.
  for (const auto& d : inv->devices) {
    EXPECT_EQ(d.ports_total, 3);
    EXPECT_EQ(d.ports_up, 3);
  }
}

TEST_F(SmiInventoryTest, ReadsNvidiaNode) {
  ScopedEnv mode("FAKE_NVIDIA_SMI_MODE", "normal");
  auto source = make_nvidia_smi_inventory(runner_, config());
  auto inv = source->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->vendor, api::Vendor::nvidia);
  ASSERT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->devices[0].power_w, 227);
  EXPECT_EQ(inv->devices[3].uuid, "GPU-a1b2c3d3-1b2c-4d5e-8f90-001234567893");
  EXPECT_EQ(inv->devices[3].module_id, 3);
}

TEST_F(SmiInventoryTest, FailureModesGiveClearMessages) {
  auto source = make_hl_smi_inventory(runner_, config());
  {
    ScopedEnv mode("FAKE_HL_SMI_MODE", "fail");
    EXPECT_EQ(read_error(*source),
              "hl-smi exited 3: hl-smi: failed to open device (fake failure) | second line of detail");
  }
  {
    ScopedEnv mode("FAKE_HL_SMI_MODE", "garbage");
    EXPECT_EQ(read_error(*source), "hl-smi line 1: expected 12 fields, got 1: \"#!@ this is not csv\"");
  }
  {
    ScopedEnv mode("FAKE_HL_SMI_MODE", "crash");
    EXPECT_EQ(read_error(*source).rfind("hl-smi killed by signal 11 (SIGSEGV)", 0), 0u) << read_error(*source);
  }
}

TEST_F(SmiInventoryTest, HungToolTimesOut) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "hang");
  InventoryConfig c = config();
  c.timeout = 300ms;
  auto source = make_hl_smi_inventory(runner_, c);
  EXPECT_EQ(read_error(*source), "hl-smi timed out after 0.3 s");
  ScopedEnv nv_mode("FAKE_NVIDIA_SMI_MODE", "hang");
  EXPECT_EQ(read_error(*make_nvidia_smi_inventory(runner_, c)), "nvidia-smi timed out after 0.3 s");
}

TEST_F(SmiInventoryTest, MissingTool) {
  InventoryConfig c = config();
  c.hl_smi = "/nonexistent/hl-smi";
  EXPECT_EQ(read_error(*make_hl_smi_inventory(runner_, c)), "hl-smi not found at /nonexistent/hl-smi");
  c.hl_smi = "hl-smi";
  c.path_env = "/nonexistent:/also-not-there";
  EXPECT_EQ(read_error(*make_hl_smi_inventory(runner_, c)), "hl-smi not found in PATH");
}

TEST_F(SmiInventoryTest, FindsToolByNameInPath) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "normal");
  InventoryConfig c = config();
  c.hl_smi = "hl-smi";
  c.path_env = "/nonexistent:" + std::filesystem::path(FAKE_HL_SMI_PATH).parent_path().string();
  auto inv = make_hl_smi_inventory(runner_, c)->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->devices.size(), 8u);
}

TEST_F(SmiInventoryTest, ModeFileChangesBehaviourOfTheSameSource) {
  auto mode_file = scratch_.path() / "mode";
  ScopedEnv mode_env("FAKE_HL_SMI_MODE_FILE", mode_file.string());
  auto source = make_hl_smi_inventory(runner_, config());
  testing::write_file(mode_file, "fail\n");
  EXPECT_EQ(read_error(*source).rfind("hl-smi exited 3", 0), 0u);
  testing::write_file(mode_file, "normal\n");
  EXPECT_EQ(read_error(*source), "(ok)");
}

TEST_F(SmiInventoryTest, UnhealthyCardRecovers) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "normal");
  auto source = make_hl_smi_inventory(runner_, config());
  testing::write_sysfs_status(sysfs_.path(), 2, "in reset\n");
  auto sick = source->read();
  ASSERT_TRUE(sick.ok()) << sick.error().message;
  EXPECT_FALSE(sick->devices[2].healthy);
  EXPECT_EQ(sick->devices[2].health_reason, "sysfs status \"in reset\"");
  EXPECT_TRUE(sick->devices[1].healthy);

  testing::write_sysfs_status(sysfs_.path(), 2, "operational\n");
  auto well = source->read();
  ASSERT_TRUE(well.ok());
  EXPECT_TRUE(well->devices[2].healthy);
  EXPECT_EQ(well->devices[2].health_reason, "");
}

TEST_F(SmiInventoryTest, NotAvailableTelemetryStillHealthy) {
  ScopedEnv fixture("FAKE_HL_SMI_FIXTURE", testing::fixture_path("hl-smi/gaudi2-na-telemetry.csv"));
  ScopedEnv mode("FAKE_HL_SMI_MODE", "normal");
  auto inv = make_hl_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->devices[1].power_w, std::nullopt);
  EXPECT_TRUE(inv->devices[1].healthy);
}

TEST_F(SmiInventoryTest, GaudiPortsAndFirmware) {
  ScopedEnv fixture("FAKE_HL_SMI_FIXTURE", testing::fixture_path("hl-smi/gaudi2-hl225-8-fw.csv"));
  ScopedEnv down("FAKE_HL_SMI_PORTS_DOWN", "5:1");
  auto inv = make_hl_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->ports_error, "");
  for (const auto& d : inv->devices) {
    EXPECT_EQ(d.firmware_version, "hl-gaudi2-1.17.0-fw-51.2.0-sec-9");
    EXPECT_EQ(d.ports_total, 3);
    EXPECT_EQ(d.ports_down, d.module_id == 5 ? std::vector<int>{1} : std::vector<int>{});
    EXPECT_EQ(d.ports_up, d.module_id == 5 ? 2 : 3);
    EXPECT_TRUE(d.healthy);  // A port down does not make the card unhealthy.
  }
}

TEST_F(SmiInventoryTest, GaudiPortsFromALinkFixture) {
  ScopedEnv link("FAKE_HL_SMI_LINK_FIXTURE", testing::fixture_path("hl-smi/link-gaudi2-hl225-8-port-down.txt"));
  auto inv = make_hl_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(api::modules_with_ports_down(*inv), "module 5");
  EXPECT_EQ(inv->devices[0].firmware_version, "unknown");  // The fixture has no firmware column.
}

// Counts the calls that reach the real runner, by their arguments.
class CountingRunner final : public CommandRunner {
 public:
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override {
    std::string args;
    for (size_t i = 1; i < argv.size(); ++i) args += (i > 1 ? " " : "") + argv[i];
    calls.push_back(args);
    return real_.run(argv, timeout);
  }
  int count_prefix(const std::string& prefix) const {
    return static_cast<int>(
        std::count_if(calls.begin(), calls.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; }));
  }
  std::vector<std::string> calls;

 private:
  ProcessRunner real_;
};

// One `hl-smi -n link -i BUS` per card, on the first read and every ports_every reads;
// reads in between keep the last port state.
TEST_F(SmiInventoryTest, PortsAreReadPerCardEveryFewReads) {
  ScopedEnv down("FAKE_HL_SMI_PORTS_DOWN", "5:1");
  CountingRunner counting;
  InventoryConfig c = config();
  c.ports_every = 3;
  auto source = make_hl_smi_inventory(counting, c);
  for (int read = 1; read <= 4; ++read) {
    auto inv = source->read();
    ASSERT_TRUE(inv.ok()) << inv.error().message;
    EXPECT_EQ(api::modules_with_ports_down(*inv), "module 5") << "read " << read;
    EXPECT_EQ(inv->devices[0].ports_total, 3) << "read " << read;
    EXPECT_EQ(counting.count_prefix("-n link -i "), read < 4 ? 8 : 16) << "read " << read;
  }
  EXPECT_EQ(counting.count_prefix("-n link -i 0000:cc:00.0"), 2);  // Module 5's card, by its bus id.
  EXPECT_EQ(counting.count_prefix("-n link"), 16);                 // Never the all-card form.
}

TEST_F(SmiInventoryTest, PortQueryFailureKeepsTheInventory) {
  const auto garbage = scratch_.path() / "link.txt";
  testing::write_file(garbage, "#!@ this is not it\n");
  ScopedEnv link("FAKE_HL_SMI_LINK_FIXTURE", garbage.string());
  auto inv = make_hl_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->devices.size(), 8u);
  EXPECT_EQ(inv->ports_error,
            "reading ports: hl-smi -n link line 1: neither a card header nor a port line: \"#!@ this is not it\"");
  for (const auto& d : inv->devices) EXPECT_EQ(d.ports_total, std::nullopt);
  EXPECT_EQ(api::modules_with_ports_down(*inv), "");
}

TEST_F(SmiInventoryTest, OlderHlSmiWithoutVersionsReadsUnknown) {
  ScopedEnv fixture("FAKE_HL_SMI_FIXTURE", testing::fixture_path("hl-smi/gaudi2-no-versions.csv"));
  auto inv = make_hl_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->driver_version, "unknown");
  EXPECT_EQ(inv->devices[0].firmware_version, "unknown");
}

TEST_F(SmiInventoryTest, NvidiaHasNoPortsAndNoFirmware) {
  auto inv = make_nvidia_smi_inventory(runner_, config())->read();
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(inv->devices[0].ports_total, std::nullopt);
  EXPECT_EQ(inv->devices[0].firmware_version, "");
  EXPECT_EQ(inv->ports_error, "");
}

// A runner that records the command and answers with a canned result.
class CannedRunner final : public CommandRunner {
 public:
  explicit CannedRunner(Result<CommandResult> answer) : answer_(std::move(answer)) {}
  Result<CommandResult> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override {
    argv_ = argv;
    timeout_ = timeout;
    return answer_;
  }
  std::vector<std::string> argv_;
  std::chrono::milliseconds timeout_{0};

 private:
  Result<CommandResult> answer_;
};

TEST_F(SmiInventoryTest, AsksForTheDocumentedFieldsAndFormat) {
  CommandResult ok;
  ok.exit_code = 0;
  CannedRunner hl(ok);
  InventoryConfig c = config();
  c.timeout = 2500ms;
  ASSERT_TRUE(make_hl_smi_inventory(hl, c)->read().ok());
  EXPECT_EQ(hl.argv_, (std::vector<std::string>{FAKE_HL_SMI_PATH, "-Q",
                                                "index,module_id,bus_id,name,serial,uuid,driver_version,memory.total,"
                                                "memory.used,utilization.aip,temperature.aip,power.draw",
                                                "-f", "csv,noheader,nounits"}));
  EXPECT_EQ(hl.timeout_, 2500ms);
  CannedRunner nv(ok);
  ASSERT_TRUE(make_nvidia_smi_inventory(nv, c)->read().ok());
  EXPECT_EQ(nv.argv_, (std::vector<std::string>{FAKE_NVIDIA_SMI_PATH,
                                                "--query-gpu=index,pci.bus_id,name,serial,uuid,driver_version,"
                                                "memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw",
                                                "--format=csv,noheader,nounits"}));
}

TEST_F(SmiInventoryTest, RunnerErrorsPassThrough) {
  CannedRunner broken(Error{"starting x: Permission denied"});
  EXPECT_EQ(read_error(*make_hl_smi_inventory(broken, config())), "starting x: Permission denied");
  CommandResult no_stderr;
  no_stderr.exit_code = 1;
  CannedRunner quiet(no_stderr);
  EXPECT_EQ(read_error(*make_hl_smi_inventory(quiet, config())), "hl-smi exited 1: (no stderr)");
}

}  // namespace
}  // namespace tessel::agent
