// CDI specs per card (issue 29): the spec built for a node's cards with stand-in
// device nodes (plain files: only their names count) under a temp dev root, and the
// agent's writer of DIR/tessel-<class>.json (--cdi-spec-dir).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "files.hpp"
#include "test_util.hpp"
#include "tessel/agent/cdi_spec.hpp"
#include "tessel/agent/cdi_spec_writer.hpp"
#include "tessel/agent/durable_file.hpp"

using namespace tessel::agent;
using nlohmann::json;

namespace {

void put(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "";
}

api::NodeInventory inventory(api::Vendor vendor, int cards) {
  api::NodeInventory inv;
  inv.vendor = vendor;
  for (int i = 0; i < cards; ++i) {
    api::Device d;
    d.index = i;
    d.module_id = i;
    inv.devices.push_back(d);
  }
  return inv;
}

// An 8-card Gaudi node: accel/accelN and accel/accel_controlDN for N in 0..7.
void gaudi_nodes(const testkit::TempDir& dev) {
  for (int n = 0; n < 8; ++n) {
    put(dev.str("accel/accel" + std::to_string(n)));
    put(dev.str("accel/accel_controlD" + std::to_string(n)));
  }
}

json node(const std::string& dev_root, const std::string& rel) {
  return json{{"path", "/dev/" + rel}, {"hostPath", dev_root + "/" + rel}};
}

json spec_of(const api::NodeInventory& inv, const testkit::TempDir& dev) {
  auto text = node_cdi_spec(inv, dev.str(), dev.str("no-sys"));
  return text ? json::parse(*text) : json();
}

// The device named `name` of `spec`; null when there is none.
json device_named(const json& spec, const std::string& name) {
  for (const json& d : spec["devices"])
    if (d.value("name", "") == name) return d;
  return json();
}

struct CannedInventory : InventorySource {
  Result<api::NodeInventory> read() override { return next; }
  Result<api::NodeInventory> next = api::NodeInventory{};
};

}  // namespace

TEST(CdiSpec, EightGaudiCardsEachWithItsOwnNodesAndAllWithEvery) {
  testkit::TempDir dev("dev");
  gaudi_nodes(dev);
  const std::string d = dev.str();
  const json spec = spec_of(inventory(api::Vendor::habana, 8), dev);
  ASSERT_TRUE(spec.is_object());
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "tessel.dev/gaudi");
  std::vector<std::string> names;
  for (const json& dv : spec["devices"]) names.push_back(dv.value("name", ""));
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "all"}));
  json all = json::array();
  for (int n = 0; n < 8; ++n) {
    const std::string i = std::to_string(n);
    const json own = json::array({node(d, "accel/accel" + i), node(d, "accel/accel_controlD" + i)});
    EXPECT_EQ(device_named(spec, i)["containerEdits"], json({{"deviceNodes", own}})) << i;
    for (const json& x : own) all.push_back(x);
  }
  EXPECT_EQ(device_named(spec, "all")["containerEdits"], json({{"deviceNodes", all}}));
  EXPECT_FALSE(spec.contains("containerEdits")) << spec.dump();  // Gaudi has no shared control node.
}

