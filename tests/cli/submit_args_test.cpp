#include "tessel/cli/submit_args.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "tessel/api/job.hpp"
#include "tessel/cli/node_commands.hpp"

namespace tessel::cli {
namespace {

using nlohmann::json;

TEST(SubmitArgs, MinimalSendsOnlyCommand) {
  SubmitOptions o;
  o.command = {"python", "train.py"};
  auto r = build_job_request(o, "/home/u");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, json({{"command", {"python", "train.py"}}}));
}

TEST(SubmitArgs, AllFlagsMapToApiFields) {
  SubmitOptions o;
  o.command = {"python", "-m", "x y"};
  o.name = "llama";
  o.devices = 4;
  o.nodes = 2;
  o.per_device = true;
  o.priority = -5;
  o.retries = 3;
  o.time_limit = "1h30m";
  o.kill_grace = "30s";
  o.env = {"A=1", "B=x=y", "C=", "A=2"};
  o.workdir = "runs/../exp";
  o.vendor = "habana";
  o.model = "HL-225";
  auto r = build_job_request(o, "/home/u");
  ASSERT_TRUE(r.ok()) << r.error().message;
  json want = {{"command", {"python", "-m", "x y"}},
               {"name", "llama"},
               {"devices", 4},
               {"nodes", 2},
               {"tasks_per_node", "device"},
               {"priority", -5},
               {"max_retries", 3},
               {"time_limit_s", 5400},
               {"kill_grace_s", 30},
               {"env", {{"A", "2"}, {"B", "x=y"}, {"C", ""}}},
               {"workdir", "/home/u/exp"},
               {"vendor", "habana"},
               {"model", "HL-225"}};
  EXPECT_EQ(*r, want);
  // And the server-side strict parser accepts exactly this body.
  auto parsed = api::parse_job_spec(*r);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->devices, 4);
  EXPECT_TRUE(parsed->task_per_device);
  EXPECT_EQ(parsed->time_limit_s, 5400);
}

TEST(SubmitArgs, ProjectAndPreemptibleAreSentOnlyWhenGiven) {
  SubmitOptions o;
  o.command = {"x"};
  o.project = "vision";
  o.preemptible = true;
  auto r = build_job_request(o, "/");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["project"], "vision");
  EXPECT_EQ((*r)["preemptible"], true);
  auto spec = api::parse_job_spec(*r);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->project, "vision");
}

TEST(SubmitArgs, AbsoluteWorkdirKept) {
  SubmitOptions o;
  o.command = {"true"};
  o.workdir = "/data/run";
  auto r = build_job_request(o, "/home/u");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["workdir"], "/data/run");
}

TEST(SubmitArgs, DependenciesAreSplitAtCommasInOrder) {
  SubmitOptions o;
  o.command = {"true"};
  o.after_ok = {"j-00000001,j-00000002", "j-00000003"};
  o.after_not_ok = {"j-00000004"};
  auto r = build_job_request(o, "/");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, json({{"command", {"true"}},
                      {"after_ok", {"j-00000001", "j-00000002", "j-00000003"}},
                      {"after_not_ok", {"j-00000004"}}}));
  auto parsed = api::parse_job_spec(*r);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->after_ok.size(), 3u);
  for (const char* bad : {"", ",", "j-00000001,,j-00000002", ",j-00000001"}) {
    o.after_any = {bad};
    EXPECT_EQ(build_job_request(o, "/").error().message,
              std::string("--after-any: expected job ids separated by commas, got '") + bad + "'");
  }
}

