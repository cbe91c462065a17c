// Node labels and a job's node constraints (issue 32): the label rules, the
// inventory's agent labels on the wire, and the JobSpec's node_selector, nodelist and
// exclude (accepted, refused naming the field, the JSON round trip).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"
#include "tessel/api/labels.hpp"

#include "spec_checks.hpp"

using nlohmann::json;
using tessel::api::label_key_error;
using tessel::api::label_value_error;
using tessel::api::labels_from_json;
using tessel::api::parse_job_spec;
using tessel::api::parse_label;
using tessel::api::testing::error_field;
using tessel::api::testing::spec;

namespace {

TEST(Labels, KeysAreKubernetesKeys) {
  for (const char* ok : {"rack", "Rack_7", "a", "fabric.ib", "topology.tessel.io/rack", "example.com/x-y.z", "a-b/c"})
    EXPECT_EQ(label_key_error(ok), "") << ok;
  const std::string long_name(64, 'a');
  for (const std::string& bad :
       {std::string(), std::string("-rack"), std::string("rack-"), std::string("ra ck"), std::string("rack=7"),
        std::string("Example.com/rack"), std::string("/rack"), std::string("a/"), std::string("a/b/c"), long_name,
        std::string("räck"), std::string("rack\n")})
    EXPECT_NE(label_key_error(bad), "") << bad;
  EXPECT_EQ(label_key_error(std::string(63, 'a')), "");
  EXPECT_EQ(label_key_error(std::string(253, 'a') + "/x"), "");
  EXPECT_NE(label_key_error(std::string(254, 'a') + "/x"), "");
}

TEST(Labels, ValuesMayBeEmpty) {
  for (const char* ok : {"", "r7", "ib.hdr-200", "A_1"}) EXPECT_EQ(label_value_error(ok), "") << ok;
  for (const std::string& bad :
       {std::string("-r7"), std::string("r7."), std::string("r 7"), std::string("a/b"), std::string(64, 'v')})
    EXPECT_NE(label_value_error(bad), "") << bad;
}

TEST(Labels, ParseKeyEqualsValue) {
  auto l = parse_label("rack=r7", "--label");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->first, "rack");
  EXPECT_EQ(l->second, "r7");
  auto empty = parse_label("gpu-test=", "--label");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->second, "");
  for (const char* bad : {"rack", "=r7", "rack=r 7", "ra ck=r7"}) {
    auto r = parse_label(bad, "--label");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().field, "--label");
  }
}

TEST(Labels, FromJsonNamesTheField) {
  auto ok = labels_from_json(json{{"rack", "r7"}, {"fabric", "ib"}}, "labels");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->at("rack"), "r7");
  EXPECT_EQ(labels_from_json(json{{"rack", 7}}, "labels").error().field, "labels.rack");
  EXPECT_EQ(labels_from_json(json{{"rack", "r 7"}}, "labels").error().field, "labels.rack");
  EXPECT_EQ(labels_from_json(json{{"bad key", "r7"}}, "labels").error().field, "labels");
  EXPECT_EQ(labels_from_json(json::array(), "labels").error().field, "labels");
  json many = json::object();
  for (int i = 0; i < 65; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_FALSE(labels_from_json(many, "labels").ok());
  EXPECT_EQ(tessel::api::format_labels(*ok), "fabric=ib,rack=r7");
}

TEST(Labels, InventoryCarriesTheAgentsLabels) {
  tessel::api::NodeInventory inv;
  inv.vendor = tessel::api::Vendor::nvidia;
  json plain = tessel::api::to_json(inv);
  EXPECT_FALSE(plain.contains("labels"));
  inv.labels = {{"rack", "r7"}};
  json j = tessel::api::to_json(inv);
  EXPECT_EQ(j["labels"], json({{"rack", "r7"}}));
  j.erase("groups");
  auto back = tessel::api::inventory_from_json(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, inv);
  j["labels"] = {{"rack", "r 7"}};
  EXPECT_EQ(tessel::api::inventory_from_json(j).error().field, "inventory.labels.rack");
  j["labels"] = {{"tessel.io/images", "true"}};  // The scheduler's own.
  EXPECT_EQ(tessel::api::inventory_from_json(j).error().field, "inventory.labels.tessel.io/images");
}

TEST(NodeConstraints, ParseAndRoundTrip) {
  auto r = parse_job_spec(spec({{"nodes", 3},
                                {"node_selector", {{"rack", "r7"}, {"topology.tessel.io/leaf", "l2"}}},
                                {"nodelist", {"n1", "n2"}},
                                {"exclude", {"n9"}}}));
  ASSERT_TRUE(r) << r.error().message;
  const auto& c = r->constraints;
  EXPECT_EQ(c.node_selector.at("rack"), "r7");
  EXPECT_EQ(c.nodelist, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(c.exclude, (std::vector<std::string>{"n9"}));
  auto again = parse_job_spec(tessel::api::to_json(*r));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *r);
}

TEST(NodeConstraints, LeftOutOfTheJsonWhenEmpty) {
  auto r = parse_job_spec(spec(json::object()));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->constraints.empty());
  json j = tessel::api::to_json(*r);
  for (const char* f : {"node_selector", "nodelist", "exclude"}) EXPECT_FALSE(j.contains(f)) << f;
}

