#include "tessel/cli/api_client.hpp"

#include <cctype>

#include <httplib.h>

#include "tessel/base/http_status.hpp"
#include "tessel/cli/json_get.hpp"
#include "tessel/cli/table.hpp"

namespace tessel::cli {

using nlohmann::json;

std::string ServerUrl::origin() const {
  bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ServerUrl> parse_server_url(const std::string& url) {
  auto bad = [&](const std::string& why) { return Error::invalid("invalid server URL '" + url + "': " + why); };
  ServerUrl u;
  auto sep = url.find("://");
  if (sep == std::string::npos) return bad("expected http://HOST[:PORT]");
  u.scheme = url.substr(0, sep);
  if (u.scheme != "http" && u.scheme != "https") return bad("scheme must be http or https");
  std::string rest = url.substr(sep + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    if (rest.substr(slash) != "/") return bad("a path is not supported");
    rest.resize(slash);
  }
  if (rest.find_first_of("@?#") != std::string::npos) return bad("user info, query and fragment are not supported");
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) return bad("unclosed '['");
    u.host = rest.substr(1, close - 1);
    std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("unexpected text after ']'");
      port = after.substr(1);
      if (port.empty()) return bad("empty port");
    }
  } else {
    auto colon = rest.find(':');
    u.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return bad("empty port");
    }
  }
  if (u.host.empty()) return bad("no host");
  if (port.empty()) {
    u.port = u.scheme == "https" ? 443 : 80;
  } else {
    if (port.size() > 5) return bad("port must be 1..65535");
    int p = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return bad("port must be a number");
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) return bad("port must be 1..65535");
    u.port = p;
  }
  return u;
}

bool tls_supported() {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  return true;
#else
  return false;
#endif
}

std::string url_encode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

ErrorCode error_code_of(int status, std::string_view code_name) {
  if (auto code = parse_error_code(code_name)) return *code;
  return error_code_of_http_status(status);
}

Error error_of_response(int status, const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  const auto& e = get_field(j, "error");
  auto code = get_string(e, "code");
  auto message = get_string(e, "message");
  if (!message.empty())
    return Error{printable(code.empty() ? message : message + " (" + code + ")"), error_code_of(status, code),
                 printable(get_string(e, "field"))};
  std::string first = body.substr(0, body.find('\n')).substr(0, 200);
  std::string out = "HTTP " + std::to_string(status);
  if (!first.empty()) out += ": " + printable(first);
  return Error{out, error_code_of(status, code)};
}

std::string describe_error_body(int status, const std::string& body) { return error_of_response(status, body).message; }

Result<ServerUrl> redirect_origin(const std::string& location) {
  const size_t scheme_end = location.find("://");
  if (scheme_end == std::string::npos)
    return Error::invalid("redirect to '" + printable(location) + "': not an absolute URL");
  const size_t path = location.find_first_of("/?#", scheme_end + 3);
  auto origin = parse_server_url(location.substr(0, path));
  if (!origin)
    return Error::invalid("redirect to '" + printable(location.substr(0, 200)) + "': " + origin.error().message);
  return origin;
}

Result<std::vector<ServerUrl>> parse_server_urls(const std::string& urls) {
  std::vector<ServerUrl> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = urls.find(',', start);
    std::string one = urls.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!one.empty() && one.front() == ' ') one.erase(0, 1);
    while (!one.empty() && one.back() == ' ') one.pop_back();
    auto u = parse_server_url(one);
    if (!u) return u.error();
    out.push_back(std::move(*u));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

ApiClient::ApiClient(std::vector<ServerUrl> urls, std::string token, std::chrono::seconds timeout)
    : urls_(std::move(urls)), token_(std::move(token)), timeout_(timeout) {
  use(urls_.front());
}

void ApiClient::use(const ServerUrl& url) {
  url_ = url;
  http_ = std::make_unique<httplib::Client>(url_.origin());
  http_->set_connection_timeout(timeout_);
  http_->set_read_timeout(timeout_);
  http_->set_write_timeout(timeout_);
  if (!token_.empty()) http_->set_bearer_token_auth(token_);
}

ApiClient::~ApiClient() = default;

Result<std::unique_ptr<ApiClient>> ApiClient::create(const std::string& urls, std::string token,
                                                     std::chrono::seconds timeout) {
  auto list = parse_server_urls(urls);
  if (!list) return list.error();
  for (const auto& u : *list)
    if (u.scheme == "https" && !tls_supported())
      return Error::invalid(
          "TLS is not supported by this build (cpp-httplib without OpenSSL); use an http:// server URL");
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(*list), std::move(token), timeout));
}

void ApiClient::set_retry(int retries, std::chrono::milliseconds backoff, Sleep sleep) {
  retries_ = retries;
  backoff_ = backoff;
  sleep_ = std::move(sleep);
}

