// tessel-infer serving: the real binary on a port chosen by the kernel, its
// OpenAI-compatible API, admission (429), shutdown, a departed client's stream, and
// checkpoints of either precision served in either. Slow and misbehaving clients,
// limits and API keys are in infer_clients_test.cpp.
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
TEST_F(InferTest, ServeAnswersOverHttp) {
  Served served(checkpoint_dir());
  ASSERT_TRUE(served.loaded) << "no listening and ready lines";
  const int port = served.port;
  ASSERT_GT(port, 0);

  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(nlohmann::json::parse(health->body)["step"], 40);

  auto ok = client.Post("/v1/generate", R"({"prompt":"This License","max_new_tokens":16})", "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  auto body = nlohmann::json::parse(ok->body);
  EXPECT_EQ(body["tokens"], 16);
  auto again = client.Post("/v1/generate", R"({"prompt":"This License","max_new_tokens":16})", "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(nlohmann::json::parse(again->body)["completion"], body["completion"]);  // greedy by default

  auto bad = client.Post("/v1/generate", R"({"prompt":"x","top_k":-1})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto err = nlohmann::json::parse(bad->body)["error"];
  EXPECT_EQ(err["code"], "invalid_argument");
  EXPECT_EQ(err["field"], "top_k");

  EXPECT_EQ(err["message"], "top_k must be in [0, 256]");

  auto not_json = client.Post("/v1/generate", "{nope", "application/json");
  ASSERT_TRUE(not_json);
  EXPECT_EQ(not_json->status, 400);
  EXPECT_EQ(nlohmann::json::parse(not_json->body)["error"]["code"], "invalid_argument");
  auto unknown = client.Get("/v1/nothing-here");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(nlohmann::json::parse(unknown->body)["error"]["code"], "not_found");
  auto no_prompt = client.Post("/v1/generate", R"({"max_new_tokens":3})", "application/json");
  ASSERT_TRUE(no_prompt);
  EXPECT_EQ(nlohmann::json::parse(no_prompt->body)["error"]["field"], "prompt");

  int status = served.stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(InferTest, ServeSpeaksTheOpenAiApi) {
  Served served(checkpoint_dir(), {"--served-model-name", "gpl-gpt"});
  ASSERT_TRUE(served.loaded) << "no listening and ready lines";
  httplib::Client client("127.0.0.1", served.port);
  client.set_read_timeout(30, 0);

  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["id"], "gpl-gpt");

  // Greedy: the same text as /v1/generate.
  auto legacy = post_json(client, "/v1/generate", R"({"prompt":"This License","max_new_tokens":20})");
  ASSERT_TRUE(legacy);
  const std::string expected = nlohmann::json::parse(legacy->body)["completion"];
  auto done = post_json(client, "/v1/completions", R"({"model":"gpl-gpt","prompt":"This License","max_tokens":20})");
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, 200) << done->body;
  auto body = nlohmann::json::parse(done->body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["model"], "gpl-gpt");
  EXPECT_EQ(body["choices"][0]["text"], expected);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"], nlohmann::json::parse(R"({"prompt_tokens":12,"completion_tokens":20,"total_tokens":32})"));

  // A list of prompts: one choice each. A stop sequence ends a choice before it.
  ASSERT_GE(expected.size(), 4u);
  const std::string stop = expected.substr(2, 2);
  auto listed =
      post_json(client, "/v1/completions",
                nlohmann::json{{"prompt", {"This License", "GNU"}}, {"max_tokens", 20}, {"stop", stop}}.dump());
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->status, 200) << listed->body;
  auto choices = nlohmann::json::parse(listed->body)["choices"];
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0]["text"], expected.substr(0, expected.find(stop)));
  EXPECT_EQ(choices[0]["finish_reason"], "stop");
  EXPECT_EQ(choices[1]["index"], 1);

  // Streamed: chunks then [DONE]; their texts add up to the whole completion.
  auto streamed = post_json(client, "/v1/completions", R"({"prompt":"This License","max_tokens":20,"stream":true})");
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200) << streamed->body;
  EXPECT_EQ(streamed->get_header_value("Content-Type"), "text/event-stream");
  auto events = sse_data(streamed->body);
  ASSERT_GE(events.size(), 3u) << streamed->body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string joined;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    auto chunk = nlohmann::json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "text_completion");
    joined += chunk["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(chunk["choices"][0]["finish_reason"].is_null(), i + 2 < events.size()) << events[i];
  }
  EXPECT_EQ(joined, expected);

  // Chat, streamed: the role first, then content deltas.
  auto chat = post_json(client, "/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true})");
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;
  auto chat_events = sse_data(chat->body);
  ASSERT_GE(chat_events.size(), 2u);
  auto first = nlohmann::json::parse(chat_events.front());
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chat_events.back(), "[DONE]");
  auto chat_whole =
      post_json(client, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":8})");
  ASSERT_TRUE(chat_whole);
  EXPECT_EQ(nlohmann::json::parse(chat_whole->body)["choices"][0]["message"]["role"], "assistant");

  // Errors in the OpenAI shape, naming the param.
  auto expect_error = [&](const std::string& path, const std::string& request, int status, const char* param) {
    auto r = post_json(client, path, request);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << request << " -> " << r->body;
    auto e = nlohmann::json::parse(r->body)["error"];
    EXPECT_TRUE(e["message"].is_string()) << r->body;
    EXPECT_TRUE(e["type"].is_string()) << r->body;
    EXPECT_TRUE(e.contains("code")) << r->body;
    if (param == nullptr) {
      EXPECT_TRUE(e["param"].is_null()) << r->body;
    } else {
      EXPECT_EQ(e["param"], param) << r->body;
    }
  };
  expect_error("/v1/completions", R"({"prompt":"x","n":2})", 400, "n");
  expect_error("/v1/completions", R"({"prompt":"x","max_tokens":"many"})", 400, "max_tokens");
  expect_error("/v1/completions", R"({"prompt":"x","bogus":true})", 400, "bogus");
  expect_error("/v1/completions", R"({"prompt":"x","model":"gpt-4"})", 404, "model");
  expect_error("/v1/completions", "{nope", 400, nullptr);
  expect_error("/v1/chat/completions", R"({"messages":"hi"})", 400, "messages");
  EXPECT_EQ(served.stop(), 0);
}