TEST(CdiSpec, TheVendorsSharedNodesPresentAreAtSpecLevelOnly) {
  testkit::TempDir dev("dev");
  for (const char* f : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"}) put(dev.str(f));  // No nvidia-modeset.
  const std::string d = dev.str();
  const json spec = spec_of(inventory(api::Vendor::nvidia, 2), dev);
  EXPECT_EQ(spec["kind"], "tessel.dev/nvidia");
  EXPECT_EQ(spec["containerEdits"],
            json({{"deviceNodes", json::array({node(d, "nvidiactl"), node(d, "nvidia-uvm")})}}));
  EXPECT_EQ(device_named(spec, "1")["containerEdits"], json({{"deviceNodes", json::array({node(d, "nvidia1")})}}));
  EXPECT_EQ(device_named(spec, "all")["containerEdits"]["deviceNodes"].size(), 2U);
}

TEST(CdiSpec, OnlyTheInventorysCardsThatHaveNodes) {
  testkit::TempDir dev("dev");
  gaudi_nodes(dev);
  std::filesystem::remove(dev.str("accel/accel2"));
  std::filesystem::remove(dev.str("accel/accel_controlD2"));
  const json spec = spec_of(inventory(api::Vendor::habana, 4), dev);  // Cards 0-3 reported; nodes of 0-7 there.
  std::vector<std::string> names;
  for (const json& dv : spec["devices"]) names.push_back(dv.value("name", ""));
  EXPECT_EQ(names, (std::vector<std::string>{"0", "1", "3", "all"}));
  EXPECT_EQ(device_named(spec, "all")["containerEdits"]["deviceNodes"].size(), 6U);
}

TEST(CdiSpec, NoSpecForANodeWithoutCardsOrWithoutTheirNodes) {
  testkit::TempDir dev("dev");
  EXPECT_FALSE(node_cdi_spec(inventory(api::Vendor::habana, 8), dev.str(), dev.str("no-sys")));  // No nodes.
  gaudi_nodes(dev);
  EXPECT_FALSE(node_cdi_spec(inventory(api::Vendor::habana, 0), dev.str(), dev.str("no-sys")));  // No cards.
}

TEST(CdiSpec, EveryVendorHasAStableLowercaseClassOfItsOwn) {
  std::set<std::string> seen;
  for (api::Vendor v : api::supported_vendors()) {
    const std::string c = cdi_class(v);
    EXPECT_EQ(c.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789"), std::string::npos) << c;
    EXPECT_TRUE(seen.insert(c).second) << c;
    EXPECT_EQ(cdi_kind(v), "tessel.dev/" + c);
  }
  EXPECT_EQ(cdi_class(api::Vendor::habana), "gaudi");
}

TEST(CdiSpecDir, MustBeAnAbsolutePathToADirectory) {
  testkit::TempDir tmp("cdi");
  put(tmp.str("file"));
  EXPECT_TRUE(check_cdi_spec_dir(tmp.str()).ok());
  for (const std::string& bad : {std::string("cdi"), tmp.str("missing"), tmp.str("file")}) {
    const auto st = check_cdi_spec_dir(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().message.rfind("--cdi-spec-dir " + bad + ": ", 0), 0U) << st.error().message;
  }
  EXPECT_EQ(cdi_spec_path("/etc/cdi", api::Vendor::habana), "/etc/cdi/tessel-gaudi.json");
}

TEST(CdiSpecSource, WritesTheSpecAndFollowsTheCardsUntilThereAreNone) {
  testkit::TempDir dev("dev"), dir("cdi");
  gaudi_nodes(dev);
  put(dir.str("tessel-gaudi.json"));  // Left by an earlier agent.
  CannedInventory inner;
  CdiSpecSource source(inner, dir.str(), dev.str(), dev.str("no-sys"));
  const std::string path = dir.str("tessel-gaudi.json");
  inner.next = inventory(api::Vendor::habana, 8);
  ASSERT_TRUE(source.read().ok());
  EXPECT_EQ(testkit::read_file(path), *node_cdi_spec(inventory(api::Vendor::habana, 8), dev.str(), dev.str("no-sys")));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644U);  // Any user's podman may read it.
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  inner.next = Error{"hl-smi exited 3"};  // A failed read leaves the spec as it was.
  EXPECT_FALSE(source.read().ok());
  EXPECT_EQ(json::parse(testkit::read_file(path))["devices"].size(), 9U);

  inner.next = inventory(api::Vendor::habana, 2);
  ASSERT_TRUE(source.read().ok());
  EXPECT_EQ(json::parse(testkit::read_file(path))["devices"].size(), 3U);  // 0, 1, all.

  inner.next = inventory(api::Vendor::habana, 0);
  ASSERT_TRUE(source.read().ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(CdiSpecSource, AFailedWriteFailsNoReadAndIsRetriedAtTheNext) {
  testkit::TempDir dev("dev"), tmp("cdi");
  gaudi_nodes(dev);
  const std::string dir = tmp.str("specs");  // Not there yet: writes fail.
  CannedInventory inner;
  inner.next = inventory(api::Vendor::habana, 8);
  CdiSpecSource source(inner, dir, dev.str(), dev.str("no-sys"));
  const auto st = source.update(*inner.next);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("writing " + dir + "/tessel-gaudi.json: open " + dir + "/tessel-gaudi.json.tmp: "),
            std::string::npos)
      << st.error().message;
  EXPECT_TRUE(source.read().ok());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(source.read().ok());
  EXPECT_EQ(json::parse(testkit::read_file(dir + "/tessel-gaudi.json"))["kind"], "tessel.dev/gaudi");
}
