// tessel-infer serving against its clients: slow heads and bodies, a client that
// leaves a non-streamed request, bodies and prompts past the limits, API keys, and
// many streams at once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "infer_fixture.hpp"
#include "inference_server.h"
#include "inference_session.h"
#include "test_support.h"
#include "trainer.h"

namespace tessel::workers {
namespace {

using testing::TempDir;
// A loopback socket that sends what the test says: a slow or departing client.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  bool connected() const { return connected_; }
  bool send(const std::string& s) { return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// /healthz, polled until `done` holds or `within` passes; the last answer.
nlohmann::json poll_health(int port, const std::function<bool(const nlohmann::json&)>& done,
                           std::chrono::seconds within = std::chrono::seconds(30)) {
  httplib::Client probe("127.0.0.1", port);
  probe.set_read_timeout(5, 0);
  nlohmann::json health;
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = probe.Get("/healthz");
    if (!r) continue;
    health = nlohmann::json::parse(r->body);
    if (done(health)) break;
  }
  return health;
}

// Slow clients cost a socket, not a thread: with 8 heads and 8 bodies trickling in,
// /healthz and a completion still answer, /healthz within a second.
TEST_F(InferTest, SlowClientsDoNotBlockHealthz) {
  Served served(checkpoint_dir());
  ASSERT_TRUE(served.loaded);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 8; ++i) {
    auto head = std::make_unique<RawClient>(served.port);
    ASSERT_TRUE(head->connected());
    ASSERT_TRUE(head->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le"));
    slow.push_back(std::move(head));
    auto body = std::make_unique<RawClient>(served.port);
    ASSERT_TRUE(
        body->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                   "900\r\n\r\n{\"pro"));
    slow.push_back(std::move(body));
  }
  httplib::Client client("127.0.0.1", served.port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(1, 0);
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto health = client.Get("/healthz");
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(health) << httplib::to_string(health.error());
    EXPECT_EQ(health->status, 200);
    EXPECT_LT(took, std::chrono::seconds(1));
  }
  client.set_read_timeout(30, 0);
  auto done = post_json(client, "/v1/completions", R"({"prompt":"GNU","max_tokens":4})");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200) << done->body;
  EXPECT_EQ(served.stop(), 0);
}

// A non-streamed request with a huge max_tokens whose client left stops decoding at
// the next step: it leaves the batch (requests_active back to 0, requests_cancelled
// counts it), and the slot serves the next request.
TEST_F(InferTest, AbandonedNonStreamedRequestStopsDecoding) {
  Served served(checkpoint_dir(), {"--max-batch", "1"});
  ASSERT_TRUE(served.loaded);
  RawClient leaver(served.port);
  const std::string body = R"({"prompt":"GNU","max_tokens":100000})";
  ASSERT_TRUE(
      leaver.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body));
  auto busy = poll_health(served.port, [](const nlohmann::json& h) { return h["requests_active"] == 1; });
  ASSERT_EQ(busy["requests_active"], 1) << busy;
  leaver.close();
  auto after = poll_health(
      served.port, [](const nlohmann::json& h) { return h["requests_cancelled"] == 1 && h["requests_active"] == 0; });
  EXPECT_EQ(after["requests_cancelled"], 1) << after;
  EXPECT_EQ(after["requests_active"], 0) << after;
  EXPECT_LT(after["decode_steps"].get<int64_t>(), 100000);
  // The one batch slot is free again.
  httplib::Client client("127.0.0.1", served.port);
  client.set_read_timeout(30, 0);
  auto next = post_json(client, "/v1/completions", R"({"prompt":"GNU","max_tokens":3})");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
  EXPECT_EQ(served.stop(), 0);
}

