// tessel-infer: text generation from a tessel-train checkpoint.
//   batch: --input FILE of JSON lines {"prompt": ...} -> JSON lines
//          {"prompt", "completion", "tokens"} on --output or stdout.
//   serve: --serve [--host H] [--port N | env TESSEL_PORT]; prints
//          {"event":"listening","port":N} on stdout once bound (before the
//          model is loaded: /healthz answers 503 until then), then
//          {"event":"ready"} once it answers requests. Limits: --http-* (the
//          shared HTTP server's timeouts, sizes and connection cap),
//          --max-prompt-tokens, --max-batch/--max-queue, --api-key-file.
// Errors: one line on stderr and a non-zero exit status.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "dist_env.h"
#include "generate_request.h"
#include "inference_server.h"
#include "inference_session.h"
#include "memory.h"
#include "tessel/http/fd_limit.hpp"

using namespace tessel::workers;

namespace {

int fail(const std::string& message, int code = 1) {
  std::cerr << "tessel-infer: " << message << std::endl;
  return code;
}

int run_batch(InferenceSession& session, const std::string& input, const std::string& output,
              const SamplingParams& defaults) {
  std::ifstream in(input);
  if (!in) return fail("--input " + input + ": cannot open: " + std::strerror(errno));
  std::ofstream file;
  if (!output.empty()) {
    file.open(output, std::ios::trunc);
    if (!file) return fail("--output " + output + ": cannot open: " + std::strerror(errno));
  }
  std::ostream& out = output.empty() ? std::cout : file;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "--input " + input + " line " + std::to_string(number);
    auto body = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return fail(where + ": not valid JSON");
    auto request = parse_generate_request(body, defaults);
    if (!request) return fail(where + ": " + field_message(request.error()));
    auto completion = session.complete(request->prompt, request->params);
    if (!completion) return fail(where + ": " + completion.error().message);
    out << dump_lossy({{"prompt", request->prompt},
                       {"completion", completion->text},
                       {"tokens", completion->tokens},
                       {"elapsed_s", completion->elapsed_s}})
        << '\n';
    out.flush();
    if (!out) return fail("writing output: " + std::string(std::strerror(errno)));
  }
  if (in.bad()) return fail("--input " + input + ": read error");
  return 0;
}