TEST_F(InferTest, FullQueueAnswers429WithRetryAfter) {
  Served served(checkpoint_dir(), {"--max-batch", "1", "--max-queue", "1"});
  ASSERT_TRUE(served.loaded);
  std::atomic<bool> hang_up{false};
  // Long streams: the first fills the batch, the second the queue.
  auto long_stream = [&] {
    httplib::Client client("127.0.0.1", served.port);
    client.set_read_timeout(60, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = R"({"prompt":"GNU","max_tokens":100000,"stream":true})";
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return !hang_up.load(); };
    client.send(req);
  };
  httplib::Client probe("127.0.0.1", served.port);
  probe.set_read_timeout(30, 0);
  auto wait_for = [&](const char* key, int value) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = probe.Get("/healthz");
      if (r && nlohmann::json::parse(r->body)[key] == value) return true;
    }
    return false;
  };
  // Whatever happens below, the clients hang up and are joined before the server stops.
  struct Clients {
    std::atomic<bool>& hang_up;
    std::vector<std::thread> threads;
    ~Clients() {
      hang_up = true;
      for (auto& t : threads) t.join();
    }
  } clients{hang_up, {}};
  clients.threads.emplace_back(long_stream);
  ASSERT_TRUE(wait_for("requests_active", 1));
  clients.threads.emplace_back(long_stream);
  ASSERT_TRUE(wait_for("requests_waiting", 1));

  auto refused = post_json(probe, "/v1/completions", R"({"prompt":"x","max_tokens":1})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  auto err = nlohmann::json::parse(refused->body)["error"];
  EXPECT_EQ(err["code"], "rate_limit_exceeded");
  EXPECT_TRUE(err["message"].is_string());
  auto legacy = post_json(probe, "/v1/generate", R"({"prompt":"x","max_new_tokens":1})");
  ASSERT_TRUE(legacy);
  EXPECT_EQ(legacy->status, 429);

  hang_up = true;  // both clients leave; their requests leave the batch and the queue
  for (auto& t : clients.threads) t.join();
  clients.threads.clear();
  EXPECT_TRUE(wait_for("requests_cancelled", 2));
  EXPECT_TRUE(wait_for("requests_active", 0));
  auto after = post_json(probe, "/v1/completions", R"({"prompt":"x","max_tokens":2})");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(served.stop(), 0);
}

TEST_F(InferTest, SigtermEndsAServerWithAStreamInFlight) {
  Served served(checkpoint_dir());
  ASSERT_TRUE(served.loaded);
  std::thread reader([&] {
    httplib::Client client("127.0.0.1", served.port);
    client.set_read_timeout(60, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = R"({"prompt":"GNU","max_tokens":100000,"stream":true})";
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return true; };
    client.send(req);
  });
  httplib::Client probe("127.0.0.1", served.port);
  bool active = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!active && std::chrono::steady_clock::now() < deadline) {
    auto r = probe.Get("/healthz");
    active = r && nlohmann::json::parse(r->body)["requests_active"] == 1;
  }
  EXPECT_TRUE(active);
  // The stream ends (unavailable) instead of holding the server until its 100000 tokens.
  EXPECT_EQ(served.stop(), 0);
  reader.join();
}

