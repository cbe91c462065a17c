// tessel-infer: text generation from a tessel-train checkpoint.
//   batch: --input FILE of JSON lines {"prompt": ...} -> JSON lines
//          {"prompt", "completion", "tokens"} on --output or stdout.
//   serve: --serve [--host H] [--port N | env TESSEL_PORT]; prints
//          {"event":"listening","port":N} on stdout once bound (before the
//          model is loaded: /healthz answers 503 until then), then
//          {"event":"ready","device","precision"} once it answers requests.
//   --precision auto|fp32|bf16: bf16 casts the weights once at load. Limits: --http-* (the
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
#include <optional>
#include <string>
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

// The command line: parse_flags() fills it, settle_flags() checks it.
struct InferFlags {
  std::string checkpoint, input, output, host = "127.0.0.1";
  DeviceRequest device;
  SamplingParams defaults;
  bool serve = false;
  int port = -1;
  int threads = 0;
  std::string model_name = "tessel-gpt";
  BatchLimits limits;
  ServeOptions serve_options;
  double head_timeout_s = 10, body_timeout_s = 30, idle_timeout_s = 60;
  std::string api_key_file;
  bool max_connections_given = false;  // --http-max-connections was on the command line.
};

// --serve's HTTP limits: the shared HTTP server's timeouts, sizes and connection cap.
// Returns --http-max-connections, whose count() says whether it was given.
CLI::Option* add_http_options(CLI::App& app, InferFlags& f) {
  auto& http_limits = f.serve_options.http;
  app.add_option("--http-threads", f.serve_options.io_threads, "--serve: HTTP I/O threads (default 2)")
      ->check(CLI::Range(1, 256));
  app.add_option("--http-head-timeout", f.head_timeout_s, "seconds to read a request head once it starts (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-body-timeout", f.body_timeout_s, "seconds to read a request body (default 30)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-idle-timeout", f.idle_timeout_s, "seconds a keep-alive connection may idle (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--http-max-head-bytes", http_limits.max_head_bytes,
                 "largest request head; past it 431 (default 16384)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 20));
  app.add_option("--http-max-body-bytes", http_limits.max_body_bytes,
                 "largest request body; past it 413 (default 1048576)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  return app
      .add_option("--http-max-connections", http_limits.max_connections,
                  "open connections at most; past it a 503 at once (default 4096, or the open "
                  "file limit less 256)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
}

// Reads the command line into `f`. Returns the exit code when the process ends here
// (--help: 0, a bad flag: 2), else nullopt.
std::optional<int> parse_flags(int argc, char** argv, InferFlags& f) {
  CLI::App app{"tessel-infer: generate text from a tessel-train checkpoint"};
  f.device.kind = "auto";
  f.serve_options.http.max_connections = 4096;
  app.add_option("--checkpoint", f.checkpoint, "checkpoint file, or a folder (its newest checkpoint)")->required();
  auto* input_opt = app.add_option("--input", f.input, "JSON lines of {\"prompt\": ...}");
  app.add_option("--output", f.output, "where to write JSON lines (default stdout)");
  app.add_option("--max-new-tokens", f.defaults.max_new_tokens, "tokens to generate per prompt");
  app.add_option("--temperature", f.defaults.temperature, "0: greedy");
  app.add_option("--top-k", f.defaults.top_k, "sample among the k most likely bytes (0: all)");
  app.add_option("--seed", f.defaults.seed, "sampling seed");
  app.add_option("--device", f.device.kind, "auto|cpu|cuda|hpu");
  app.add_option("--hpu-plugin", f.device.hpu_plugin, "Gaudi PyTorch plugin library for --device hpu");
  app.add_option("--precision", f.device.precision,
                 "auto|fp32|bf16: bf16 casts the weights once at load and multiplies in bf16 (auto: bf16 on hpu, "
                 "else fp32)");
  app.add_option("--threads", f.threads, "torch intra-op threads (0: torch default)");
  auto* serve_opt = app.add_flag("--serve", f.serve, "serve HTTP instead of batch mode");
  app.add_option("--port", f.port, "HTTP port (0: any free port; default env TESSEL_PORT)");
  app.add_option("--host", f.host, "HTTP bind address");
  app.add_option("--served-model-name", f.model_name, "the model id of the OpenAI-compatible API");
  app.add_option("--max-batch", f.limits.max_batch, "--serve: sequences decoded together per step");
  app.add_option("--max-queue", f.limits.max_queue, "--serve: requests waiting for the batch (past it: 429)");
  app.add_option("--max-prompt-tokens", f.serve_options.max_prompt_tokens,
                 "--serve: longest prompt in tokens; past it 413 (default 0: the model's context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--api-key-file", f.api_key_file,
                 "--serve: a file holding the API key requests must send as \"Authorization: Bearer <key>\" "
                 "(/healthz stays open)");
  auto* max_conns = add_http_options(app, f);
  input_opt->excludes(serve_opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(e.what(), 2);
  }
  f.max_connections_given = max_conns->count() > 0;
  return std::nullopt;
}

// An invalid sampling parameter or batch limit as the flag that set it:
// "--max-new-tokens must be ...".
tessel::Error flag_error(const tessel::Error& e) {
  std::string flag = e.field;
  for (auto& c : flag) c = c == '_' ? '-' : c;
  return tessel::Error("--" + flag + " " + e.message, e.code, e.field);
}

// --serve: the port (--port, else TESSEL_PORT), the API key, and the HTTP limits.
tessel::Status settle_serve_flags(InferFlags& f) {
  if (f.port < 0) {
    auto env = process_env()("TESSEL_PORT");
    if (!env) return tessel::Error("--serve needs --port N or the TESSEL_PORT environment variable");
    size_t used = 0;
    try {
      f.port = std::stoi(*env, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != env->size()) return tessel::Error("TESSEL_PORT=" + *env + " is not a port number");
  }
  if (f.port > 65535) return tessel::Error("--port must be in [0, 65535]");
  if (!f.api_key_file.empty()) {
    auto key = read_api_key_file(f.api_key_file);
    if (!key) return key.error();
    f.serve_options.api_key = std::move(*key);
  }
  auto& http_limits = f.serve_options.http;
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  http_limits.head_timeout = ms(f.head_timeout_s);
  http_limits.body_timeout = ms(f.body_timeout_s);
  http_limits.idle_timeout = ms(f.idle_timeout_s);
  http_limits.max_connections =
      tessel::http::connection_cap(tessel::http::raise_fd_limit(), http_limits.max_connections, 1,
                                   f.max_connections_given, "--http-max-connections");
  return tessel::ok_status();
}

// Checks the flags (a usage error, exit 2, when one is wrong) and sets torch's threads.
tessel::Status settle_flags(InferFlags& f) {
  if (auto s = validate(f.defaults); !s) return flag_error(s.error());
  if (auto p = parse_precision(f.device.precision); !p) return p.error();
  if (!f.serve && f.input.empty()) return tessel::Error("one of --input FILE or --serve is required");
  if (auto s = validate(f.limits); !s) return flag_error(s.error());
  if (f.threads < 0) return tessel::Error("--threads must be >= 0");
  if (f.threads > 0) set_torch_threads(f.threads);
  if (f.serve) return settle_serve_flags(f);
  return tessel::ok_status();
}

// --serve: binds, prints {"event":"listening"}, loads the model while /healthz answers
// 503, prints {"event":"ready",...} and serves until SIGTERM or SIGINT. Returns the exit code.
int serve_http(const InferFlags& f) {
  const sigset_t signals = termination_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the server starts threads
  InferenceServer server(f.defaults, f.model_name, f.serve_options);
  auto bound = server.bind(f.host, f.port);
  if (!bound) return fail(bound.error().message);
  std::atomic<InferenceSession*> live{nullptr};  // set once loaded; outlives the waiter
  std::thread waiter([&server, &live, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    // End the requests first: a handler waiting for tokens would hold up the server's stop.
    if (InferenceSession* s = live.load()) s->stop_batching();
    server.stop();
  });
  std::cout << nlohmann::json{{"event", "listening"}, {"host", f.host}, {"port", *bound}}.dump() << std::endl;
  // The server answers (/healthz: 503) while the model loads.
  tessel::Status status = tessel::ok_status();
  std::atomic<bool> served{false};
  std::thread serving([&server, &status, &served] {
    status = server.serve();
    served = true;
  });
  // stop() only stops a server that runs: wait for it before a load failure may need it.
  while (!server.running() && !served) std::this_thread::yield();
  auto session = InferenceSession::open(f.checkpoint, f.device);
  tessel::Status batching = session ? (*session)->start_batching(f.limits) : tessel::ok_status();
  if (session && batching) {
    live = session->get();
    server.attach(**session);
    std::cout << nlohmann::json{{"event", "ready"},
                                {"device", (*session)->device()},
                                {"precision", (*session)->precision()}}
                     .dump()
              << std::endl;
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

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  // The HTTP server's log lines (common/http, spdlog) go to stderr: stdout carries the
  // JSON lines ("listening", "ready", batch results) that callers parse.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tessel-infer"));
  InferFlags f;
  if (auto code = parse_flags(argc, argv, f)) return *code;
  if (auto s = settle_flags(f); !s) return fail(s.error().message, 2);
  if (f.serve) return serve_http(f);
  auto session = InferenceSession::open(f.checkpoint, f.device);
  if (!session) return fail(session.error().message);
  return run_batch(**session, f.input, f.output, f.defaults);
}
