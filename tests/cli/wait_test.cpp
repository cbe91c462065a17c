// `tessel wait` in-process with a fake clock: backoff and --timeout without sleeping.
#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"
#include "tessel/cli/app.hpp"

namespace tessel::cli::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

struct FakeWorld {
  std::ostringstream out, err;
  milliseconds now{0};
  std::vector<milliseconds> naps;
  std::map<std::string, std::string> vars;
  Environment env{out,
                  err,
                  [this](const std::string& k) -> std::optional<std::string> {
                    auto it = vars.find(k);
                    if (it == vars.end()) return std::nullopt;
                    return it->second;
                  },
                  [] { return int64_t{1767268800000}; },
                  [this] { return now; },
                  [this](milliseconds d) {
                    naps.push_back(d);
                    now += d;
                  },
                  "/tmp"};
  int run(std::vector<std::string> args) {
    args.insert(args.begin(), "tessel");
    return cli::run(args, env);
  }
};

json job_in(const std::string& state) { return {{"id", "j-1"}, {"state", state}}; }

TEST(Wait, PollsWithBackoffUntilTerminal) {
  FakeApiServer api;
  int polls = 0;
  api.on("GET", "/v1/jobs/j-1", [&polls](const httplib::Request&, httplib::Response& res) {
    ++polls;
    json j = polls < 5 ? job_in("running") : json{{"id", "j-1"}, {"state", "failed"}, {"exit_code", 300}};
    res.set_content(j.dump(), "application/json");
  });
  FakeWorld w;
  w.vars["TESSEL_SERVER"] = api.url();
  EXPECT_EQ(w.run({"wait", "j-1"}), 300 & 0xff);
  EXPECT_EQ(w.naps,
            (std::vector<milliseconds>{milliseconds(250), milliseconds(500), milliseconds(1000), milliseconds(2000)}));
  EXPECT_EQ(w.err.str(), "j-1: failed (exit 300)\n");
}

TEST(Wait, TimeoutExits124) {
  FakeApiServer api;
  api.on("GET", "/v1/jobs/j-1", 200, job_in("pending").dump());
  FakeWorld w;
  w.vars["TESSEL_SERVER"] = api.url();
  EXPECT_EQ(w.run({"wait", "j-1", "--timeout", "20s"}), kExitWaitTimeout);
  EXPECT_EQ(w.now, milliseconds(20000));  // Slept exactly up to the deadline, never past it.
  // 250+500+1000+2000+4000+5000+5000 = 17750, then only the 2250 left.
  EXPECT_EQ(w.naps.back(), milliseconds(2250));
  EXPECT_EQ(w.err.str(), "tessel: wait: j-1: still not finished after 20s\n");
}

TEST(Wait, ExitCodes) {
  FakeApiServer api;
  FakeWorld w;
  w.vars["TESSEL_SERVER"] = api.url();
  api.on("GET", "/v1/jobs/j-1", 200, job_in("cancelled").dump());
  EXPECT_EQ(w.run({"wait", "j-1"}), 1);
  api.on("GET", "/v1/jobs/j-1", 200, job_in("failed").dump());
  EXPECT_EQ(w.run({"wait", "j-1"}), 1);
  api.on("GET", "/v1/jobs/j-1", 200, json({{"state", "failed"}, {"exit_code", 0}}).dump());
  EXPECT_EQ(w.run({"wait", "j-1"}), 1);
  api.on("GET", "/v1/jobs/j-1", 200, json({{"state", "failed"}, {"exit_code", 256}}).dump());
  EXPECT_EQ(w.run({"wait", "j-1"}), 1);
  api.on("GET", "/v1/jobs/j-1", 200, json({{"state", "succeeded"}, {"exit_code", 0}}).dump());
  EXPECT_EQ(w.run({"wait", "j-1"}), 0);
  EXPECT_TRUE(w.naps.empty());
  api.on("GET", "/v1/jobs/j-1", 404, R"({"error":{"code":"not_found","message":"no such job"}})");
  EXPECT_EQ(w.run({"wait", "j-1"}), 1);
}

}  // namespace
}  // namespace tessel::cli::testing
