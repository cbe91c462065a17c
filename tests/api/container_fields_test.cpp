// The container fields of a JobSpec (issue 29): image, image_pull, mounts,
// shm_size_mib. Accepted forms, refusals naming the field, the JSON round trip.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/inventory.hpp"
#include "tessel/api/job.hpp"

#include "spec_checks.hpp"

using nlohmann::json;
using tessel::api::image_ref_error;
using tessel::api::parse_job_spec;
using tessel::api::testing::error_field;
using tessel::api::testing::spec;

namespace {

TEST(ImageRef, AcceptsTheUsualReferences) {
  for (const char* ref : {"busybox", "localhost/tessel-test:1", "docker.io/library/ubuntu:22.04",
                          "vault.habana.ai/gaudi-docker/1.17.0/ubuntu22.04/habanalabs/pytorch-installer-2.3.1:latest",
                          "nvcr.io/nvidia/pytorch:24.05-py3", "rocm/pytorch:rocm6.1_ubuntu22.04_py3.10_pytorch_2.1.2",
                          "registry.example.com:5000/team/a__b-c.d:v1",
                          "ubuntu@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                          "my.registry/x:tag@sha256:0123456789abcdef0123456789abcdef"})
    EXPECT_EQ(image_ref_error(ref), "") << ref;
}

TEST(ImageRef, RefusesWhatIsNoReference) {
  for (const char* ref : {"", "-v", "--privileged", "Ubuntu", "ubuntu:", "ubuntu:-x", "a b", "ubuntu@sha256:12",
                          "ubuntu@:0123456789abcdef0123456789abcdef", "/ubuntu", "ubuntu/", "a//b", "a..b",
                          "-host.com/a", "host.com:port/a", "a/_b", "ubuntu\n", "x:y:z"})
    EXPECT_NE(image_ref_error(ref), "") << ref;
  EXPECT_NE(image_ref_error(std::string(600, 'a')), "");
}

TEST(ContainerFields, ParseAndRoundTrip) {
  auto r = parse_job_spec(spec({{"image", "localhost/tessel-test:1"},
                                {"image_pull", "always"},
                                {"workdir", "/work"},
                                {"shm_size_mib", 2048},
                                {"mounts",
                                 {{{"source", "/data/imagenet"}, {"target", "/data"}, {"read_only", true}},
                                  {{"source", "/scratch/u1"}, {"target", "/scratch/"}}}}}));
  ASSERT_TRUE(r) << r.error().message;
  const auto& s = *r;
  EXPECT_EQ(s.image, "localhost/tessel-test:1");
  EXPECT_TRUE(s.image_pull_always);
  EXPECT_EQ(s.shm_size_mib, 2048);
  ASSERT_EQ(s.mounts.size(), 2U);
  EXPECT_EQ(s.mounts[0], (tessel::api::Mount{"/data/imagenet", "/data", true}));
  EXPECT_EQ(s.mounts[1], (tessel::api::Mount{"/scratch/u1", "/scratch", false}));  // Trailing '/' dropped.
  const json back = tessel::api::to_json(s);
  EXPECT_EQ(back["image_pull"], "always");
  auto again = parse_job_spec(back);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, s);
}

TEST(ContainerFields, DefaultsAreLeftOutOfTheJson) {
  auto r = parse_job_spec(spec({{"image", "busybox"}, {"image_pull", "missing"}}));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->image_pull_always);
  const json j = tessel::api::to_json(*r);
  EXPECT_FALSE(j.contains("image_pull"));
  EXPECT_FALSE(j.contains("mounts"));
  EXPECT_FALSE(j.contains("shm_size_mib"));
  const json bare = tessel::api::to_json(*parse_job_spec(spec(json::object())));
  EXPECT_FALSE(bare.contains("image"));
}

TEST(ContainerFields, BadInputNamesTheField) {
  EXPECT_EQ(error_field(spec({{"image", "Not A Ref"}})), "image");
  EXPECT_EQ(error_field(spec({{"image", "--privileged"}})), "image");
  EXPECT_EQ(error_field(spec({{"image", 7}})), "image");
  EXPECT_EQ(error_field(spec({{"image", "busybox"}, {"image_pull", "never"}})), "image_pull");
  EXPECT_EQ(error_field(spec({{"image_pull", "always"}})), "image_pull");  // Needs an image.
  EXPECT_EQ(error_field(spec({{"shm_size_mib", 64}})), "shm_size_mib");
  EXPECT_EQ(error_field(spec({{"mounts", json::array()}})), "mounts");
  EXPECT_EQ(error_field(spec({{"image", "busybox"}, {"shm_size_mib", 0}})), "shm_size_mib");
  EXPECT_EQ(error_field(spec({{"image", "busybox"}, {"shm_size_mib", -1}})), "shm_size_mib");
  EXPECT_EQ(error_field(spec({{"image", "busybox"}, {"mounts", "x"}})), "mounts");
  EXPECT_EQ(error_field(spec({{"image", "busybox"}, {"mounts", {7}}})), "mounts[0]");
  const auto mount = [](json m) { return spec({{"image", "busybox"}, {"mounts", {m}}}); };
  EXPECT_EQ(error_field(mount({{"source", "/a"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"target", "/a"}})), "mounts[0].source");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "data"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"source", "a"}, {"target", "/data"}})), "mounts[0].source");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/data/../etc"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"source", "/a/../../etc"}, {"target", "/d"}})), "mounts[0].source");
  EXPECT_EQ(error_field(mount({{"source", "/a,b"}, {"target", "/d"}})), "mounts[0].source");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/d:ro"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/dev/accel"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/proc"}})), "mounts[0].target");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/d"}, {"mode", "rw"}})), "mounts[0].mode");
  EXPECT_EQ(error_field(mount({{"source", "/a"}, {"target", "/d"}, {"read_only", "yes"}})), "mounts[0].read_only");
  EXPECT_EQ(
      error_field(spec({{"image", "busybox"},
                        {"mounts", {{{"source", "/a"}, {"target", "/d"}}, {{"source", "/b"}, {"target", "/d/"}}}}})),
      "mounts[1].target");
  EXPECT_EQ(
      error_field(spec({{"image", "busybox"}, {"workdir", "/w"}, {"mounts", {{{"source", "/a"}, {"target", "/w"}}}}})),
      "mounts[0].target");
  json many = json::array();
  for (int i = 0; i < 65; ++i) many.push_back({{"source", "/a"}, {"target", "/d" + std::to_string(i)}});
  EXPECT_EQ(error_field(spec({{"image", "busybox"}, {"mounts", many}})), "mounts");
}

TEST(ContainerFields, MessagesSayWhy) {
  auto r = parse_job_spec(spec({{"image", "busybox"}, {"mounts", {{{"source", "/a"}, {"target", "rel"}}}}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "mounts[0].target: must be an absolute path");
}

}  // namespace

namespace {

TEST(InventoryContainers, RoundTripAndAbsentWhenNone) {
  tessel::api::NodeInventory inv;
  inv.containers = "podman 4.3.1, runc";
  const json j = tessel::api::to_json(inv);
  EXPECT_EQ(j["containers"], "podman 4.3.1, runc");
  auto back = tessel::api::inventory_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->containers, "podman 4.3.1, runc");
  tessel::api::NodeInventory other = inv;
  other.containers.clear();
  EXPECT_FALSE(tessel::api::same_but_readings(inv, other));  // A change the scheduler must see.
  EXPECT_FALSE(tessel::api::to_json(other).contains("containers"));
}

}  // namespace
