// Pure worker logic, no LibTorch: config validation, torchrun env parsing,
// LR schedule, shard sampling, token choice, request parsing.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "batch_sampler.h"
#include "dist_env.h"
#include "generate_request.h"
#include "lr_schedule.h"
#include "model_config.h"
#include "sampling.h"
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
  EXPECT_EQ(dist_env_from(fake_env({{"RANK", "2"}, {"WORLD_SIZE", "2"}})).error().message,
            "RANK=2 is not below WORLD_SIZE=2");
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
  GenerateRequest r;
  EXPECT_FALSE(parse_generate_request({{"prompt", "hi"}}, defaults, r).has_value());
  EXPECT_EQ(r.params.max_new_tokens, 20);
  EXPECT_FALSE(parse_generate_request({{"prompt", "hi"}, {"temperature", 0.5}, {"top_k", 5}}, defaults, r));
  EXPECT_EQ(r.params.top_k, 5);
  EXPECT_EQ(parse_generate_request({{"prompt", 1}}, defaults, r)->field, "prompt");
  EXPECT_EQ(parse_generate_request({{"prompt", ""}}, defaults, r)->field, "prompt");
  EXPECT_EQ(parse_generate_request({{"prompt", "a"}, {"top_k", "5"}}, defaults, r)->field, "top_k");
  EXPECT_EQ(parse_generate_request({{"prompt", "a"}, {"temperature", -1}}, defaults, r)->field, "temperature");
  EXPECT_EQ(parse_generate_request({{"prompt", "a"}, {"max_new_tokens", -3}}, defaults, r)->field, "max_new_tokens");
  EXPECT_EQ(parse_generate_request(nlohmann::json::array(), defaults, r)->field, "");
}

TEST(GenerateRequest, DumpLossyReplacesInvalidUtf8) {
  EXPECT_NO_THROW(dump_lossy({{"completion", std::string("\xff\xfe ok")}}));
}

}  // namespace
}  // namespace tessel::workers
