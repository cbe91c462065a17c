// Round trip: fixture -> render_csv (what the fake tools print) -> parser.
#include "tessel/agent/smi_render.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "tessel/agent/smi_parse.hpp"
#include "test_util.hpp"

namespace tessel::agent::smi {
namespace {

using testing::fixture;

struct Case {
  const Dialect* dialect;
  std::string file;
};

std::vector<Case> cases() {
  return {{&hl_smi_dialect(), "hl-smi/gaudi1-hl205-8.csv"},      {&hl_smi_dialect(), "hl-smi/gaudi2-hl225-8.csv"},
          {&hl_smi_dialect(), "hl-smi/gaudi3-hl325l-8.csv"},     {&hl_smi_dialect(), "hl-smi/gaudi2-4card.csv"},
          {&hl_smi_dialect(), "hl-smi/gaudi2-na-telemetry.csv"}, {&nvidia_smi_dialect(), "nvidia-smi/h100-8.csv"},
          {&nvidia_smi_dialect(), "nvidia-smi/h200-8.csv"}};
}

TEST(SmiRender, EveryFixtureRoundTripsInEveryFormat) {
  for (const Case& c : cases()) {
    std::string text = fixture(c.file);
    auto table = read_fixture(*c.dialect, text);
    ASSERT_TRUE(table.ok()) << c.file << ": " << table.error().message;
    auto expected = parse_devices(*c.dialect, text, {});  // The fixture itself, header-mapped.
    ASSERT_TRUE(expected.ok()) << c.file << ": " << expected.error().message;
    ASSERT_FALSE(expected->devices.empty());

    std::vector<std::string> reversed = c.dialect->default_query;
    std::reverse(reversed.begin(), reversed.end());
    for (const auto& query : {c.dialect->default_query, reversed}) {
      for (bool header : {true, false}) {
        for (bool units : {true, false}) {
          SCOPED_TRACE(c.file + (header ? " header" : " noheader") + (units ? " units" : " nounits"));
          auto out = render_csv(*c.dialect, *table, query, Format{header, units});
          ASSERT_TRUE(out.ok()) << out.error().message;
          auto parsed = parse_devices(*c.dialect, *out, query);
          ASSERT_TRUE(parsed.ok()) << parsed.error().message << "\n" << *out;
          EXPECT_EQ(parsed->devices, expected->devices);
          EXPECT_EQ(parsed->driver_version, expected->driver_version);
        }
      }
    }
  }
}

TEST(SmiRender, PrintsLikeTheRealTool) {
  auto table = read_fixture(hl_smi_dialect(), "index, module_id, memory.used [MiB], power.draw\n0, 3, 672, N/A\n");
  ASSERT_TRUE(table.ok()) << table.error().message;
  auto out = render_csv(hl_smi_dialect(), *table, {"module_id", "memory.used", "power.draw"}, Format{true, true});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "module_id, memory.used [MiB], power.draw [W]\n3, 672 MiB, N/A\n");
  auto bare = render_csv(hl_smi_dialect(), *table, {"memory.used"}, Format{false, false});
  EXPECT_EQ(*bare, "672\n");
  auto header_nounits = render_csv(hl_smi_dialect(), *table, {"memory.used"}, Format{true, false});
  EXPECT_EQ(*header_nounits, "memory.used [MiB]\n672\n");
}

TEST(SmiRender, Errors) {
  auto table = read_fixture(hl_smi_dialect(), "index, module_id\n0, 3\n");
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE(render_csv(hl_smi_dialect(), *table, {"bogus"}, Format{}).ok());
  EXPECT_FALSE(render_csv(hl_smi_dialect(), *table, {"serial"}, Format{}).ok());  // Not in the fixture.
  EXPECT_FALSE(read_fixture(hl_smi_dialect(), "0, 3\n").ok());                    // No header.
  EXPECT_FALSE(read_fixture(hl_smi_dialect(), "").ok());
}

TEST(SmiRender, FormatSpec) {
  auto f = parse_format("csv,noheader,nounits");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->header);
  EXPECT_FALSE(f->units);
  EXPECT_TRUE(parse_format("csv")->header);
  EXPECT_FALSE(parse_format("csv,nounits")->units);
  EXPECT_FALSE(parse_format("json").ok());
  EXPECT_FALSE(parse_format("noheader").ok());
}

}  // namespace
}  // namespace tessel::agent::smi
