// tessel-infer: deterministic greedy decoding, KV-cache decoding equal to
// full recompute (also across the context window jump), batch mode, the
// real binary serving HTTP on a port chosen by the kernel, and bf16 inference
// (deterministic; checkpoints of either precision served in either).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <torch/utils.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <sstream>
#include <unistd.h>

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

// A decoding step's linear layers take one matrix-vector product per sequence up to 4
// sequences and one matrix product past that (gpt.cpp): both give the logits of the
// full forward pass, for every sequence of a step of 1, 4 and 6.
TEST_F(InferTest, DecodingStepEqualsFullForwardAtEveryBatchSize) {
  auto loaded = load_model(checkpoint_dir(), torch::kCPU);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  auto& model = loaded->model;
  c10::InferenceMode guard;
  model->eval();
  for (int64_t batch : {1, 4, 6}) {
    std::vector<KvCache> caches;
    std::vector<torch::Tensor> sequences;
    std::vector<int64_t> next;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t length = 3 + b;  // sequences of different lengths
      auto tokens = torch::arange(40 + b, 40 + b + length + 1, torch::kLong).view({1, -1});
      caches.push_back(model->empty_cache());
      model->forward_cached(tokens.slice(1, 0, length), caches.back());
      sequences.push_back(tokens);
      next.push_back(40 + b + length);
    }
    std::vector<KvCache*> step_caches;
    for (auto& c : caches) step_caches.push_back(&c);
    auto step = model->forward_step(torch::tensor(next, torch::kLong).view({batch, 1}), step_caches);
    ASSERT_EQ(step.sizes(), (std::vector<int64_t>{batch, 1, model->config().vocab}));
    for (int64_t b = 0; b < batch; ++b) {
      auto full = model->forward(sequences[static_cast<size_t>(b)]).select(1, -1);  // [1, vocab]
      EXPECT_TRUE(torch::allclose(step[b], full, 1e-5, 1e-5))
          << "batch " << batch << ", sequence " << b << ": " << (step[b] - full).abs().max().item<float>();
    }
  }
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

// Reads a batched request to its end.
std::vector<uint8_t> drain(GenerationStream& stream) {
  std::vector<uint8_t> out;
  while (auto t = stream.next()) out.push_back(*t);
  return out;
}

