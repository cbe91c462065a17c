#pragma once
// What every subcommand shares: the environment, the global flags, a lazily
// created API client, and the one-line error and JSON printing conventions.

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"
#include "tessel/cli/api_client.hpp"
#include "tessel/cli/app.hpp"

namespace tessel::cli {

struct GlobalOptions {
  std::string server;            // --server; empty: TESSEL_SERVER, then kDefaultServer.
  std::string token;             // --token; empty: --token-file, TESSEL_TOKEN, TESSEL_TOKEN_FILE.
  std::string token_file;        // --token-file.
  std::string output = "table";  // -o: "table" or "json".
  int retry = 2;                 // --retry: times a GET is sent again after a transport failure.
};

// Configuration problems (bad URL, unreadable token file, https without TLS) are
// reported as usage errors. Single-threaded.
class Session {
 public:
  Session(Environment& env, GlobalOptions opts) : env_(env), opts_(std::move(opts)) {}

  Environment& env() { return env_; }
  [[nodiscard]] bool json_output() const { return opts_.output == "json"; }

  // The client, created on first use from the flags and environment. On error the
  // message is printed as "tessel: <command>: ..." and nullptr is returned; the
  // caller exits with kExitUsage.
  ApiClient* client(const std::string& command);

  // Prints "tessel: <command>: <message>" on stderr and returns kExitFailure.
  int fail(const std::string& command, const Error& e);
  // Same, returning kExitUsage.
  int usage(const std::string& command, const Error& e);

  // Pretty JSON (2-space indent) on stdout.
  void print_json(const nlohmann::json& j);

  // DELETE `path` for `command` (e.g. "project delete"): the answer as JSON with -o json,
  // else "<name>: <done>"; errors name `name`. The exit code.
  int delete_named(const std::string& command, const std::string& path, const std::string& name,
                   const std::string& done);

 private:
  Result<std::string> resolve_token();

  Environment& env_;
  GlobalOptions opts_;
  std::unique_ptr<ApiClient> client_;
};

}  // namespace tessel::cli