Result<json> ApiClient::exchange(const std::function<httplib::Result(httplib::Client&)>& send, bool idempotent) {
  size_t next = 0;  // The next replica to try when this one cannot be reached.
  for (size_t i = 0; i < urls_.size(); ++i)
    if (urls_[i].origin() == url_.origin()) next = i + 1;
  size_t tried = 1;
  int redirects = 0;
  int retried = 0;
  for (;;) {
    auto res = send(*http_);
    if (!res) {
      const auto e = res.error();
      // Only failures before anything was sent may go to another replica: a request
      // lost on the way back may have been applied.
      const bool not_sent = e == httplib::Error::Connection || e == httplib::Error::ConnectionTimeout;
      if (not_sent && tried < urls_.size()) {
        use(urls_[next++ % urls_.size()]);
        ++tried;
        continue;
      }
      // A GET may be sent again whatever became of it; a timeout is not waited out twice.
      const bool lost = e == httplib::Error::Connection || e == httplib::Error::Read || e == httplib::Error::Write;
      if (idempotent && lost && retried < retries_) {
        ++retried;
        if (sleep_) sleep_(backoff_ * retried);
        if (urls_.size() > 1) use(urls_[next++ % urls_.size()]);
        tried = 1;
        continue;
      }
      Error err = transport_error(static_cast<int>(e));
      if (retried > 0) err.message += "; tried " + std::to_string(retried + 1) + " times";
      return err;
    }
    if ((res->status == 307 || res->status == 308) && res->has_header("Location")) {
      if (++redirects > kMaxRedirects)
        return Error::unavailable("more than " + std::to_string(kMaxRedirects) + " redirects from " + url_.origin());
      auto to = redirect_origin(res->get_header_value("Location"));
      if (!to) return to.error();
      use(*to);
      continue;
    }
    return finish(res->status, res->body);
  }
}

Error ApiClient::transport_error(int e) {
  last_transport_failure_ = true;
  auto err = static_cast<httplib::Error>(e);
  std::string why;
  switch (err) {
    case httplib::Error::Connection: why = "connection failed"; break;
    case httplib::Error::Read: why = "connection lost while reading the answer"; break;
    case httplib::Error::Write: why = "connection lost while sending"; break;
    case httplib::Error::ConnectionTimeout: why = "connection timed out"; break;
    case httplib::Error::SSLConnection: why = "TLS handshake failed"; break;
    case httplib::Error::SSLServerVerification: why = "server certificate not trusted"; break;
    default: why = "request failed"; break;
  }
  return Error::unavailable("cannot reach " + url_.origin() + ": " + why + " (" + httplib::to_string(err) + ")");
}

Result<json> ApiClient::finish(int status, const std::string& body) {
  last_transport_failure_ = false;
  if (status < 200 || status >= 300) return error_of_response(status, body);
  if (body.empty()) return json();
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded())
    return Error::internal("server answered HTTP " + std::to_string(status) + " with a body that is not JSON");
  return j;
}

Result<json> ApiClient::get(const std::string& path) {
  return exchange([&](httplib::Client& c) { return c.Get(path); }, /*idempotent=*/true);
}

Result<json> ApiClient::post(const std::string& path, const json& body) {
  const std::string text = body.dump();
  return exchange([&](httplib::Client& c) { return c.Post(path, text, "application/json"); }, false);
}

Result<json> ApiClient::put(const std::string& path, const json& body) {
  const std::string text = body.dump();
  return exchange([&](httplib::Client& c) { return c.Put(path, text, "application/json"); }, false);
}

Result<json> ApiClient::patch(const std::string& path, const json& body) {
  const std::string text = body.dump();
  return exchange([&](httplib::Client& c) { return c.Patch(path, text, "application/json"); }, false);
}

Result<json> ApiClient::del(const std::string& path) {
  return exchange([&](httplib::Client& c) { return c.Delete(path); }, false);
}

Status ApiClient::stream(const std::string& path, const std::function<bool(std::string_view)>& sink,
                         std::chrono::seconds idle_timeout, uint64_t& bytes) {
  for (int redirects = 0;; ++redirects) {
    http_->set_read_timeout(idle_timeout);
    int status = 0;
    std::string error_body;
    bool stopped = false;
    auto res = http_->Get(
        path,
        [&](const httplib::Response& r) {
          status = r.status;
          return true;
        },
        [&](const char* data, size_t n) {
          if (status < 200 || status >= 300) {
            if (error_body.size() < size_t{64} * 1024) error_body.append(data, n);
            return true;
          }
          bytes += n;
          if (!sink(std::string_view(data, n))) {
            stopped = true;
            return false;
          }
          return true;
        });
    http_->set_read_timeout(timeout_);
    if (!res) {
      last_transport_failure_ = false;
      if (stopped) return ok_status();
      return transport_error(static_cast<int>(res.error()));
    }
    last_transport_failure_ = false;
    if ((res->status == 307 || res->status == 308) && res->has_header("Location") && redirects < kMaxRedirects) {
      auto to = redirect_origin(res->get_header_value("Location"));
      if (!to) return to.error();
      use(*to);  // A follower named the leader: nothing was handed to `sink` yet.
      continue;
    }
    if (res->status < 200 || res->status >= 300) {
      if (error_body.empty()) error_body = res->body;
      return error_of_response(res->status, error_body);
    }
    return ok_status();
  }
}

}  // namespace tessel::cli
