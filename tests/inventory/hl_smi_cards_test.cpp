// hl-smi's per-card outputs beyond -Q: port link state (-n link) and firmware (-L).
#include "tessel/agent/hl_smi_cards.hpp"

#include <gtest/gtest.h>

#include "tessel/agent/smi_parse.hpp"
#include "test_util.hpp"

namespace tessel::agent::smi {
namespace {

using testing::fixture;

std::string error_of(const Result<std::map<std::string, CardPorts>>& r) {
  return r.ok() ? std::string("(ok)") : r.error().message;
}

std::vector<api::Device> gaudi2_devices() {
  auto parsed = parse_hl_smi(fixture("hl-smi/gaudi2-hl225-8.csv"));
  EXPECT_TRUE(parsed.ok());
  return parsed.ok() ? parsed->devices : std::vector<api::Device>{};
}

TEST(HlSmiLink, EveryCardUp) {
  auto r = parse_hl_smi_link(fixture("hl-smi/link-gaudi2-hl225-8.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  ASSERT_EQ(r->size(), 8u);
  EXPECT_EQ(r->at("0000:19:00.0").up.size(), 18u);
  EXPECT_TRUE(r->at("0000:cc:00.0").down.empty());
  auto devices = gaudi2_devices();
  ASSERT_TRUE(merge_ports(*r, devices).ok());
  for (const auto& d : devices) {
    EXPECT_EQ(d.ports_total, 18);
    EXPECT_EQ(d.ports_up, 18);
    EXPECT_TRUE(d.ports_down.empty());
  }
}

TEST(HlSmiLink, OnePortDown) {
  auto r = parse_hl_smi_link(fixture("hl-smi/link-gaudi2-hl225-8-port-down.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->at("0000:cc:00.0").down, (std::vector<int>{21}));
  auto devices = gaudi2_devices();
  ASSERT_TRUE(merge_ports(*r, devices).ok());
  api::NodeInventory inv;
  inv.devices = devices;
  EXPECT_EQ(api::modules_with_ports_down(inv), "module 5");
  for (const auto& d : devices) {
    if (d.module_id != 5) continue;
    EXPECT_EQ(d.bus_id, "0000:cc:00.0");
    EXPECT_EQ(d.ports_up, 17);
    EXPECT_EQ(d.ports_total, 18);
    EXPECT_EQ(d.ports_down, (std::vector<int>{21}));
  }
}

TEST(HlSmiLink, RealPerCardOutputWithoutHeaderGoesToTheOnlyCard) {
  auto r = parse_hl_smi_link(fixture("hl-smi/raw-link-one-card.txt"));
  ASSERT_TRUE(r.ok()) << error_of(r);
  ASSERT_EQ(r->count(""), 1u);
  std::vector<api::Device> one(1);
  ASSERT_TRUE(merge_ports(*r, one).ok());
  EXPECT_EQ(one[0].ports_total, 18);
  auto eight = gaudi2_devices();
  auto st = merge_ports(*r, eight);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "hl-smi -n link printed ports without naming the card, and the node has 8 cards");
}

TEST(HlSmiLink, SpacingCaseAndCrlfDoNotMatter) {
  auto r = parse_hl_smi_link("=== 0000:BB:00.0 ===\r\nPort 3:down\r\n\r\nport   4 :  Up\r\n");
  ASSERT_TRUE(r.ok()) << error_of(r);
  EXPECT_EQ(r->at("0000:bb:00.0").down, (std::vector<int>{3}));
  EXPECT_EQ(r->at("0000:bb:00.0").up, (std::vector<int>{4}));
}

TEST(HlSmiLink, MalformedOutputIsAnErrorNamingTheLine) {
  EXPECT_EQ(error_of(parse_hl_smi_link("[0] AIP (accel0) 0000:19:00.0\nport 1: FLAPPING\n")),
            "hl-smi -n link line 2: state must be UP or DOWN: \"port 1: FLAPPING\"");
  EXPECT_EQ(error_of(parse_hl_smi_link("port 1: UP\nport 1: DOWN\n")),
            "hl-smi -n link line 2: port listed twice: \"port 1: DOWN\"");
  EXPECT_EQ(error_of(parse_hl_smi_link("port x: UP\n")),
            "hl-smi -n link line 1: port number: expected an integer, got \"x\": \"port x: UP\"");
  EXPECT_EQ(error_of(parse_hl_smi_link("port 300: UP\n")),
            "hl-smi -n link line 1: port number: value 300 exceeds 255: \"port 300: UP\"");
  EXPECT_EQ(error_of(parse_hl_smi_link("#!@ this is not it\n")),
            "hl-smi -n link line 1: neither a card header nor a port line: \"#!@ this is not it\"");
  EXPECT_EQ(error_of(parse_hl_smi_link("port 1: UP\n[0] AIP (accel0) 0000:19:00.0\nport 1: UP\n")),
            "hl-smi -n link: port lines before the first card header");
  EXPECT_EQ(error_of(parse_hl_smi_link("0000:19:00.0\n0000:19:00.0\n")),
            "hl-smi -n link line 2: card listed twice: \"0000:19:00.0\"");
}

TEST(HlSmiLink, EmptyOutputGivesNoPortState) {
  auto r = parse_hl_smi_link("");
  ASSERT_TRUE(r.ok());
  auto devices = gaudi2_devices();
  ASSERT_TRUE(merge_ports(*r, devices).ok());
  EXPECT_EQ(devices[0].ports_total, std::nullopt);
}

TEST(HlSmiLink, CardThatHlSmiQDidNotListIsAnError) {
  auto r = parse_hl_smi_link("[9] AIP (accel9) 0000:99:00.0\nport 1: UP\n");
  ASSERT_TRUE(r.ok());
  auto devices = gaudi2_devices();
  auto st = merge_ports(*r, devices);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "hl-smi -n link lists card 0000:99:00.0, which hl-smi -Q did not");
}

TEST(HlSmiFirmware, RealListingAndVersionsThatDiffer) {
  auto fw = parse_hl_smi_firmware(fixture("hl-smi/raw-list-gaudi2-firmware.txt"));
  ASSERT_EQ(fw.size(), 2u);
  EXPECT_EQ(fw.at("0000:43:00.0"), "hl-gaudi2-1.12.1-fw-46.0.5-sec-6");
  EXPECT_EQ(fw.at("0000:44:00.0"), "hl-gaudi2-1.20.0-fw-58.0.0-sec-9");
}

TEST(HlSmiFirmware, OlderListingWithoutFirmwareGivesNone) {
  EXPECT_TRUE(parse_hl_smi_firmware(fixture("hl-smi/raw-list-no-firmware.txt")).empty());
  EXPECT_TRUE(parse_hl_smi_firmware("").empty());
  EXPECT_TRUE(parse_hl_smi_firmware("Firmware [SPI] Version : x\n").empty());  // No card header before it.
}

TEST(HlSmiFirmware, VersionWithoutFwWordIsTheValueBeforeTheDate) {
  auto fw = parse_hl_smi_firmware("[0] AIP (accel0) 0000:19:00.0\n  Firmware [SPI] Version : Preboot 7.1 (Jan 1)\n");
  EXPECT_EQ(fw.at("0000:19:00.0"), "Preboot 7.1");
}

}  // namespace
}  // namespace tessel::agent::smi