TEST_F(InferTest, BatchedDecodingEqualsOneAtATime) {
  auto loaded = load_model(checkpoint_dir(), torch::kCPU);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  auto session = InferenceSession::open(checkpoint_dir(), DeviceRequest{"cpu"});
  ASSERT_TRUE(session.ok()) << session.error().message;
  ASSERT_TRUE((*session)->start_batching(BatchLimits{3, 16}).ok());
  // Different lengths (one longer than the context), 100 tokens cross the
  // window jump; more requests than the batch holds, so some wait and join later.
  const std::vector<std::string> prompts = {"This License", "GNU", std::string(40, 'a') + " the Program",
                                            "free software", "x"};
  std::vector<SamplingParams> params = {
      {100, 0.0, 0, 0}, {60, 0.0, 0, 0}, {70, 0.0, 0, 0}, {50, 0.8, 10, 3, 0.9}, {1, 0.0, 0, 0}};
  std::vector<std::shared_ptr<GenerationStream>> streams;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto s = (*session)->submit(prompts[i], params[i]);
    ASSERT_TRUE(s.ok() && *s != nullptr);
    streams.push_back(*s);
  }
  int64_t tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto batched = drain(*streams[i]);
    EXPECT_FALSE(streams[i]->error().has_value());
    EXPECT_EQ(batched, generate_tokens(loaded->model, bytes(prompts[i]), params[i], DecodeMode::kKvCache))
        << "prompt " << i;
    tokens += static_cast<int64_t>(batched.size());
  }
  EXPECT_EQ(tokens, 281);
  const auto stats = (*session)->batch_stats();
  EXPECT_LT(stats.steps, tokens);  // several sequences per step
  EXPECT_EQ(stats.active, 0);
  EXPECT_EQ(stats.waiting, 0);

  auto bad = (*session)->submit("", SamplingParams{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "prompt");
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

DeviceRequest cpu_in(const std::string& precision) {
  DeviceRequest r{"cpu"};
  r.precision = precision;
  return r;
}

TEST_F(InferTest, Bf16GreedyDecodingIsDeterministic) {
  auto a = InferenceSession::open(checkpoint_dir(), cpu_in("bf16"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = InferenceSession::open(checkpoint_dir(), cpu_in("bf16"));
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ((*a)->precision(), "bf16");
  SamplingParams greedy;
  greedy.max_new_tokens = 80;  // crosses the window jump (context 32)
  auto c1 = (*a)->complete("This License", greedy);
  auto c2 = (*a)->complete("This License", greedy);
  auto c3 = (*b)->complete("This License", greedy);
  ASSERT_TRUE(c1.ok() && c2.ok() && c3.ok());
  EXPECT_EQ(c1->tokens, 80);
  EXPECT_EQ(c1->text, c2->text);
  EXPECT_EQ(c1->text, c3->text);
  // The batch loop, alone and beside other requests, gives the same tokens.
  ASSERT_TRUE((*b)->start_batching(BatchLimits{4, 16}).ok());
  std::vector<std::shared_ptr<GenerationStream>> streams;
  for (const char* prompt : {"This License", "GNU", "This License"}) {
    auto s = (*b)->submit(prompt, greedy);
    ASSERT_TRUE(s.ok() && *s != nullptr);
    streams.push_back(*s);
  }
  const auto first = drain(*streams[0]);
  drain(*streams[1]);
  EXPECT_EQ(std::string(first.begin(), first.end()), c1->text);
  const auto third = drain(*streams[2]);
  EXPECT_EQ(third, first);

  auto fp32 = InferenceSession::open(checkpoint_dir(), cpu_in("auto"));
  ASSERT_TRUE(fp32.ok()) << fp32.error().message;
  EXPECT_EQ((*fp32)->precision(), "fp32");  // auto on CPU
  auto bad = InferenceSession::open(checkpoint_dir(), cpu_in("fp16"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "precision");
}

// A bf16 model's logits: the fp32 model's within a tolerance (same checkpoint, weights
// cast once), in the full forward and the decoding step. Tolerance 0.05 on logits up to
// about 2.6 (measured: 0.011; the decoding step against bf16's full forward 0.016);
// the likeliest byte agreed at all 23 positions (2 may differ).
TEST_F(InferTest, Bf16LogitsFollowFp32) {
  auto fp32 = load_model(checkpoint_dir(), torch::kCPU);
  auto bf16 = load_model(checkpoint_dir(), torch::kCPU);
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  bf16->model->set_compute_dtype(torch::kBFloat16);
  bf16->model->cast_product_weights();
  EXPECT_EQ(bf16->model->blocks->ptr<BlockImpl>(0)->fc->weight.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(bf16->model->ln_f->weight.scalar_type(), torch::kFloat);
  c10::InferenceMode guard;
  fp32->model->eval();
  bf16->model->eval();
  const std::string text = "This License applies to";
  auto tokens = torch::tensor(std::vector<int64_t>(text.begin(), text.end()), torch::kLong).view({1, -1});
  auto want = fp32->model->forward(tokens);
  auto got = bf16->model->forward(tokens);
  ASSERT_EQ(got.scalar_type(), torch::kFloat);
  const float diff = (want - got).abs().max().item<float>();
  EXPECT_LT(diff, 0.05f);
  EXPECT_GT(diff, 0.0f) << "bf16 computed exactly as fp32: was it on?";
  const auto agree = (want.argmax(-1) == got.argmax(-1)).sum().item<int64_t>();
  EXPECT_GE(agree, tokens.size(1) - 2) << agree << " of " << tokens.size(1);
  // The decoding step (bf16 KV cache) matches the bf16 full forward.
  KvCache cache = bf16->model->empty_cache();
  bf16->model->forward_cached(tokens.slice(1, 0, tokens.size(1) - 1), cache);
  EXPECT_EQ(cache.front().k.scalar_type(), torch::kBFloat16);
  auto step = bf16->model->forward_step(tokens.slice(1, tokens.size(1) - 1), {&cache}).select(1, 0);
  EXPECT_TRUE(torch::allclose(step, got.select(1, -1), 0.05, 0.05))
      << (step - got.select(1, -1)).abs().max().item<float>();
}

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

  TempDir out;
  std::unique_ptr<testkit::Child> server;
  int port = 0;
  bool loaded = false;
};

// The body of each "data: " event of a server-sent-event stream, in order.
std::vector<std::string> sse_data(const std::string& stream) {
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

httplib::Result post_json(httplib::Client& client, const std::string& path, const std::string& body) {
  return client.Post(path.c_str(), body, "application/json");
}

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