TEST(Topology, ParseAndRoundTrip) {
  for (const char* kind : {"required", "preferred"}) {
    auto r = parse_job_spec(spec({{"nodes", 4}, {"topology", {{kind, "topology.tessel.io/leaf"}}}}));
    ASSERT_TRUE(r) << r.error().message;
    const auto& t = r->constraints.topology;
    EXPECT_EQ(std::string(kind) == "required" ? t.required : t.preferred, "topology.tessel.io/leaf");
    EXPECT_FALSE(r->constraints.empty());
    json j = tessel::api::to_json(*r);
    EXPECT_EQ(j["topology"], json({{kind, "topology.tessel.io/leaf"}}));
    auto again = parse_job_spec(j);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *r);
  }
  auto none = parse_job_spec(spec(json::object()));
  ASSERT_TRUE(none);
  EXPECT_FALSE(tessel::api::to_json(*none).contains("topology"));
}

TEST(Topology, BadInputNamesTheField) {
  EXPECT_EQ(error_field(spec({{"topology", {{"required", "-rack"}}}})), "topology.required");
  EXPECT_EQ(error_field(spec({{"topology", {{"preferred", 7}}}})), "topology.preferred");
  EXPECT_EQ(error_field(spec({{"topology", {{"required", "rack"}, {"preferred", "spine"}}}})), "topology.preferred");
  EXPECT_EQ(error_field(spec({{"topology", {{"block", "rack"}}}})), "topology.block");
  EXPECT_EQ(error_field(spec({{"topology", "rack"}})), "topology");
  EXPECT_EQ(error_field(spec({{"topology", json::object()}})), "topology");
}

TEST(NodeConstraints, BadInputNamesTheField) {
  EXPECT_EQ(error_field(spec({{"node_selector", {{"rack", "r 9"}}}})), "node_selector.rack");
  EXPECT_EQ(error_field(spec({{"node_selector", {{"rack", 9}}}})), "node_selector.rack");
  EXPECT_EQ(error_field(spec({{"node_selector", {{"-rack", "r9"}}}})), "node_selector");
  EXPECT_EQ(error_field(spec({{"node_selector", "rack=r9"}})), "node_selector");
  EXPECT_EQ(error_field(spec({{"nodelist", "n1"}})), "nodelist");
  EXPECT_EQ(error_field(spec({{"nodelist", {"n 1"}}})), "nodelist[0]");
  EXPECT_EQ(error_field(spec({{"nodelist", {"n1", 2}}})), "nodelist[1]");
  EXPECT_EQ(error_field(spec({{"exclude", {"n1", "n1"}}})), "exclude[1]");
  EXPECT_EQ(error_field(spec({{"nodelist", {"n1", "n2"}}})), "nodelist");  // One node asked.
  EXPECT_EQ(error_field(spec({{"nodes", 2}, {"nodelist", {"n1"}}, {"exclude", {"n1"}}})), "exclude");
  json many = json::array();
  for (int i = 0; i < 1025; ++i) many.push_back("n" + std::to_string(i));
  EXPECT_EQ(error_field(spec({{"exclude", many}})), "exclude");
  auto r = parse_job_spec(spec({{"nodelist", {"n1", "n2"}}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nodelist: names 2 nodes but the job asks for 1"), std::string::npos)
      << r.error().message;
}

}  // namespace

namespace {

TEST(LabelChange, SetsAndRemoves) {
  auto c = tessel::api::parse_label_change(json{{"labels", {{"rack", "r7"}, {"fabric", nullptr}}}});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->set.at("rack"), "r7");
  EXPECT_EQ(c->remove, std::vector<std::string>{"fabric"});
  auto after = tessel::api::apply_label_change({{"fabric", "ib"}, {"zone", "a"}}, *c);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, (tessel::api::Labels{{"rack", "r7"}, {"zone", "a"}}));
}

TEST(LabelChange, BadInputNamesTheField) {
  using tessel::api::parse_label_change;
  EXPECT_EQ(parse_label_change(json{{"labels", {{"rack", "r 7"}}}}).error().field, "labels.rack");
  EXPECT_EQ(parse_label_change(json{{"labels", {{"rack", 7}}}}).error().field, "labels.rack");
  EXPECT_EQ(parse_label_change(json{{"labels", {{"-x", nullptr}}}}).error().field, "labels");
  EXPECT_EQ(parse_label_change(json{{"labels", "rack=r7"}}).error().field, "labels");
  EXPECT_EQ(parse_label_change(json{{"label", json::object()}}).error().field, "label");
  EXPECT_FALSE(parse_label_change(json::array()).ok());
  // The scheduler's own labels are neither set nor removed by admins.
  auto reserved = parse_label_change(json{{"labels", {{"tessel.io/images", "true"}}}});
  ASSERT_FALSE(reserved.ok());
  EXPECT_EQ(reserved.error().field, "labels.tessel.io/images");
  EXPECT_NE(reserved.error().message.find("scheduler's own"), std::string::npos);
  EXPECT_EQ(parse_label_change(json{{"labels", {{"tessel.io/x", nullptr}}}}).error().field, "labels.tessel.io/x");
  EXPECT_TRUE(parse_label_change(json{{"labels", {{"example.io/x", "y"}}}}).ok());
  tessel::api::Labels full;
  for (int i = 0; i < 64; ++i) full["k" + std::to_string(i)] = "v";
  tessel::api::LabelChange more;
  more.set["one-more"] = "v";
  EXPECT_EQ(tessel::api::apply_label_change(full, more).error().field, "labels");
}

}  // namespace
