#pragma once
// The worker tests' fixture for inference: one small model, trained once per test
// process (ctest runs each test as its own process), whose checkpoint the
// inference tests load (infer_test.cpp) and serve (infer_serve_test.cpp,
// infer_clients_test.cpp), and the serving tests' helpers.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "trainer.h"

namespace tessel::workers {

// One small model trained once for the whole suite.
class InferTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new testing::TempDir();
    TrainOptions o = testing::tiny_training(dir_->path(), 40);
    o.warmup = 4;
    auto r = run_training(o, TrainEnv{});
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { torch::set_num_threads(1); }
  static std::filesystem::path checkpoint_dir() { return dir_->path(); }

  inline static testing::TempDir* dir_ = nullptr;
};

// A running `tessel-infer --serve` on a port the kernel chose, its model loaded
// (its stdout said "listening", then "ready").
struct Served {
  Served(const std::filesystem::path& checkpoint, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        TESSEL_INFER_BIN, "--checkpoint", checkpoint.string(), "--serve", "--port", "0", "--threads", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto o = testkit::command(argv);
    o.stdout_path = out.str("serve.out");
    server = std::make_unique<testkit::Child>(std::move(o));
    auto line = server->read_line(std::chrono::seconds(60));
    if (!line) return;
    auto event = nlohmann::json::parse(*line);
    if (event["event"] != "listening") return;
    port = event["port"];
    auto ready = server->read_line(std::chrono::seconds(60));
    loaded = ready && nlohmann::json::parse(*ready)["event"] == "ready";
  }
  int stop() { return server->stop(SIGTERM, std::chrono::seconds(20)); }

  testing::TempDir out;
  std::unique_ptr<testkit::Child> server;
  int port = 0;
  bool loaded = false;
};

// The body of each "data: " event of a server-sent-event stream, in order.
inline std::vector<std::string> sse_data(const std::string& stream) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = stream.find("data: ", at)) != std::string::npos) {
    const size_t end = stream.find("\n\n", at);
    if (end == std::string::npos) break;
    out.push_back(stream.substr(at + 6, end - at - 6));
    at = end + 2;
  }
  return out;
}

inline httplib::Result post_json(httplib::Client& client, const std::string& path, const std::string& body) {
  return client.Post(path.c_str(), body, "application/json");
}

}  // namespace tessel::workers
