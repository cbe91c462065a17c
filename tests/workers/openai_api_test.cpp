// The OpenAI-compatible API's pure parts: request parsing (defaults, bad types
// naming the param, unknown fields, n), the chat template, stop sequences and
// UTF-8 holding in streams, the response, chunk and error shapes, nucleus sampling.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "openai_api.h"
#include "sampling.h"

namespace tessel::workers {
namespace {

using nlohmann::json;

SamplingParams defaults() {
  SamplingParams d;
  d.max_new_tokens = 32;
  return d;
}

std::string param_of(const Result<OpenAiRequest>& r) { return r.ok() ? "<ok>" : r.error().field; }

TEST(OpenAiRequest, CompletionDefaultsAndFields) {
  auto r = parse_completion_request(json{{"prompt", "GNU"}}, defaults());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->chat);
  EXPECT_EQ(r->prompts, std::vector<std::string>{"GNU"});
  EXPECT_EQ(r->params.max_new_tokens, 32);
  EXPECT_FALSE(r->stream);

  auto full = parse_completion_request(json::parse(R"({"model":"m","prompt":["a","b"],"max_tokens":5,
      "temperature":0.7,"top_p":0.9,"top_k":-1,"seed":3,"stop":["\n","END"],"n":1,"stream":true,"user":"u",
      "presence_penalty":0,"logprobs":null})"),
                                       defaults());
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_EQ(full->model, "m");
  EXPECT_EQ(full->prompts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(full->params.max_new_tokens, 5);
  EXPECT_DOUBLE_EQ(full->params.temperature, 0.7);
  EXPECT_DOUBLE_EQ(full->params.top_p, 0.9);
  EXPECT_EQ(full->params.top_k, 0);
  EXPECT_EQ(full->params.seed, 3u);
  EXPECT_EQ(full->stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(full->stream);
  EXPECT_EQ(prompt_tokens(*full), 2);

  auto one_stop = parse_completion_request(json{{"prompt", "x"}, {"stop", "."}}, defaults());
  ASSERT_TRUE(one_stop.ok());
  EXPECT_EQ(one_stop->stop, std::vector<std::string>{"."});
}

TEST(OpenAiRequest, BadTypesNameTheParam) {
  auto bad = [](const char* body) { return param_of(parse_completion_request(json::parse(body), defaults())); };
  EXPECT_EQ(bad(R"({})"), "prompt");
  EXPECT_EQ(bad(R"({"prompt": 5})"), "prompt");
  EXPECT_EQ(bad(R"({"prompt": []})"), "prompt");
  EXPECT_EQ(bad(R"({"prompt": ["a", 1]})"), "prompt");
  EXPECT_EQ(bad(R"({"prompt": ""})"), "prompt");
  EXPECT_EQ(bad(R"({"prompt": "a", "max_tokens": "9"})"), "max_tokens");
  EXPECT_EQ(bad(R"({"prompt": "a", "max_tokens": -1})"), "max_tokens");
  EXPECT_EQ(bad(R"({"prompt": "a", "temperature": "hot"})"), "temperature");
  EXPECT_EQ(bad(R"({"prompt": "a", "top_p": 0})"), "top_p");
  EXPECT_EQ(bad(R"({"prompt": "a", "top_p": 1.5})"), "top_p");
  EXPECT_EQ(bad(R"({"prompt": "a", "top_k": 1.5})"), "top_k");
  EXPECT_EQ(bad(R"({"prompt": "a", "seed": -2})"), "seed");
  EXPECT_EQ(bad(R"({"prompt": "a", "stop": 3})"), "stop");
  EXPECT_EQ(bad(R"({"prompt": "a", "stop": [""]})"), "stop");
  EXPECT_EQ(bad(R"({"prompt": "a", "stop": ["1","2","3","4","5"]})"), "stop");
  EXPECT_EQ(bad(R"({"prompt": "a", "n": 2})"), "n");
  EXPECT_EQ(bad(R"({"prompt": "a", "stream": "yes"})"), "stream");
  EXPECT_EQ(bad(R"({"prompt": "a", "model": 7})"), "model");
  EXPECT_EQ(bad(R"({"prompt": "a", "frobnicate": 1})"), "frobnicate");
  EXPECT_EQ(bad(R"({"prompt": "a", "presence_penalty": 0.5})"), "presence_penalty");
  EXPECT_EQ(bad(R"({"prompt": "a", "logprobs": true})"), "logprobs");
  EXPECT_EQ(param_of(parse_completion_request(json::array(), defaults())), "");

  auto n = parse_completion_request(json{{"prompt", "a"}, {"n", 3}}, defaults());
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(n.error().message, "must be 1 (one choice per prompt)");
}

TEST(OpenAiRequest, ChatRendersMessagesWithTheTemplate) {
  auto r = parse_chat_request(json::parse(R"({"messages":[{"role":"system","content":"Be brief."},
      {"role":"user","content":"Hi"}],"max_completion_tokens":4})"),
                              defaults());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->chat);
  EXPECT_EQ(r->prompts, std::vector<std::string>{"<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n"});
  EXPECT_EQ(r->params.max_new_tokens, 4);

  auto bad = [](const char* body) { return param_of(parse_chat_request(json::parse(body), defaults())); };
  EXPECT_EQ(bad(R"({})"), "messages");
  EXPECT_EQ(bad(R"({"messages": []})"), "messages");
  EXPECT_EQ(bad(R"({"messages": [{"role":"robot","content":"x"}]})"), "messages");
  EXPECT_EQ(bad(R"({"messages": [{"role":"user","content":5}]})"), "messages");
  EXPECT_EQ(bad(R"({"messages": [{"role":"user","content":"x"}], "prompt": "y"})"), "prompt");
  EXPECT_EQ(bad(R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 0.5})"), "max_tokens");
}