TEST_F(InferTest, HealthzIs503UntilTheModelIsAttached) {
  InferenceServer server(SamplingParams{}, "tessel-gpt");
  auto port = server.bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.error().message;
  std::thread serving([&server] { (void)server.serve(); });
  httplib::Client client("127.0.0.1", *port);
  client.set_read_timeout(30, 0);
  auto loading = client.Get("/healthz");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  EXPECT_EQ(nlohmann::json::parse(loading->body)["status"], "loading");
  auto early = post_json(client, "/v1/completions", R"({"prompt":"x"})");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 503);
  EXPECT_EQ(nlohmann::json::parse(early->body)["error"]["type"], "server_error");

  auto session = InferenceSession::open(checkpoint_dir(), DeviceRequest{"cpu"});
  ASSERT_TRUE(session.ok()) << session.error().message;
  ASSERT_TRUE((*session)->start_batching(BatchLimits{}).ok());
  server.attach(**session);
  auto ready = client.Get("/healthz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(nlohmann::json::parse(ready->body)["status"], "ok");
  server.stop();
  serving.join();
}

TEST_F(InferTest, StreamOfAClientThatLeftStops) {
  Served served(checkpoint_dir());
  ASSERT_TRUE(served.loaded);
  httplib::Client client("127.0.0.1", served.port);
  client.set_read_timeout(30, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = R"({"prompt":"GNU","max_tokens":100000,"stream":true})";
  req.set_header("Content-Type", "application/json");
  int pieces = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++pieces < 3; };  // then hang up
  client.send(req);
  EXPECT_EQ(pieces, 3);

  // The generation ends at its next token, not 100000 tokens later.
  httplib::Client probe("127.0.0.1", served.port);
  nlohmann::json health;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = probe.Get("/healthz");
    ASSERT_TRUE(r);
    health = nlohmann::json::parse(r->body);
    if (health["requests_cancelled"] == 1 && health["requests_active"] == 0) break;
  }
  EXPECT_EQ(health["requests_cancelled"], 1) << health;
  EXPECT_EQ(health["requests_active"], 0) << health;
  EXPECT_EQ(served.stop(), 0);
}

// The HTTP server's log lines go to stderr: stdout's first line is still "listening"
// (a connection cap past the open-file limit always logs a warning).
TEST_F(InferTest, ServerLogLinesStayOffStdout) {
  Served served(checkpoint_dir(), {"--http-max-connections", "1048576"});
  EXPECT_TRUE(served.loaded) << "stdout did not start with the listening and ready lines";
  EXPECT_EQ(served.stop(), 0);
}

// The suite's checkpoint was trained in fp32: served in bf16. A checkpoint trained in
// bf16: served in fp32 and in bf16. /v1/models and /healthz say which precision runs.
TEST_F(InferTest, CheckpointsServeInEitherPrecision) {
  TempDir bf16_dir;
  TrainOptions o = testing::tiny_training(bf16_dir.path(), 12);
  o.precision = "bf16";
  auto trained = run_training(o, TrainEnv{});
  ASSERT_TRUE(trained.ok()) << trained.error().message;
  struct Case {
    std::filesystem::path checkpoint;
    std::string precision;
  };
  for (const auto& c : {Case{checkpoint_dir(), "bf16"}, Case{bf16_dir.path(), "fp32"}, Case{bf16_dir.path(), "bf16"}}) {
    SCOPED_TRACE(c.checkpoint.string() + " in " + c.precision);
    Served served(c.checkpoint, {"--precision", c.precision});
    ASSERT_TRUE(served.loaded) << "no listening and ready lines";
    httplib::Client client("127.0.0.1", served.port);
    client.set_read_timeout(30, 0);
    auto models = client.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["precision"], c.precision);
    auto health = client.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(nlohmann::json::parse(health->body)["precision"], c.precision);
    const std::string request = R"({"prompt":"This License","max_tokens":16})";
    auto one = post_json(client, "/v1/completions", request);
    auto two = post_json(client, "/v1/completions", request);
    ASSERT_TRUE(one && two);
    ASSERT_EQ(one->status, 200) << one->body;
    EXPECT_EQ(nlohmann::json::parse(one->body)["choices"][0]["text"],
              nlohmann::json::parse(two->body)["choices"][0]["text"]);  // temperature 0
    EXPECT_EQ(served.stop(), 0);
  }
}

TEST_F(InferTest, UnknownPrecisionFailsAtStartWithOneLine) {
  auto r = testkit::run_process(testkit::command({TESSEL_INFER_BIN, "--checkpoint", checkpoint_dir().string(),
                                                  "--serve", "--port", "0", "--precision", "half"}),
                                std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tessel-infer: --precision must be auto, fp32 or bf16, got 'half'\n");
  EXPECT_EQ(r.out, "");  // before binding: no "listening" line
}

TEST_F(InferTest, ServeWithoutPortFails) {
  auto o = testkit::command({TESSEL_INFER_BIN, "--checkpoint", checkpoint_dir().string(), "--serve"});
  o.env["TESSEL_PORT"] = "";
  auto r = testkit::run_process(o, std::chrono::seconds(60));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("TESSEL_PORT"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessel::workers
