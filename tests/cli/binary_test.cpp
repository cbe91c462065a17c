// The real `tessel` binary against an in-test fake API server: what it sends,
// what it prints, and its exit codes.
#include <fstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "run_tessel.hpp"

namespace tessel::cli::testing {
namespace {

using nlohmann::json;

json sample_job(const std::string& id, const std::string& state) {
  return {{"id", id},
          {"name", "train"},
          {"user", "alice"},
          {"state", state},
          {"spec", {{"command", {"python", "train.py"}}, {"devices", 2}, {"nodes", 1}, {"priority", 0}}},
          {"attempt", 0},
          {"submitted_at", "2026-01-01T12:00:00.000Z"},
          {"allocations", json::array()}};
}

class CliBinary : public ::testing::Test {
 protected:
  FakeApiServer api;
  std::vector<std::string> with_server(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", api.url()});
    return args;
  }
};

TEST_F(CliBinary, UsageErrorsExit2AndSendNothing) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {},
           {"bogus"},
           {"submit", "--bogus", "--", "true"},
           {"submit", "--devices", "two", "--", "true"},
           {"submit", "--time-limit", "soon", "--", "true"},
           {"submit", "--env", "NOEQUALS", "--", "true"},
           {"submit"},
           {"show"},
           {"-o", "yaml", "jobs"},
           {"--token", "a", "--token-file", "b", "jobs"},
           {"wait", "j-1", "--timeout", "forever"},
       }) {
    auto r = run_tessel(with_server(args));
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("tessel: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_TRUE(api.requests().empty());
}

TEST_F(CliBinary, BadServerUrlIsUsageError) {
  auto r = run_tessel({"--server", "localhost:7450", "jobs"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tessel: jobs: invalid server URL 'localhost:7450': expected http://HOST[:PORT]\n");
}

TEST_F(CliBinary, HelpExits0) {
  auto r = run_tessel({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("submit"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST_F(CliBinary, SubmitSendsSpecAndTokenPrintsId) {
  api.on("POST", "/v1/jobs", 201, sample_job("j-42", "pending").dump());
  auto r = run_tessel(with_server({"--token",
                                   "s3cret",
                                   "submit",
                                   "--devices",
                                   "2",
                                   "--nodes",
                                   "1",
                                   "--per-device",
                                   "--priority",
                                   "7",
                                   "--time-limit",
                                   "1h30m",
                                   "--env",
                                   "A=1",
                                   "--env",
                                   "B=2",
                                   "--name",
                                   "n",
                                   "--model",
                                   "HL-225",
                                   "--retries",
                                   "2",
                                   "--",
                                   "python",
                                   "train.py",
                                   "--lr",
                                   "3",
                                   "-o",
                                   "x"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "j-42\n");
  EXPECT_EQ(r.err, "");
  auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/v1/jobs");
  EXPECT_EQ(reqs[0].authorization, "Bearer s3cret");
  EXPECT_EQ(json::parse(reqs[0].body), json({{"command", {"python", "train.py", "--lr", "3", "-o", "x"}},
                                             {"devices", 2},
                                             {"nodes", 1},
                                             {"tasks_per_node", "device"},
                                             {"priority", 7},
                                             {"time_limit_s", 5400},
                                             {"env", {{"A", "1"}, {"B", "2"}}},
                                             {"name", "n"},
                                             {"model", "HL-225"},
                                             {"max_retries", 2}}));
}

TEST_F(CliBinary, CommandWithoutDoubleDashStillTakesItsFlags) {
  api.on("POST", "/v1/jobs", 201, sample_job("j-1", "pending").dump());
  auto r = run_tessel(with_server({"submit", "--devices", "1", "python", "x.py", "--devices", "8"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto body = json::parse(api.requests().at(0).body);
  EXPECT_EQ(body["devices"], 1);
  EXPECT_EQ(body["command"], json({"python", "x.py", "--devices", "8"}));
}

TEST_F(CliBinary, DependencyFlagsTakeCommaSeparatedIdsAndRepeat) {
  api.on("POST", "/v1/jobs", 201, sample_job("j-00000009", "pending").dump());
  auto r = run_tessel(with_server({"submit", "--after-ok", "j-00000001,j-00000002", "--after-any", "j-00000003",
                                   "--after-ok", "j-00000004", "--after-not-ok=j-00000005", "--", "true"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto body = json::parse(api.requests().at(0).body);
  EXPECT_EQ(body["after_ok"], json({"j-00000001", "j-00000002", "j-00000004"}));
  EXPECT_EQ(body["after_any"], json({"j-00000003"}));
  EXPECT_EQ(body["after_not_ok"], json({"j-00000005"}));
  EXPECT_EQ(body["command"], json({"true"}));

  r = run_tessel(with_server({"submit", "--after-ok", "j-00000001,", "--", "true"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tessel: submit: --after-ok: expected job ids separated by commas, got 'j-00000001,'\n");
  EXPECT_EQ(api.requests().size(), 1u);
}

TEST_F(CliBinary, SubmitJsonOutputIsTheApiJob) {
  auto job = sample_job("j-7", "pending");
  api.on("POST", "/v1/jobs", 201, job.dump());
  auto r = run_tessel(with_server({"submit", "-o", "json", "--", "true"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), job);
  EXPECT_EQ(r.out, job.dump(2) + "\n");
}

TEST_F(CliBinary, ServerRejectionIsOneLineExit1) {
  api.on(
      "POST", "/v1/jobs", 400,
      R"({"error":{"code":"invalid_argument","message":"devices: must be one of 0, 1, 2, 4, 8","field":"devices"}})");
  auto r = run_tessel(with_server({"submit", "--devices", "3", "--", "true"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tessel: submit: devices: must be one of 0, 1, 2, 4, 8 (invalid_argument)\n");
}

TEST_F(CliBinary, ServerAndTokenFromEnvironment) {
  TempDir dir;
  std::string token_file = dir.str("token");
  std::ofstream(token_file) << "  from-file\n\n";
  api.on("GET", "/v1/inventory", 200, R"({"models":[],"nodes":{"ready":0,"draining":0,"down":0}})");
  auto r = run_tessel({"inventory"}, {{"TESSEL_SERVER", api.url()}, {"TESSEL_TOKEN_FILE", token_file}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(api.requests().at(0).authorization, "Bearer from-file");
  // TESSEL_TOKEN beats TESSEL_TOKEN_FILE; --token beats both.
  r = run_tessel({"inventory"},
                 {{"TESSEL_SERVER", api.url()}, {"TESSEL_TOKEN", "env"}, {"TESSEL_TOKEN_FILE", token_file}});
  EXPECT_EQ(api.requests().at(1).authorization, "Bearer env");
  r = run_tessel({"--token", "flag", "inventory"}, {{"TESSEL_SERVER", api.url()}, {"TESSEL_TOKEN", "env"}});
  EXPECT_EQ(api.requests().at(2).authorization, "Bearer flag");
  // No token: no header.
  r = run_tessel({"inventory"}, {{"TESSEL_SERVER", api.url()}});
  EXPECT_EQ(api.requests().at(3).authorization, "");
  // A missing token file is a one-line usage error.
  r = run_tessel({"--token-file", dir.str("nope"), "inventory"}, {{"TESSEL_SERVER", api.url()}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("reading token file"), std::string::npos);
  EXPECT_EQ(api.requests().size(), 4u);
}

TEST_F(CliBinary, ConnectionRefusedIsOneLineExit1) {
  int dead_port = 0;
  {
    FakeApiServer gone;  // Bound, then closed: nothing listens on its port any more.
    dead_port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto r = run_tessel({"--server", "http://127.0.0.1:" + std::to_string(dead_port), "jobs"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: jobs: cannot reach http://127.0.0.1:", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST_F(CliBinary, JobsFollowsPagingAndHidesFinishedByDefault) {
  api.on("GET", "/v1/jobs", [](const httplib::Request& req, httplib::Response& res) {
    json page;
    if (req.get_param_value("after").empty()) {
      page = {{"jobs", {sample_job("j-1", "running"), sample_job("j-2", "succeeded")}}, {"next", "c1"}};
    } else {
      page = {{"jobs", {sample_job("j-3", "pending")}}};
    }
    res.set_content(page.dump(), "application/json");
  });
  auto r = run_tessel(with_server({"jobs"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("ID    NAME    USER    STATE", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("j-1"), std::string::npos);
  EXPECT_EQ(r.out.find("j-2"), std::string::npos);
  EXPECT_NE(r.out.find("j-3"), std::string::npos);
  auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].param("after"), "");
  EXPECT_EQ(reqs[1].param("after"), "c1");

  r = run_tessel(with_server({"jobs", "--all", "--user", "alice", "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 3u);
  EXPECT_EQ(j["jobs"][1]["id"], "j-2");
  EXPECT_EQ(api.requests().at(2).param("user"), "alice");

  r = run_tessel(with_server({"jobs", "--state", "succeeded"}));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(api.requests().at(4).param("state"), "succeeded");
}

TEST_F(CliBinary, ShowAndNotFound) {
  api.on("GET", "/v1/jobs/j-1", 200, sample_job("j-1", "running").dump());
  auto r = run_tessel(with_server({"show", "j-1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ID: j-1\n"), std::string::npos);
  EXPECT_NE(r.out.find("Command: python train.py\n"), std::string::npos);
  api.on("GET", "/v1/jobs/j-9", 404, R"({"error":{"code":"not_found","message":"no such job"}})");
  r = run_tessel(with_server({"show", "j-9"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tessel: show: j-9: no such job (not_found)\n");
}

TEST_F(CliBinary, ShowAddsTheStateHistory) {
  api.on("GET", "/v1/jobs/j-1", 200, sample_job("j-1", "running").dump());
  api.on("GET", "/v1/jobs/j-1/events", 200, R"({"job_id":"j-1","events":[
    {"at":"2026-12-01T10:00:00.000Z","event":"submitted","state":"pending","attempt":0,"nodes":[]},
    {"at":"2026-12-01T10:00:01.000Z","event":"assigned","state":"assigned","attempt":0,"nodes":["n1","n2"]},
    {"at":"2026-12-01T10:00:09.000Z","event":"requeued","state":"pending","attempt":0,"nodes":["n1","n2"],
     "reason":"requeued after attempt 0: node n2 down"}]})");
  auto r = run_tessel(with_server({"show", "j-1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("History:\n  TIME "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  2026-12-01T10:00:01.000Z   assigned    0         n1,n2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("requeued after attempt 0: node n2 down\n"), std::string::npos) << r.out;
  r = run_tessel(with_server({"show", "j-1", "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["events"].size(), 3u);
}

TEST_F(CliBinary, CancelContinuesPastFailures) {
  api.on("POST", "/v1/jobs/j-1/cancel", 200, sample_job("j-1", "cancelled").dump());
  api.on("POST", "/v1/jobs/j-3/cancel", 200, sample_job("j-3", "cancelled").dump());
  auto r = run_tessel(with_server({"cancel", "j-1", "j-2", "j-3"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "j-1: cancelled\nj-3: cancelled\n");
  EXPECT_EQ(r.err.rfind("tessel: cancel: j-2: ", 0), 0u) << r.err;
  EXPECT_EQ(api.requests().size(), 3u);
}

// Issue 31: hold, release, requeue, signal and update send what the API takes.
TEST_F(CliBinary, JobControlCommands) {
  json held = sample_job("j-1", "pending");
  held["reason"] = "held by alice";
  api.on("POST", "/v1/jobs/j-1/hold", 200, held.dump());
  api.on("POST", "/v1/jobs/j-1/release", 200, sample_job("j-1", "pending").dump());
  api.on("POST", "/v1/jobs/j-2/requeue", 200, sample_job("j-2", "pending").dump());
  api.on("POST", "/v1/jobs/j-2/signal", 200, sample_job("j-2", "running").dump());
  api.on("PATCH", "/v1/jobs/j-1", 200, sample_job("j-1", "pending").dump());
  auto r = run_tessel(with_server({"hold", "j-1"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "j-1: pending (held by alice)\n");
  EXPECT_EQ(run_tessel(with_server({"release", "j-1"})).exit_code, 0);
  EXPECT_EQ(run_tessel(with_server({"requeue", "j-2"})).exit_code, 0);
  r = run_tessel(with_server({"signal", "j-2", "SIGUSR1"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "j-2: SIGUSR1 sent to every rank\n");
  r = run_tessel(with_server({"update", "j-1", "--priority", "-5", "--time-limit", "1h"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_tessel(with_server({"update", "j-1"})).exit_code, 2);
  const auto reqs = api.requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(json::parse(reqs[3].body), (json{{"name", "USR1"}}));
  EXPECT_EQ(reqs[4].method, "PATCH");
  EXPECT_EQ(json::parse(reqs[4].body), (json{{"priority", -5}, {"time_limit_s", 3600}}));
}

TEST_F(CliBinary, LogsStreamsBodyToStdout) {
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i) + "\n";
  api.on("GET", "/v1/jobs/j-1/logs", [text](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [text](size_t offset, httplib::DataSink& sink) {
      // Deliver in pieces so the client really streams.
      size_t n = std::min<size_t>(1000, text.size() - offset);
      sink.write(text.data() + offset, n);
      if (offset + n == text.size()) sink.done();
      return true;
    });
  });
  auto r = run_tessel(with_server({"logs", "j-1", "--rank", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, text);
  auto req = api.requests().at(0);
  EXPECT_EQ(req.param("rank"), "1");
  EXPECT_EQ(req.param("follow"), "");

  api.on("GET", "/v1/jobs/j-2/logs", 404, R"({"error":{"code":"not_found","message":"no such job"}})");
  r = run_tessel(with_server({"logs", "j-2", "-f"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tessel: logs: j-2: no such job (not_found)\n");
  EXPECT_EQ(api.requests().back().param("follow"), "true");
}

json node_json() {
  json devs = json::array();
  for (int m = 0; m < 8; ++m)
    devs.push_back({{"index", m},
                    {"module_id", m},
                    {"model", "HL-225"},
                    {"healthy", true},
                    {"job", m < 4 ? json("j-1") : json(nullptr)}});
  return {{"name", "gaudi-a"},
          {"address", "10.0.0.1:7451"},
          {"state", "ready"},
          {"last_heartbeat", "2026-01-01T12:00:00.000Z"},
          {"inventory", {{"vendor", "habana"}, {"driver_version", "1.17.0"}, {"devices", devs}}},
          {"free_groups", {{"1", {{4}, {5}, {6}, {7}}}, {"2", {{4, 5}, {6, 7}}}, {"4", {{4, 5, 6, 7}}}}}};
}

TEST_F(CliBinary, NodesTableAndJsonPassThrough) {
  json nodes = {{"nodes", {node_json()}}};
  api.on("GET", "/v1/nodes", 200, nodes.dump());
  api.on("GET", "/v1/nodes/gaudi-a", 200, node_json().dump());
  auto r = run_tessel(with_server({"nodes"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gaudi-a   ready   HL-225   4/8    [UUUU....]   4:{4-7}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("U in use"), std::string::npos);
  r = run_tessel(with_server({"nodes", "-o", "json"}));
  EXPECT_EQ(json::parse(r.out), nodes);
  r = run_tessel(with_server({"node", "gaudi-a"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Free groups: 4:{4-7}\n"), std::string::npos) << r.out;
}

TEST_F(CliBinary, DrainAndUndrain) {
  auto drained = node_json();
  drained["state"] = "draining";
  api.on("POST", "/v1/nodes/gaudi-a/drain", 200, drained.dump());
  api.on("POST", "/v1/nodes/gaudi-a/undrain", 200, node_json().dump());
  auto r = run_tessel(with_server({"drain", "gaudi-a"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gaudi-a: draining\n");
  r = run_tessel(with_server({"undrain", "gaudi-a"}));
  EXPECT_EQ(r.out, "gaudi-a: ready\n");
  r = run_tessel(with_server({"drain", "nope"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: drain: nope: ", 0), 0u);
}

TEST_F(CliBinary, DeleteNode) {
  api.on("DELETE", "/v1/nodes/gaudi-a", 200, node_json().dump());
  api.on("DELETE", "/v1/nodes/gaudi-b", 409,
         R"({"error":{"code":"conflict","message":"node gaudi-b holds cards of running jobs"}})");
  auto r = run_tessel(with_server({"delete-node", "gaudi-a"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gaudi-a: deleted (its agent registers it again unless stopped)\n");
  r = run_tessel(with_server({"delete-node", "gaudi-b"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tessel: delete-node: gaudi-b: node gaudi-b holds cards of running jobs (conflict)\n");
}

TEST_F(CliBinary, NodeLabelSetsAndRemovesAndSubmitTakesConstraints) {
  api.on("PUT", "/v1/nodes/gaudi-a/labels", 200,
         json{{"name", "gaudi-a"}, {"labels", {{"rack", "r7"}, {"zone", "a"}}}, {"admin_labels", {{"rack", "r7"}}}}
             .dump());
  auto r = run_tessel(with_server({"node", "label", "gaudi-a", "rack=r7", "fabric-"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gaudi-a: rack=r7,zone=a\n");
  ASSERT_EQ(api.requests().size(), 1u);
  EXPECT_EQ(api.requests().at(0).method, "PUT");
  EXPECT_EQ(json::parse(api.requests().at(0).body), json({{"labels", {{"rack", "r7"}, {"fabric", nullptr}}}}));
  r = run_tessel(with_server({"node", "label", "gaudi-a", "rack"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(api.requests().size(), 1u);  // Refused before any request.

  api.on("POST", "/v1/jobs", 201, sample_job("j-00000009", "pending").dump());
  r = run_tessel(
      with_server({"submit", "--selector", "rack=r7", "-w", "n1,n2", "--nodes", "2", "-x", "n9", "--", "true"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto body = json::parse(api.requests().back().body);
  EXPECT_EQ(body["node_selector"], json({{"rack", "r7"}}));
  EXPECT_EQ(body["nodelist"], json({"n1", "n2"}));
  EXPECT_EQ(body["exclude"], json({"n9"}));
}

TEST_F(CliBinary, NodeTokenIssueAndRevoke) {
  const std::string token(64, 'f');
  api.on("POST", "/v1/nodes/gaudi-a/token", 201,
         json{{"node", "gaudi-a"}, {"token", token}, {"issued_at", "2026-01-01T00:00:00Z"}, {"rotated", false}}.dump());
  api.on("DELETE", "/v1/nodes/gaudi-a/token", 200, json{{"node", "gaudi-a"}, {"revoked", true}}.dump());
  api.on("DELETE", "/v1/nodes/gaudi-b/token", 404,
         R"({"error":{"code":"not_found","message":"node gaudi-b has no issued token"}})");
  auto r = run_tessel(with_server({"nodes", "token", "issue", "gaudi-a"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, token + "\n");
  r = run_tessel(with_server({"nodes", "token", "issue", "gaudi-a", "-o", "json"}));
  EXPECT_EQ(json::parse(r.out)["token"], token);
  r = run_tessel(with_server({"nodes", "token", "revoke", "gaudi-a"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "gaudi-a: token revoked\n");
  r = run_tessel(with_server({"nodes", "token", "revoke", "gaudi-b"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tessel: nodes token revoke: gaudi-b: node gaudi-b has no issued token (not_found)\n");
  r = run_tessel(with_server({"nodes", "token"}));
  EXPECT_NE(r.exit_code, 0);
}

TEST_F(CliBinary, NodeTokenList) {
  api.on("GET", "/v1/node-tokens", 200,
         json{{"tokens",
               {{{"node", "gaudi-a"}, {"issued_at", "2026-01-01T00:00:00Z"}},
                {{"node", "gaudi-long-name"}, {"issued_at", "2026-01-02T03:04:05Z"}}}}}
             .dump());
  auto r = run_tessel(with_server({"nodes", "token", "list"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "NODE             ISSUED\n"
            "gaudi-a          2026-01-01T00:00:00Z\n"
            "gaudi-long-name  2026-01-02T03:04:05Z\n");
  r = run_tessel(with_server({"nodes", "token", "list", "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["tokens"].size(), 2U);
  api.on("GET", "/v1/node-tokens", 200, R"({"tokens":[]})");
  r = run_tessel(with_server({"nodes", "token", "list"}));
  EXPECT_EQ(r.out, "No issued node tokens.\n");
  api.on("GET", "/v1/node-tokens", 403, R"({"error":{"code":"forbidden","message":"role user may not do this"}})");
  r = run_tessel(with_server({"nodes", "token", "list"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tessel: nodes token list: role user may not do this (forbidden)\n");
}

// A replica list: the first URL refuses connections, the second is a follower
// that redirects to the leader (307, as tessel-scheduler --advertise does); the
// token and the body go along.
TEST_F(CliBinary, ServerListSkipsADeadReplicaAndFollowsTheLeader) {
  FakeApiServer follower;
  const std::string leader = api.url();
  for (const char* method : {"GET", "POST"})
    follower.on(method, "/v1/jobs", [&](const httplib::Request& req, httplib::Response& res) {
      res.status = 307;
      res.set_header("Location", leader + req.path);
      res.set_content(R"({"error":{"code":"unavailable","message":"not the leader"}})", "application/json");
    });
  api.on("POST", "/v1/jobs", 201, sample_job("j-00000007", "pending").dump());
  api.on("GET", "/v1/jobs", 200, json{{"jobs", {sample_job("j-00000007", "pending")}}}.dump());
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  const std::string servers = "http://127.0.0.1:1, " + follower.url();
  auto r = run_tessel({"--server", servers, "--token", "tok", "submit", "--devices", "2", "--", "python", "x.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "j-00000007\n");
  ASSERT_EQ(api.requests().size(), 1u);
  EXPECT_EQ(api.requests()[0].method, "POST");
  EXPECT_EQ(api.requests()[0].authorization, "Bearer tok");
  EXPECT_EQ(json::parse(api.requests()[0].body)["command"], json({"python", "x.py"}));
  r = run_tessel({"--server", servers, "jobs", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["jobs"][0]["id"], "j-00000007");
}

TEST_F(CliBinary, RedirectLoopsAndEveryReplicaDownAreOneLineErrors) {
  FakeApiServer looping;
  const std::string self = looping.url();
  looping.on("GET", "/v1/nodes", [&](const httplib::Request& req, httplib::Response& res) {
    res.status = 307;
    res.set_header("Location", self + req.path);
  });
  auto r = run_tessel({"--server", self, "nodes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tessel: nodes: more than 3 redirects from " + self + "\n");
  r = run_tessel({"--server", "http://127.0.0.1:1,http://127.0.0.1:2", "nodes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tessel: nodes: cannot reach http://127.0.0.1:2: connection failed", 0), 0u) << r.err;
  r = run_tessel({"--server", "http://127.0.0.1:1,ftp://x", "nodes"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(CliBinary, WaitExitsWithJobExitCode) {
  auto failed = sample_job("j-1", "failed");
  failed["exit_code"] = 3;
  api.on("GET", "/v1/jobs/j-1", 200, failed.dump());
  auto r = run_tessel(with_server({"wait", "j-1"}));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "j-1: failed (exit 3)\n");
  api.on("GET", "/v1/jobs/j-2", 200, sample_job("j-2", "succeeded").dump());
  r = run_tessel(with_server({"wait", "j-2"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "j-2: succeeded\n");
}

TEST_F(CliBinary, ProjectCommandsSendTheProjectAndPrintIt) {
  const json vision = {{"name", "vision"},
                       {"shares", 2},
                       {"quotas", {{"HL-225", {{"guaranteed", 8}, {"max", 16}}}}},
                       {"usage_card_seconds", 7200.0},
                       {"fair_share", 0.25}};
  api.on("POST", "/v1/projects", 201, vision.dump());
  auto r = run_tessel(
      with_server({"project", "create", "vision", "--shares", "2", "--quota", "HL-225=8:16", "--quota", "*=none"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "vision: created\n");
  auto sent = json::parse(api.requests().back().body);
  EXPECT_EQ(sent["shares"], 2);
  EXPECT_EQ(sent["quotas"]["HL-225"], (json{{"guaranteed", 8}, {"max", 16}}));
  EXPECT_TRUE(sent["quotas"]["*"]["max"].is_null());

  api.on("PUT", "/v1/projects/vision", 200, vision.dump());
  r = run_tessel(with_server({"project", "set", "vision", "--quota", "HL-225=4"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(api.requests().back().method, "PUT");
  EXPECT_EQ(json::parse(api.requests().back().body)["quotas"]["HL-225"]["max"], 4);

  api.on("GET", "/v1/projects", 200, json{{"projects", {vision}}}.dump());
  r = run_tessel(with_server({"project", "list"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vision"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HL-225 8/16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.25"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2.0"), std::string::npos) << r.out;  // Card-hours.

  json shown = vision;
  shown["max_active_jobs_per_user"] = 500;
  shown["limits"] = {{"max_active_jobs_per_user", 500}, {"max_active_jobs", 0}, {"max_array_size", 10000}};
  shown["active_jobs"] = 12;
  api.on("GET", "/v1/projects/vision", 200, shown.dump());
  r = run_tessel(with_server({"project", "show", "vision"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Shares:      2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Limits:      12 jobs not yet ended; per user at most 500 (project: 500), all users no "
                       "limit; arrays up to 10000"),
            std::string::npos)
      << r.out;

  api.on("PUT", "/v1/projects/vision", 200, vision.dump());
  r = run_tessel(with_server({"project", "set", "vision", "--max-active-jobs-per-user", "500"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(api.requests().back().body)["max_active_jobs_per_user"], 500);

  api.on("DELETE", "/v1/projects/vision", 409,
         R"({"error":{"code":"conflict","message":"project vision has job j-1 not yet ended"}})");
  r = run_tessel(with_server({"project", "delete", "vision"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not yet ended"), std::string::npos) << r.err;

  const size_t before = api.requests().size();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"project", "create", "x", "--quota", "HL-225"},
           {"project", "create", "x", "--quota", "HL-225=many"},
           {"project", "create", "x", "--quota", "=4"},
           {"project"},
       }) {
    r = run_tessel(with_server(args));
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(api.requests().size(), before);
}

TEST_F(CliBinary, ReservationCommandsSendTheBodyAndPrintIt) {
  const json demo = {{"name", "demo"},
                     {"state", "pending"},
                     {"nodes", {"n1", "n2"}},
                     {"start", "2026-12-05T09:00:00.000Z"},
                     {"end", "2026-12-05T12:00:00.000Z"},
                     {"users", {"alice"}},
                     {"projects", json::array()},
                     {"maintenance", false},
                     {"created_by", "root"}};
  api.on("POST", "/v1/reservations", 201, demo.dump());
  auto r = run_tessel(with_server({"reservation", "create", "demo", "--nodes", "n1,n2", "--start",
                                   "2026-12-05T09:00:00Z", "--end", "1796475600", "--users", "alice"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "demo: reserved n1,n2 from 2026-12-05T09:00:00.000Z to 2026-12-05T12:00:00.000Z\n");
  const json sent = json::parse(api.requests().back().body);
  EXPECT_EQ(sent, json({{"name", "demo"},
                        {"nodes", {"n1", "n2"}},
                        {"start", "2026-12-05T09:00:00Z"},
                        {"end", 1796475600},
                        {"users", {"alice"}}}));
  api.on("GET", "/v1/reservations", 200, json{{"reservations", {demo}}}.dump());
  r = run_tessel(with_server({"reservation", "list"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("demo   pending"), std::string::npos) << r.out;
  api.on("GET", "/v1/reservations/demo", 200, demo.dump());
  r = run_tessel(with_server({"reservation", "show", "demo"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("For:         users alice\n"), std::string::npos) << r.out;
  api.on("DELETE", "/v1/reservations/demo", 403,
         R"({"error":{"code":"permission_denied","message":"admin role required"}})");
  r = run_tessel(with_server({"reservation", "delete", "demo"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("admin role required"), std::string::npos) << r.err;
  const size_t before = api.requests().size();
  r = run_tessel(with_server({"reservation", "create", "x", "--nodes", "n1", "--end", "soon"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(api.requests().size(), before);
}

TEST_F(CliBinary, UsageSendsTheWindowAndPrintsCardHours) {
  const json report = {{"by", "user"},
                       {"since", "2026-11-01T00:00:00.000Z"},
                       {"until", "2026-12-01T00:00:00.000Z"},
                       {"usage", {{{"user", "alice"}, {"model", "HL-225"}, {"card_seconds", 9000.0}, {"jobs", 3}}}}};
  api.on("GET", "/v1/usage", 200, report.dump());
  auto r = run_tessel(
      with_server({"usage", "--by", "user", "--since", "2026-11-01T00:00:00Z", "--until", "2026-12-01T00:00:00Z"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sent = api.requests().back();
  EXPECT_EQ(sent.param("by"), "user");
  EXPECT_EQ(sent.param("since"), "2026-11-01T00:00:00Z");
  EXPECT_EQ(sent.param("until"), "2026-12-01T00:00:00Z");
  EXPECT_NE(r.out.find("USER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("alice"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2.50"), std::string::npos) << r.out;  // Card-hours.
  // A duration means that long ago; --json prints the API's answer.
  r = run_tessel(with_server({"usage", "--since", "7d", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(api.requests().back().param("by"), "project");
  EXPECT_TRUE(api.requests().back().param("since").ends_with("Z")) << api.requests().back().param("since");
  EXPECT_EQ(json::parse(r.out), report);
  // Bad flags: exit 2, one line, nothing sent; the server's 400: exit 1.
  const size_t before = api.requests().size();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"usage", "--by", "node"}, {"usage", "--since", "yesterday"}, {"usage", "--until", "2026-13-01"}}) {
    r = run_tessel(with_server(args));
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(api.requests().size(), before);
  api.on("GET", "/v1/usage", 400,
         R"({"error":{"code":"invalid_argument","message":"since: must be before until","field":"since"}})");
  r = run_tessel(with_server({"usage"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("since: must be before until"), std::string::npos) << r.err;
}

TEST_F(CliBinary, UsageSendsProjectAndUserFilters) {
  api.on("GET", "/v1/usage", 200,
         json{{"by", "project"}, {"since", "a"}, {"until", "b"}, {"usage", json::array()}}.dump());
  auto r = run_tessel(with_server({"usage", "--project", "vision", "--user", "al+ice"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto sent = api.requests().back();
  EXPECT_EQ(sent.param("project"), "vision");
  EXPECT_EQ(sent.param("user"), "al+ice");  // Encoded on the way: '+' is not a space.
  r = run_tessel(with_server({"usage"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  sent = api.requests().back();
  EXPECT_EQ(sent.params.count("project"), 0u);
  EXPECT_EQ(sent.params.count("user"), 0u);
  // The server judges the names: its 400 is exit 1 with its message, on one line.
  api.on("GET", "/v1/usage", 400,
         R"({"error":{"code":"invalid_argument","message":"project: not a project name","field":"project"}})");
  r = run_tessel(with_server({"usage", "--project", "bad/name"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("project: not a project name"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(CliBinary, JobsAndShowPrintQueuePositionAndEstimatedStart) {
  json j = sample_job("j-7", "pending");
  j["queue_position"] = 3;
  j["estimated_start"] = "2026-01-01T14:00:00.000Z";
  j["reason"] = "waiting for 2 free cards in one valid group";
  j["spec"]["project"] = "vision";
  api.on("GET", "/v1/jobs", 200, json{{"jobs", {j}}}.dump());
  auto r = run_tessel(with_server({"jobs"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("#3 start ~2026-01-01T14:00:00.000Z (waiting for 2 free cards"), std::string::npos) << r.out;
  api.on("GET", "/v1/jobs/j-7", 200, j.dump());
  r = run_tessel(with_server({"show", "j-7"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Queue position: 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Estimated start: 2026-01-01T14:00:00.000Z"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Project: vision"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tessel::cli::testing
