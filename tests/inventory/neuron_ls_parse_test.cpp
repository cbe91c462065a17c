// The neuron-ls JSON parser on recorded and assembled outputs (tests/fixtures/neuron-ls,
// README there): devices, NeuronCore counts and their global ids, malformed input.
#include "tessel/agent/neuron_ls_parse.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace tessel::agent::neuron {
namespace {

using testing::fixture;

std::string parse_error(std::string_view text) {
  auto r = parse_neuron_ls(text);
  return r.ok() ? std::string("(ok)") : r.error().message;
}

TEST(NeuronLsParse, RealTrn2SingleDevice) {
  auto r = parse_neuron_ls(fixture("neuron-ls/trn2-3xlarge-1.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 1u);
  const api::Device& d = r->devices[0];
  EXPECT_EQ(d.index, 0);
  EXPECT_EQ(d.module_id, 0);
  EXPECT_EQ(d.model, "trn2");
  EXPECT_EQ(d.cores, 4);  // Logical NeuronCores (LNC=2: 8 physical).
  EXPECT_EQ(d.bus_id, "0000:33:00.0");
  EXPECT_EQ(d.uuid, "NEURON-0000:33:00.0");
  EXPECT_EQ(d.memory_total_mib, 98304);  // 96 GiB.
  EXPECT_TRUE(d.healthy);
  EXPECT_EQ(r->driver_version, "");
}

TEST(NeuronLsParse, Trn2SixteenDevices) {
  auto r = parse_neuron_ls(fixture("neuron-ls/trn2-48xlarge-16.json"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(r->devices[i].index, i);
    EXPECT_EQ(r->devices[i].cores, 4);
  }
  EXPECT_EQ(r->devices[0].bus_id, "cc:00.0");
  EXPECT_EQ(r->devices[15].uuid, "NEURON-f7:00.0");
  EXPECT_EQ(r->devices[15].model, "");  // This neuron-ls prints no instance_type.
}

TEST(NeuronLsParse, OlderOutputWithNcCountOnly) {
  auto r = parse_neuron_ls(R"([{"neuron_device": 1, "bdf": "10:1C.0", "nc_count": 2}, {"neuron_device": 0,
                               "nc_count": 2}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->devices.size(), 2u);
  EXPECT_EQ(r->devices[0].index, 0);
  EXPECT_EQ(r->devices[0].uuid, "");
  EXPECT_EQ(r->devices[1].cores, 2);
  EXPECT_EQ(r->devices[1].uuid, "NEURON-10:1c.0");
}

TEST(NeuronLsParse, CoreIdsWinOverNcCount) {
  auto r = parse_neuron_ls(R"([{"neuron_device": 2, "nc_count": 8, "neuroncore_ids": [8, 9, 10, 11]}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->devices[0].cores, 4);
}

TEST(NeuronLsParse, EmptyListGivesNoDevices) {
  auto r = parse_neuron_ls("[]\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->devices.empty());
}

TEST(NeuronLsParse, MalformedInputNamesTheProblem) {
  EXPECT_EQ(parse_error(""), "neuron-ls: not JSON");
  EXPECT_EQ(parse_error("+--------+\n| NEURON |"), "neuron-ls: not JSON");
  EXPECT_EQ(parse_error("{}"), "neuron-ls: expected a JSON list of devices");
  EXPECT_EQ(parse_error("[3]"), "neuron-ls [0]: must be an object");
  EXPECT_EQ(parse_error(R"([{"nc_count": 2}])"), "neuron-ls [0].neuron_device: must be an integer 0..1023");
  EXPECT_EQ(parse_error(R"([{"neuron_device": 0}])"), "neuron-ls [0].nc_count: must be an integer 1..64");
  EXPECT_EQ(parse_error(R"([{"neuron_device": 0, "nc_count": 0}])"),
            "neuron-ls [0].nc_count: must be an integer 1..64");
  EXPECT_EQ(parse_error(R"([{"neuron_device": 0, "neuroncore_ids": []}])"),
            "neuron-ls [0].neuroncore_ids: must be a list of 1..64 core ids");
  // Ids that are not the device's block would make NEURON_RT_VISIBLE_CORES wrong.
  EXPECT_EQ(parse_error(R"([{"neuron_device": 3, "neuroncore_ids": [0, 1, 2, 3]}])"),
            "neuron-ls [0].neuroncore_ids: must be 12..15 (device 3 of 4 cores)");
  EXPECT_EQ(parse_error(R"([{"neuron_device": 1, "nc_count": 2}, {"neuron_device": 1, "nc_count": 2}])"),
            "neuron-ls: duplicate neuron_device 1");
  EXPECT_EQ(parse_error(R"([{"neuron_device": 0, "nc_count": 2, "bdf": 7}])"), "neuron-ls [0].bdf: must be a string");
  EXPECT_EQ(parse_error(R"([{"neuron_device": 0, "nc_count": 2, "memory_size": -1}])"),
            "neuron-ls [0].memory_size: must be a number of bytes");
}

TEST(NeuronLsParse, MoreThan64DevicesIsAnError) {
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < 65; ++i) list.push_back({{"neuron_device", i}, {"nc_count", 2}});
  EXPECT_EQ(parse_error(list.dump()), "neuron-ls: more than 64 devices");
}

}  // namespace
}  // namespace tessel::agent::neuron
