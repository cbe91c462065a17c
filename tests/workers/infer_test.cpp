// tessel-infer: deterministic greedy decoding, KV-cache decoding equal to
// full recompute (also across the context window jump), batch mode, and the
// real binary serving HTTP on a port chosen by the kernel.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <torch/utils.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "checkpoint.h"
#include "generate.h"
#include "inference_server.h"
#include "inference_session.h"
#include "tessel/time/clock.hpp"
#include "test_support.h"
#include "trainer.h"

namespace tessel::workers {
namespace {

using testing::TempDir;

// One small model trained once for the whole suite.
class InferTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new TempDir();
    TrainOptions o;
    o.data = testing::text_fixture();
    o.out = dir_->path();
    o.steps = 40;
    o.batch_size = 8;
    o.model.layers = 2;
    o.model.heads = 2;
    o.model.dim = 32;
    o.model.context = 32;
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

  static TempDir* dir_;
};
TempDir* InferTest::dir_ = nullptr;

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST_F(InferTest, GreedyCompletionIsDeterministic) {
  auto a = InferenceSession::open(checkpoint_dir(), DeviceRequest{"cpu"});
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = InferenceSession::open(checkpoint_dir() / "ckpt-0000000040.pt", DeviceRequest{"cpu"});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ((*a)->step(), 40);
  SamplingParams greedy;
  greedy.max_new_tokens = 48;
  auto c1 = (*a)->complete("This License", greedy);
  auto c2 = (*a)->complete("This License", greedy);
  auto c3 = (*b)->complete("This License", greedy);
  ASSERT_TRUE(c1.ok() && c2.ok() && c3.ok());
  EXPECT_EQ(c1->tokens, 48);
  EXPECT_EQ(c1->text, c2->text);
  EXPECT_EQ(c1->text, c3->text);

  SamplingParams sampled{48, 0.9, 20, 7};
  auto s1 = (*a)->complete("This License", sampled);
  auto s2 = (*a)->complete("This License", sampled);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(s1->text, s2->text);  // same seed, same sample
}

TEST_F(InferTest, CompletionIsTimedOnTheSessionsClock) {
  FakeClock clock;
  auto session = InferenceSession::open(checkpoint_dir(), DeviceRequest{"cpu"}, clock);
  ASSERT_TRUE(session.ok()) << session.error().message;
  SamplingParams greedy;
  greedy.max_new_tokens = 8;
  auto c = (*session)->complete("GNU", greedy);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tokens, 8);
  EXPECT_EQ(c->elapsed_s, 0.0);  // the fake clock did not move, whatever the real time taken

  auto bad = (*session)->complete("GNU", SamplingParams{1, 0.0, 999, 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(bad.error().field, "top_k");
  EXPECT_EQ(bad.error().message, "top_k must be in [0, 256]");
}

TEST_F(InferTest, KvCacheLogitsEqualFullRecompute) {
  auto loaded = load_model(checkpoint_dir(), torch::kCPU);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  auto& model = loaded->model;
  torch::NoGradGuard no_grad;
  model->eval();
  auto tokens =
      torch::tensor(std::vector<int64_t>{84, 104, 101, 32, 71, 78, 85, 32, 71, 101, 110, 101, 114, 97}, torch::kLong)
          .view({1, -1});
  auto full = model->forward(tokens);
  KvCache cache = model->empty_cache();
  auto prefix = model->forward_cached(tokens.slice(1, 0, 5), cache);
  std::vector<torch::Tensor> parts{prefix};
  for (int64_t t = 5; t < tokens.size(1); ++t) parts.push_back(model->forward_cached(tokens.slice(1, t, t + 1), cache));
  auto incremental = torch::cat(parts, 1);
  EXPECT_EQ(cached_length(cache), tokens.size(1));
  EXPECT_TRUE(torch::allclose(full, incremental, 1e-5, 1e-5)) << (full - incremental).abs().max().item<float>();
}

TEST_F(InferTest, KvCacheDecodingEqualsFullRecompute) {
  auto loaded = load_model(checkpoint_dir(), torch::kCPU);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  // 100 new tokens with context 32: crosses the window jump several times.
  SamplingParams greedy{100, 0.0, 0, 0};
  auto kv = generate_tokens(loaded->model, bytes("the Program"), greedy, DecodeMode::kKvCache);
  auto full = generate_tokens(loaded->model, bytes("the Program"), greedy, DecodeMode::kFullRecompute);
  EXPECT_EQ(kv.size(), 100u);
  EXPECT_EQ(kv, full);
  // A prompt longer than the context is cut to its last `context` bytes.
  std::string long_prompt(100, 'a');
  long_prompt += " the terms of this License";
  SamplingParams sampled{40, 0.8, 10, 3};
  EXPECT_EQ(generate_tokens(loaded->model, bytes(long_prompt), sampled, DecodeMode::kKvCache),
            generate_tokens(loaded->model, bytes(long_prompt), sampled, DecodeMode::kFullRecompute));
}

TEST_F(InferTest, BatchModeWritesJsonLinesAndNamesBadLine) {
  TempDir dir;
  const auto input = dir.path() / "in.jsonl";
  const auto output = dir.path() / "out.jsonl";
  std::ofstream(input) << "{\"prompt\": \"GNU\"}\n\n{\"prompt\": \"free software\", \"max_new_tokens\": 5}\n";
  auto r = testkit::run_process(
      testkit::command({TESSEL_INFER_BIN, "--checkpoint", checkpoint_dir().string(), "--input", input.string(),
                        "--output", output.string(), "--max-new-tokens", "12", "--threads", "1"}),
      std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(output);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["prompt"], "GNU");
  EXPECT_EQ(lines[0]["tokens"], 12);
  EXPECT_EQ(lines[1]["tokens"], 5);
  EXPECT_TRUE(lines[1]["completion"].is_string());

  std::ofstream(input) << "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n";
  auto bad = testkit::run_process(testkit::command({TESSEL_INFER_BIN, "--checkpoint", checkpoint_dir().string(),
                                                    "--input", input.string(), "--threads", "1"}),
                                  std::chrono::seconds(60));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("line 2: prompt must be a string"), std::string::npos) << bad.err;
}

TEST_F(InferTest, ServeAnswersOverHttp) {
  TempDir out;
  auto o = testkit::command(
      {TESSEL_INFER_BIN, "--checkpoint", checkpoint_dir().string(), "--serve", "--port", "0", "--threads", "1"});
  o.stdout_path = out.str("serve.out");
  testkit::Child server(std::move(o));
  auto line = server.read_line(std::chrono::seconds(60));
  ASSERT_TRUE(line.has_value()) << "no listening line";
  auto event = nlohmann::json::parse(*line);
  ASSERT_EQ(event["event"], "listening");
  const int port = event["port"];
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

  int status = server.stop(SIGTERM, std::chrono::seconds(20));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
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