TEST(SubmitArgs, ArraysInSlurmSyntax) {
  SubmitOptions o;
  o.command = {"true"};
  o.array = "0-99%8";
  EXPECT_EQ(build_job_request(o, "/")->at("array"), json({{"count", 100}, {"parallel", 8}}));
  o.array = "0-0";
  EXPECT_EQ(build_job_request(o, "/")->at("array"), json({{"count", 1}}));
  // Other index lists go as they are; the spec parser reads them the same way.
  for (const auto& [arg, list, parallel] : std::vector<std::tuple<std::string, std::string, int>>{
           {"5-20", "5-20", 0}, {"1,3,7-9%2", "1,3,7-9", 2}, {"7", "7", 0}, {"0-30:10%1", "0-30:10", 1}}) {
    o.array = arg;
    json want = {{"indices", list}};
    if (parallel) want["parallel"] = parallel;
    auto r = build_job_request(o, "/");
    ASSERT_TRUE(r.ok()) << arg << ": " << r.error().message;
    EXPECT_EQ(r->at("array"), want) << arg;
    EXPECT_TRUE(api::parse_job_spec(*r)) << arg;
  }
  o.array = "9-5";
  EXPECT_EQ(build_job_request(o, "/").error().message,
            "--array: '9-5' ends before it starts (e.g. 0-99%8, 5-20 or 1,3,7-9%2), got '9-5'");
  for (const char* bad : {"", "0-", "-9", "0-9%", "0-x", "0-9%x", "0%2-9", "0-9%8%2", "0-1234567890", "0-10000", "1,,3",
                          "1,", "0-9:0", "5:2"}) {
    o.array = bad;
    auto r = build_job_request(o, "/");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("--array: ", 0), 0u) << bad;
  }
}

TEST(SubmitArgs, CpusAndMemoryPerNode) {
  SubmitOptions o;
  o.command = {"true"};
  o.cpus = 8;
  o.memory = "64G";
  auto r = build_job_request(o, "/");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, json({{"command", {"true"}}, {"cpus", 8}, {"memory_mib", 65536}}));
  auto parsed = api::parse_job_spec(*r);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->memory_mib, 65536);
  EXPECT_EQ(*parse_memory_mib("4096"), 4096);
  EXPECT_EQ(*parse_memory_mib("512M"), 512);
  EXPECT_EQ(*parse_memory_mib("2GiB"), 2048);
  EXPECT_EQ(*parse_memory_mib("1T"), 1048576);
  EXPECT_EQ(*parse_memory_mib("3g"), 3072);
  for (const char* bad : {"", "G", "1.5G", "64X", "-1", "1000000000000000G"})
    EXPECT_FALSE(parse_memory_mib(bad)) << bad;
  o.memory = "lots";
  EXPECT_EQ(build_job_request(o, "/").error().message,
            "--memory: expected a size like 4096 (MiB), 512M, 64G or 1T, got 'lots'");
}

TEST(SubmitArgs, UsageErrorsNameTheFlag) {
  SubmitOptions o;
  EXPECT_NE(build_job_request(o, "/").error().message.find("command is required"), std::string::npos);
  o.command = {"true"};
  o.env = {"NOEQUALS"};
  EXPECT_EQ(build_job_request(o, "/").error().message, "--env: expected KEY=VALUE, got 'NOEQUALS'");
  o.env = {"=v"};
  EXPECT_FALSE(build_job_request(o, "/").ok());
  o.env.clear();
  o.time_limit = "soon";
  EXPECT_EQ(build_job_request(o, "/").error().message.rfind("--time-limit: invalid duration 'soon'", 0), 0u);
  o.time_limit = "0";
  EXPECT_EQ(build_job_request(o, "/").error().message, "--time-limit: must be at least 1s");
  o.time_limit.reset();
  o.kill_grace = "1y";
  EXPECT_EQ(build_job_request(o, "/").error().message.rfind("--kill-grace:", 0), 0u);
}

TEST(SubmitArgs, SignalInSlurmSyntax) {
  SubmitOptions o;
  o.command = {"true"};
  for (const auto& [flag, want] : {std::pair<std::string, json>{"USR1@120", {{"name", "USR1"}, {"before_s", 120}}},
                                   {"SIGUSR2@2m", {{"name", "USR2"}, {"before_s", 120}}},
                                   {"TERM", {{"name", "TERM"}}}}) {
    o.signal = flag;
    auto r = build_job_request(o, "/");
    ASSERT_TRUE(r.ok()) << flag;
    EXPECT_EQ((*r)["signal"], want) << flag;
  }
  o.signal = "@120";
  EXPECT_EQ(build_job_request(o, "/").error().message, "--signal: expected NAME[@SECONDS], e.g. USR1@120");
  o.signal = "USR1@soon";
  EXPECT_EQ(build_job_request(o, "/").error().message.rfind("--signal: invalid duration", 0), 0u);
}

