#include "tessel/cli/session.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace tessel::cli {

namespace {
constexpr std::chrono::seconds kHttpTimeout{30};
// Before the first retry of a GET; the n-th waits n times this.
constexpr std::chrono::milliseconds kRetryBackoff{200};

Result<std::string> read_token_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error::invalid("reading token file " + path + ": " + std::strerror(errno), "--token-file");
  std::ostringstream s;
  s << f.rdbuf();
  std::string t = s.str();
  if (t.size() > size_t{64} * 1024)
    return Error::invalid("token file " + path + " is larger than 64 KiB", "--token-file");
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t start = 0;
  while (start < t.size() && std::isspace(static_cast<unsigned char>(t[start]))) ++start;
  t.erase(0, start);
  if (t.empty()) return Error::invalid("token file " + path + " is empty", "--token-file");
  return t;
}

// A token goes into an HTTP header: no control characters.
Result<std::string> checked_token(std::string t, const std::string& source) {
  for (char c : t) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return Error::invalid("token from " + source + " contains a control character");
  }
  return t;
}
}  // namespace

Result<std::string> Session::resolve_token() {
  if (!opts_.token.empty()) return checked_token(opts_.token, "--token");
  if (!opts_.token_file.empty()) {
    auto t = read_token_file(opts_.token_file);
    if (!t) return t;
    return checked_token(std::move(*t), opts_.token_file);
  }
  if (auto t = env_.getenv("TESSEL_TOKEN"); t && !t->empty()) return checked_token(*t, "TESSEL_TOKEN");
  if (auto f = env_.getenv("TESSEL_TOKEN_FILE"); f && !f->empty()) {
    auto t = read_token_file(*f);
    if (!t) return t;
    return checked_token(std::move(*t), *f);
  }
  return std::string();
}

ApiClient* Session::client(const std::string& command) {
  if (client_) return client_.get();
  std::string server = opts_.server;
  if (server.empty()) server = env_.getenv("TESSEL_SERVER").value_or("");
  if (server.empty()) server = kDefaultServer;
  auto token = resolve_token();
  if (!token) {
    usage(command, token.error());
    return nullptr;
  }
  auto c = ApiClient::create(server, std::move(*token), kHttpTimeout);
  if (!c) {
    usage(command, c.error());
    return nullptr;
  }
  client_ = std::move(*c);
  client_->set_retry(opts_.retry, kRetryBackoff, [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); });
  return client_.get();
}

int Session::fail(const std::string& command, const Error& e) {
  env_.err << "tessel: " << command << ": " << e.message << '\n';
  return kExitFailure;
}

int Session::usage(const std::string& command, const Error& e) {
  env_.err << "tessel: " << command << ": " << e.message << '\n';
  return kExitUsage;
}

void Session::print_json(const nlohmann::json& j) { env_.out << j.dump(2) << '\n'; }

int Session::delete_named(const std::string& command, const std::string& path, const std::string& name,
                          const std::string& done) {
  auto* c = client(command);
  if (!c) return kExitUsage;
  auto r = c->del(path);
  if (!r) return fail(command, r.error().wrap(name));
  if (json_output())
    print_json(*r);
  else
    env_.out << name << ": " << done << '\n';
  return kExitOk;
}

}  // namespace tessel::cli