// SIGTERM/SIGINT are blocked in every thread and taken by one waiter thread
// (sigwait), which stops the server outside signal context.
sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  // The HTTP server's log lines (common/http, spdlog) go to stderr: stdout carries the
  // JSON lines ("listening", "ready", batch results) that callers parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tessel-infer"));
  CLI::App app{"tessel-infer: generate text from a tessel-train checkpoint"};
  std::string checkpoint, input, output, host = "127.0.0.1";
  DeviceRequest device;
  device.kind = "auto";
  SamplingParams defaults;
  bool serve = false;
  int port = -1;
  int threads = 0;
  std::string model_name = "tessel-gpt";
  BatchLimits limits;
  ServeOptions serve_options;
  auto& http_limits = serve_options.http;
  http_limits.max_connections = 4096;
  double head_timeout_s = 10, body_timeout_s = 30, idle_timeout_s = 60;
  std::string api_key_file;
  app.add_option("--checkpoint", checkpoint, "checkpoint file, or a folder (its newest checkpoint)")->required();
  auto* input_opt = app.add_option("--input", input, "JSON lines of {\"prompt\": ...}");
  app.add_option("--output", output, "where to write JSON lines (default stdout)");
  app.add_option("--max-new-tokens", defaults.max_new_tokens, "tokens to generate per prompt");
  app.add_option("--temperature", defaults.temperature, "0: greedy");
  app.add_option("--top-k", defaults.top_k, "sample among the k most likely bytes (0: all)");
  app.add_option("--seed", defaults.seed, "sampling seed");
  app.add_option("--device", device.kind, "auto|cpu|cuda|hpu");
  app.add_option("--hpu-plugin", device.hpu_plugin, "Gaudi PyTorch plugin library for --device hpu");
  app.add_option("--threads", threads, "torch intra-op threads (0: torch default)");
  auto* serve_opt = app.add_flag("--serve", serve, "serve HTTP instead of batch mode");
  app.add_option("--port", port, "HTTP port (0: any free port; default env TESSEL_PORT)");
  app.add_option("--host", host, "HTTP bind address");
  app.add_option("--served-model-name", model_name, "the model id of the OpenAI-compatible API");
  app.add_option("--max-batch", limits.max_batch, "--serve: sequences decoded together per step");
  app.add_option("--max-queue", limits.max_queue, "--serve: requests waiting for the batch (past it: 429)");
  app.add_option("--max-prompt-tokens", serve_options.max_prompt_tokens,
                 "--serve: longest prompt in tokens; past it 413 (default 0: the model's context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--api-key-file", api_key_file,
                 "--serve: a file holding the API key requests must send as \"Authorization: Bearer <key>\" "
                 "(/healthz stays open)");
  app.add_option("--http-threads", serve_options.io_threads, "--serve: HTTP I/O threads (default 2)")
      ->check(CLI::Range(1, 256));
  app.add_option("--http-head-timeout", head_timeout_s, "seconds to read a request head once it starts (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-body-timeout", body_timeout_s, "seconds to read a request body (default 30)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-idle-timeout", idle_timeout_s, "seconds a keep-alive connection may idle (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--http-max-head-bytes", http_limits.max_head_bytes,
                 "largest request head; past it 431 (default 16384)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 20));
  app.add_option("--http-max-body-bytes", http_limits.max_body_bytes,
                 "largest request body; past it 413 (default 1048576)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  auto* max_conns = app.add_option("--http-max-connections", http_limits.max_connections,
                                   "open connections at most; past it a 503 at once (default 4096, or the open "
                                   "file limit less 256)")
                        ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  input_opt->excludes(serve_opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(e.what(), 2);
  }
  if (auto s = validate(defaults); !s) {
    std::string flag = s.error().field;
    for (auto& c : flag) c = c == '_' ? '-' : c;
    return fail("--" + flag + " " + s.error().message, 2);
  }
  if (!serve && input.empty()) return fail("one of --input FILE or --serve is required", 2);
  if (auto s = validate(limits); !s) {
    std::string flag = s.error().field;
    for (auto& c : flag) c = c == '_' ? '-' : c;
    return fail("--" + flag + " " + s.error().message, 2);
  }
  if (threads < 0) return fail("--threads must be >= 0", 2);
  if (threads > 0) set_torch_threads(threads);
  if (serve) {
    if (port < 0) {
      auto env = process_env()("TESSEL_PORT");
      if (!env) return fail("--serve needs --port N or the TESSEL_PORT environment variable", 2);
      try {
        size_t used = 0;
        port = std::stoi(*env, &used);
        if (used != env->size()) throw std::invalid_argument("trailing characters");
      } catch (const std::exception&) {
        return fail("TESSEL_PORT=" + *env + " is not a port number", 2);
      }
    }
    if (port > 65535) return fail("--port must be in [0, 65535]", 2);
    if (!api_key_file.empty()) {
      auto key = read_api_key_file(api_key_file);
      if (!key) return fail(key.error().message, 2);
      serve_options.api_key = std::move(*key);
    }
    auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
    http_limits.head_timeout = ms(head_timeout_s);
    http_limits.body_timeout = ms(body_timeout_s);
    http_limits.idle_timeout = ms(idle_timeout_s);
    http_limits.max_connections =
        tessel::http::connection_cap(tessel::http::raise_fd_limit(), http_limits.max_connections, 1,
                                     max_conns->count() > 0, "--http-max-connections");
  }

  if (!serve) {
    auto session = InferenceSession::open(checkpoint, device);
    if (!session) return fail(session.error().message);
    return run_batch(**session, input, output, defaults);
  }

  const sigset_t signals = termination_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server starts threads
  InferenceServer server(defaults, model_name, serve_options);
  auto bound = server.bind(host, port);
  if (!bound) return fail(bound.error().message);
  std::atomic<InferenceSession*> live{nullptr};  // set once loaded; outlives the waiter
  std::thread waiter([&server, &live, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    // End the requests first: a handler waiting for tokens would hold up the server's stop.
    if (InferenceSession* s = live.load()) s->stop_batching();
    server.stop();
  });
  std::cout << nlohmann::json{{"event", "listening"}, {"host", host}, {"port", *bound}}.dump() << std::endl;
  // The server answers (/healthz: 503) while the model loads.
  tessel::Status status = tessel::ok_status();
  std::atomic<bool> served{false};
  std::thread serving([&server, &status, &served] {
    status = server.serve();
    served = true;
  });
  // stop() only stops a server that runs: wait for it before a load failure may need it.
  while (!server.running() && !served) std::this_thread::yield();
  auto session = InferenceSession::open(checkpoint, device);
  tessel::Status batching = session ? (*session)->start_batching(limits) : tessel::ok_status();
  if (session && batching) {
    live = session->get();
    server.attach(**session);
    std::cout << nlohmann::json{{"event", "ready"}}.dump() << std::endl;
  } else {
    server.stop();
  }
  serving.join();
  pthread_kill(waiter.native_handle(), SIGTERM);  // wake the waiter if serve() ended by itself
  waiter.join();
  if (!session) return fail(session.error().message);
  if (!batching) return fail(batching.error().message);
  if (!status) return fail(status.error().message);
  return 0;
}