TEST(SubmitArgs, ImageFlagsMapToTheContainerFields) {
  SubmitOptions o;
  o.command = {"python3", "train.py"};
  o.image = "localhost/tessel-test:1";
  o.image_pull = "always";
  o.mounts = {"/data/imagenet:/data:ro", "/scratch/u:/scratch", "/x:/y:rw"};
  o.shm_size = "8G";
  auto r = build_job_request(o, "/home/u");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["image"], "localhost/tessel-test:1");
  EXPECT_EQ((*r)["image_pull"], "always");
  EXPECT_EQ((*r)["mounts"], json::parse(R"([{"source":"/data/imagenet","target":"/data","read_only":true},
                                           {"source":"/scratch/u","target":"/scratch"},
                                           {"source":"/x","target":"/y"}])"));
  EXPECT_EQ((*r)["shm_size_mib"], 8192);
  auto parsed = api::parse_job_spec(*r);  // What the CLI sends, the server takes.
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->mounts.size(), 3U);
}

TEST(SubmitArgs, BadMountsAndShmSizesNameTheFlag) {
  for (const char* bad : {"/data", ":/data", "/data:", "/a:/b:rx"}) {
    SubmitOptions o;
    o.command = {"x"};
    o.mounts = {bad};
    auto r = build_job_request(o, "/");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().field, "--mount") << bad;
  }
  SubmitOptions o;
  o.command = {"x"};
  o.shm_size = "lots";
  auto r = build_job_request(o, "/");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--shm-size"), std::string::npos) << r.error().message;
}

TEST(SubmitArgs, NodeConstraints) {
  SubmitOptions o;
  o.command = {"x"};
  o.selector = {"rack=r7,fabric=ib", "zone="};
  o.nodelist = {"n1,n2", "n3"};
  o.exclude = {"n9"};
  auto r = build_job_request(o, "/home/u");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["node_selector"], json({{"rack", "r7"}, {"fabric", "ib"}, {"zone", ""}}));
  EXPECT_EQ((*r)["nodelist"], json({"n1", "n2", "n3"}));
  EXPECT_EQ((*r)["exclude"], json({"n9"}));
  EXPECT_FALSE(r->contains("reservation"));
  o.reservation = "demo";
  EXPECT_EQ((*build_job_request(o, "/home/u"))["reservation"], "demo");
  for (const auto& [field, bad] :
       {std::pair{"--selector", "rack"}, std::pair{"--selector", "rack=r 7"}, std::pair{"--selector", "a=1,,b=2"}}) {
    SubmitOptions b;
    b.command = {"x"};
    b.selector = {bad};
    auto e = build_job_request(b, "/");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().field, field);
  }
  SubmitOptions b;
  b.command = {"x"};
  b.exclude = {"n1,"};
  EXPECT_EQ(build_job_request(b, "/").error().field, "--exclude");
}

TEST(SubmitArgs, Topology) {
  for (const char* kind : {"required", "preferred"}) {
    SubmitOptions o;
    o.command = {"x"};
    o.topology = std::string(kind) + "=rack";
    auto r = build_job_request(o, "/home/u");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ((*r)["topology"], json({{kind, "rack"}}));
  }
  for (const char* bad : {"rack", "block=rack", "required=-rack", "required="}) {
    SubmitOptions b;
    b.command = {"x"};
    b.topology = bad;
    auto e = build_job_request(b, "/");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().field, "--topology") << bad;
  }
}

TEST(NodeLabelArgs, SetAndRemoveAsKubectlLabel) {
  auto r = label_change_request({"rack=r7", "fabric-", "empty="});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, json({{"labels", {{"rack", "r7"}, {"fabric", nullptr}, {"empty", ""}}}}));
  for (const char* bad : {"rack", "-", "ra ck-", "rack=r 7"}) {
    auto e = label_change_request({bad});
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().field, "label") << bad;
  }
  EXPECT_FALSE(label_change_request({}).ok());
}

}  // namespace
}  // namespace tessel::cli