// A body past --http-max-body-bytes is refused before it is read (413 naming the
// limit), and so is a prompt past --max-prompt-tokens (413 naming the flag).
TEST_F(InferTest, OversizedBodiesAndPromptsGet413) {
  Served served(checkpoint_dir(), {"--http-max-body-bytes", "4096", "--max-prompt-tokens", "16"});
  ASSERT_TRUE(served.loaded);
  httplib::Client client("127.0.0.1", served.port);
  client.set_read_timeout(30, 0);
  const std::string big = nlohmann::json{{"prompt", std::string(10000, 'a')}, {"max_tokens", 1}}.dump();
  auto huge = post_json(client, "/v1/completions", big);
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  auto err = nlohmann::json::parse(huge->body)["error"];
  EXPECT_NE(err["message"].get<std::string>().find("4096"), std::string::npos) << huge->body;

  httplib::Client again("127.0.0.1", served.port);
  again.set_read_timeout(30, 0);
  auto long_prompt = post_json(again, "/v1/completions", R"({"prompt":"This License is long","max_tokens":1})");
  ASSERT_TRUE(long_prompt);
  EXPECT_EQ(long_prompt->status, 413) << long_prompt->body;
  auto perr = nlohmann::json::parse(long_prompt->body)["error"];
  EXPECT_EQ(perr["param"], "prompt");
  EXPECT_NE(perr["message"].get<std::string>().find("16"), std::string::npos) << long_prompt->body;
  auto legacy = post_json(again, "/v1/generate", R"({"prompt":"This License is long"})");
  ASSERT_TRUE(legacy);
  EXPECT_EQ(legacy->status, 413) << legacy->body;
  auto fits = post_json(again, "/v1/completions", R"({"prompt":"This License","max_tokens":2})");
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->status, 200) << fits->body;
  EXPECT_EQ(served.stop(), 0);
}

// --api-key-file: without the bearer key (or with a wrong one) 401 in the OpenAI
// shape; with it 200; /healthz needs none.
TEST_F(InferTest, ApiKeyIsRequiredWhenConfigured) {
  TempDir dir;
  const auto key_file = dir.path() / "key";
  std::ofstream(key_file) << "sk-test-123\n";
  Served served(checkpoint_dir(), {"--api-key-file", key_file.string()});
  ASSERT_TRUE(served.loaded);
  httplib::Client client("127.0.0.1", served.port);
  client.set_read_timeout(30, 0);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto expect_401 = [](const httplib::Result& r) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << r->body;
    auto e = nlohmann::json::parse(r->body)["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_EQ(e["code"], "invalid_api_key");
    EXPECT_TRUE(e.contains("param"));
  };
  expect_401(client.Get("/v1/models"));
  expect_401(post_json(client, "/v1/completions", R"({"prompt":"GNU","max_tokens":2})"));
  expect_401(client.Post("/v1/completions", httplib::Headers{{"Authorization", "Bearer sk-wrong"}},
                         R"({"prompt":"GNU","max_tokens":2})", "application/json"));
  expect_401(client.Post("/v1/generate", httplib::Headers{{"Authorization", "Basic sk-test-123"}},
                         R"({"prompt":"GNU"})", "application/json"));
  const httplib::Headers auth{{"Authorization", "Bearer sk-test-123"}};
  auto models = client.Get("/v1/models", auth);
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  auto done = client.Post("/v1/completions", auth, R"({"prompt":"GNU","max_tokens":2})", "application/json");
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200) << done->body;
  EXPECT_EQ(served.stop(), 0);

  std::ofstream(key_file, std::ios::trunc) << "  \n";
  auto empty = testkit::run_process(testkit::command({TESSEL_INFER_BIN, "--checkpoint", checkpoint_dir().string(),
                                                      "--serve", "--port", "0", "--api-key-file", key_file.string()}),
                                    std::chrono::seconds(60));
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("holds no key"), std::string::npos) << empty.err;
}

// Many streaming clients at once: every one gets its whole stream, none a reset.
TEST_F(InferTest, ManyConcurrentStreamsAllComplete) {
  Served served(checkpoint_dir(), {"--max-batch", "16", "--max-queue", "64"});
  ASSERT_TRUE(served.loaded);
  constexpr int kClients = 50;
  std::atomic<int> complete{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client client("127.0.0.1", served.port);
      client.set_read_timeout(60, 0);
      auto r = post_json(client, "/v1/completions", R"({"prompt":"GNU","max_tokens":12,"stream":true})");
      if (!r) {
        failures[i] = httplib::to_string(r.error());
        return;
      }
      auto events = sse_data(r->body);
      if (r->status == 200 && !events.empty() && events.back() == "[DONE]")
        ++complete;
      else
        failures[i] = std::to_string(r->status) + " " + r->body;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(complete.load(), kClients);
  for (const auto& f : failures) EXPECT_EQ(f, "");
  EXPECT_EQ(served.stop(), 0);
}

}  // namespace
}  // namespace tessel::workers
