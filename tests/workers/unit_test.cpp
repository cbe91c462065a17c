// Pure worker logic, no LibTorch: config validation, torchrun env parsing,
// LR schedule, shard sampling, token choice, request parsing, throughput timing.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "batch_policy.h"
#include "batch_sampler.h"
#include "dist_env.h"
#include "generate_request.h"
#include "lr_schedule.h"
#include "model_config.h"
#include "precision.h"
#include "sampling.h"
#include "tessel/time/clock.hpp"
#include "throughput.h"
#include "train_options.h"

namespace tessel::workers {
namespace {

TEST(ModelConfig, RejectsDimNotDivisibleByHeads) {
  ModelConfig c;
  c.dim = 30;
  c.heads = 4;
  auto s = validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "--dim 30 is not divisible by --heads 4");
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  // wrap() adds context and keeps the code and field.
  auto wrapped = s.error().wrap("model config");
  EXPECT_EQ(wrapped.message, "model config: --dim 30 is not divisible by --heads 4");
  EXPECT_EQ(wrapped.code, ErrorCode::invalid_argument);
  EXPECT_EQ(wrapped.field, "dim");
}

TEST(ModelConfig, JsonRoundTrip) {
  ModelConfig c;
  c.layers = 3;
  c.tied_head = false;
  auto back = model_config_from_json(to_json(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_json(*back), to_json(c));
  EXPECT_FALSE(model_config_from_json(nlohmann::json{{"vocab", 256}}).ok());
}

TEST(TrainOptions, NamesTheFlag) {
  TrainOptions o;
  o.data = "x";
  o.out = "y";
  o.steps = 0;
  EXPECT_NE(validate(o).error().message.find("--steps"), std::string::npos);
  o.steps = 5;
  o.batch_size = 0;
  EXPECT_NE(validate(o).error().message.find("--batch-size"), std::string::npos);
  o.batch_size = 4;
  o.model.context = 1;
  EXPECT_NE(validate(o).error().message.find("--context"), std::string::npos);
  o.model.context = 64;
  o.precision = "fp16";
  EXPECT_EQ(validate(o).error().message, "--precision must be auto, fp32 or bf16, got 'fp16'");
  EXPECT_EQ(validate(o).error().field, "precision");
  o.precision = "bf16";
  EXPECT_TRUE(validate(o).ok());
}

TEST(Precision, ParsesTheFlagAndDefaultsToBf16OnlyOnHpu) {
  EXPECT_EQ(*parse_precision("fp32"), Precision::kFp32);
  EXPECT_EQ(*parse_precision("bf16"), Precision::kBf16);
  EXPECT_EQ(*parse_precision("auto"), std::nullopt);
  for (const char* bad : {"", "BF16", "fp16", "bfloat16"}) {
    auto r = parse_precision(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_EQ(r.error().field, "precision");
  }
  EXPECT_EQ(to_string(Precision::kFp32), "fp32");
  EXPECT_EQ(to_string(Precision::kBf16), "bf16");
  EXPECT_EQ(default_precision("hpu"), Precision::kBf16);
  EXPECT_EQ(default_precision("cpu"), Precision::kFp32);
  EXPECT_EQ(default_precision("cuda"), Precision::kFp32);
}

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(DistEnv, DefaultsToSingleProcess) {
  auto d = dist_env_from(fake_env({}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->world_size, 1);
  EXPECT_EQ(d->rank, 0);
}

TEST(DistEnv, ParsesTorchrunVariables) {
  auto d = dist_env_from(fake_env({{"RANK", "3"},
                                   {"WORLD_SIZE", "4"},
                                   {"LOCAL_RANK", "1"},
                                   {"MASTER_ADDR", "10.0.0.1"},
                                   {"MASTER_PORT", "29555"}}));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->rank, 3);
  EXPECT_EQ(d->local_rank, 1);
  EXPECT_EQ(d->master_addr, "10.0.0.1");
  EXPECT_EQ(d->master_port, 29555);
}

TEST(DistEnv, RejectsBadValues) {
  auto rank = dist_env_from(fake_env({{"RANK", "2"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(rank.ok());
  EXPECT_EQ(rank.error().message, "RANK=2 is not below WORLD_SIZE=2");
  EXPECT_EQ(rank.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(rank.error().field, "env.RANK");
  EXPECT_NE(dist_env_from(fake_env({{"WORLD_SIZE", "two"}})).error().message.find("WORLD_SIZE=two"), std::string::npos);
  EXPECT_FALSE(dist_env_from(fake_env({{"MASTER_PORT", "70000"}})).ok());
}

TEST(LrSchedule, WarmsUpThenDecaysToFloor) {
  LrSchedule s{1.0, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
  for (int i = 11; i < 110; ++i) EXPECT_LE(s.at(i), s.at(i - 1));
}

TEST(BatchSampler, OffsetsStayInShardAndAreReproducible) {
  const int64_t n = 1000, ctx = 16;
  ASSERT_TRUE(check_shards(n, 4, ctx).ok());
  for (int64_t shard = 0; shard < 4; ++shard) {
    auto r = shard_range(n, shard, 4);
    auto offs = sample_offsets(n, shard, 4, ctx, 64, 7, 3);
    for (auto o : offs) {
      EXPECT_GE(o, r.begin);
      EXPECT_LE(o + ctx + 1, r.end);
    }
    EXPECT_EQ(offs, sample_offsets(n, shard, 4, ctx, 64, 7, 3));
    EXPECT_NE(offs, sample_offsets(n, shard, 4, ctx, 64, 7, 4));
  }
  EXPECT_FALSE(check_shards(40, 4, ctx).ok());
}

TEST(ChooseToken, GreedyPicksArgmaxAndSamplingRespectsTopK) {
  std::vector<float> logits{0.1f, 3.0f, 2.9f, -1.0f};
  std::mt19937_64 rng(1);
  EXPECT_EQ(choose_token(logits, SamplingParams{}, rng), 1);
  SamplingParams p{1, 1.0, 2, 0};
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) seen.insert(choose_token(logits, p, rng));
  EXPECT_EQ(seen, (std::set<int>{1, 2}));
}

TEST(GenerateRequest, AppliesDefaultsAndNamesBadField) {
  SamplingParams defaults{20, 0.0, 0, 0};
  auto r = parse_generate_request({{"prompt", "hi"}}, defaults);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->params.max_new_tokens, 20);
  r = parse_generate_request({{"prompt", "hi"}, {"temperature", 0.5}, {"top_k", 5}}, defaults);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->params.top_k, 5);
  auto field_of = [&](const nlohmann::json& body) {
    auto bad = parse_generate_request(body, defaults);
    EXPECT_FALSE(bad.ok()) << body;
    if (bad.ok()) return std::string("(accepted)");
    EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument) << body;
    return bad.error().field;
  };
  EXPECT_EQ(field_of({{"prompt", 1}}), "prompt");
  EXPECT_EQ(field_of({{"prompt", ""}}), "prompt");
  EXPECT_EQ(field_of({{"prompt", "a"}, {"top_k", "5"}}), "top_k");
  EXPECT_EQ(field_of({{"prompt", "a"}, {"temperature", -1}}), "temperature");
  EXPECT_EQ(field_of({{"prompt", "a"}, {"max_new_tokens", -3}}), "max_new_tokens");
  EXPECT_EQ(field_of(nlohmann::json::array()), "");
}

TEST(GenerateRequest, FieldMessageJoinsFieldAndMessage) {
  auto bad = parse_generate_request({{"prompt", 5}}, SamplingParams{});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "must be a string");
  EXPECT_EQ(field_message(bad.error()), "prompt must be a string");
  auto body = parse_generate_request(nlohmann::json::array(), SamplingParams{});
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(field_message(body.error()), "request must be a JSON object");
  SamplingParams p;
  p.top_k = 300;
  auto s = validate(p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(field_message(s.error()), "top_k must be in [0, 256]");
}

TEST(GenerateRequest, DumpLossyReplacesInvalidUtf8) {
  EXPECT_NO_THROW(dump_lossy({{"completion", std::string("\xff\xfe ok")}}));
}

TEST(ThroughputMeter, RatesAndElapsedComeFromTheInjectedClock) {
  FakeClock clock;
  ThroughputMeter meter(clock);
  clock.advance_ms(500);  // set-up: counts in elapsed_s, not in the first rate
  meter.restart_interval();
  clock.advance_ms(2000);
  auto first = meter.lap(1000);  // 1000 tokens in 2 s
  EXPECT_DOUBLE_EQ(first.interval_s, 2.0);
  EXPECT_DOUBLE_EQ(first.per_s, 500.0);
  EXPECT_DOUBLE_EQ(first.elapsed_s, 2.5);
  clock.advance_ms(250);
  auto second = meter.lap(4096);  // the next interval starts at the previous lap
  EXPECT_DOUBLE_EQ(second.interval_s, 0.25);
  EXPECT_DOUBLE_EQ(second.per_s, 16384.0);
  EXPECT_DOUBLE_EQ(second.elapsed_s, 2.75);
  auto instant = meter.lap(1);  // no time passed: the interval is clamped to 1 ns, not 0
  EXPECT_DOUBLE_EQ(instant.interval_s, 1e-9);
  EXPECT_DOUBLE_EQ(instant.per_s, 1e9);
}

TEST(BatchPolicy, AdmitsOldestFirstUpToTheCapsAndSizesRetryAfter) {
  BatchLimits limits{4, 2};
  EXPECT_TRUE(validate(limits).ok());
  EXPECT_EQ(joiners(0, 10, limits), 4);
  EXPECT_EQ(joiners(3, 10, limits), 1);
  EXPECT_EQ(joiners(4, 10, limits), 0);
  EXPECT_EQ(joiners(1, 2, limits), 2);
  EXPECT_EQ(joiners(0, 0, limits), 0);
  EXPECT_TRUE(queue_has_room(1, limits));
  EXPECT_FALSE(queue_has_room(2, limits));
  EXPECT_EQ(retry_after_s(2, limits), 1);
  EXPECT_EQ(retry_after_s(40, limits), 10);
  EXPECT_EQ(retry_after_s(100000, limits), 60);
  EXPECT_EQ(validate(BatchLimits{0, 2}).error().field, "max_batch");
  EXPECT_EQ(validate(BatchLimits{1, 0}).error().field, "max_queue");
}

}  // namespace
}  // namespace tessel::workers