TEST(OpenAiError, HasTheOpenAiShape) {
  auto e = openai_error(Error::invalid("must be 1", "n"), 400);
  EXPECT_EQ(e, json::parse(R"({"error":{"message":"n must be 1","type":"invalid_request_error","param":"n",
      "code":"invalid_argument"}})"));
  auto server = openai_error(Error::internal("boom"), 500);
  EXPECT_EQ(server["error"]["type"], "server_error");
  EXPECT_TRUE(server["error"]["param"].is_null());
}

TEST(StopMatcher, HoldsBackAPossibleStopAndCutsIt) {
  StopMatcher m({"END"});
  std::string sent;
  for (char c : std::string("abcEN")) {
    EXPECT_TRUE(m.push(c));
    sent += m.take_ready();
  }
  EXPECT_EQ(sent, "abc");  // "EN" may start "END": held back
  EXPECT_TRUE(m.push('X'));
  sent += m.take_ready();
  EXPECT_EQ(sent, "abcENX");
  for (char c : std::string("yEND")) {
    if (!m.push(c)) break;
    sent += m.take_ready();
  }
  EXPECT_TRUE(m.stopped());
  EXPECT_FALSE(m.push('z'));
  sent += m.take_rest();
  EXPECT_EQ(sent, "abcENXy");
  EXPECT_EQ(m.text(), "abcENXy");
}

TEST(StopMatcher, SendsOnlyWholeUtf8Characters) {
  StopMatcher m({});
  const std::string euro = "\xE2\x82\xAC";
  EXPECT_TRUE(m.push(euro[0]));
  EXPECT_EQ(m.take_ready(), "");
  EXPECT_TRUE(m.push(euro[1]));
  EXPECT_EQ(m.take_ready(), "");
  EXPECT_TRUE(m.push(euro[2]));
  EXPECT_EQ(m.take_ready(), euro);
  EXPECT_TRUE(m.push('\xE2'));  // a character cut off by the end of generation
  EXPECT_EQ(m.take_ready(), "");
  EXPECT_EQ(m.take_rest(), "\xE2");
}

TEST(OpenAiShapes, CompletionChatChunksAndModels) {
  auto req = parse_completion_request(json{{"prompt", "abc"}}, defaults());
  ASSERT_TRUE(req.ok());
  auto body = completion_response(*req, "cmpl-1", 1700000000, "tessel-gpt", {{"xyz", "length"}}, 3);
  EXPECT_EQ(body, json::parse(R"({"id":"cmpl-1","object":"text_completion","created":1700000000,
      "model":"tessel-gpt","choices":[{"index":0,"text":"xyz","logprobs":null,"finish_reason":"length"}],
      "usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}})"));
  auto chunk = completion_chunk(*req, "cmpl-1", 5, "tessel-gpt", 0, {"x", ""}, true);
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "x");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());

  auto chat = parse_chat_request(json::parse(R"({"messages":[{"role":"user","content":"Hi"}]})"), defaults());
  ASSERT_TRUE(chat.ok());
  auto answer = completion_response(*chat, "chatcmpl-2", 5, "tessel-gpt", {{"Hello", "stop"}}, 5);
  EXPECT_EQ(answer["object"], "chat.completion");
  EXPECT_EQ(answer["choices"][0]["message"], json::parse(R"({"role":"assistant","content":"Hello"})"));
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
  auto first = completion_chunk(*chat, "chatcmpl-2", 5, "tessel-gpt", 0, {"He", ""}, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":"He"})"));
  auto last = completion_chunk(*chat, "chatcmpl-2", 5, "tessel-gpt", 0, {"", "stop"}, false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");

  EXPECT_EQ(models_response("tessel-gpt", 5)["data"][0]["id"], "tessel-gpt");
  EXPECT_FALSE(models_response("tessel-gpt", 5)["data"][0].contains("precision"));  // while loading
  EXPECT_EQ(models_response("tessel-gpt", 5, "bf16")["data"][0]["precision"], "bf16");
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(ChooseToken, TopPKeepsTheNucleus) {
  // Probabilities about 0.64, 0.24, 0.09, 0.03: top_p 0.5 leaves only the first.
  const std::vector<float> logits = {3.0F, 2.0F, 1.0F, -0.2F};
  SamplingParams p;
  p.temperature = 1.0;
  p.top_p = 0.5;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(choose_token(logits, p, rng), 0);
  p.top_p = 0.8;  // the first two
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) seen.insert(choose_token(logits, p, rng));
  EXPECT_EQ(seen, (std::set<int>{0, 1}));
  p.top_p = 0.0;
  EXPECT_EQ(validate(p).error().field, "top_p");
}

}  // namespace
}  // namespace tessel::workers
