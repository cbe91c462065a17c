// Requests, responses and routing of tessel::http: no Boost here, so the route
// table and the error mapping compile without Beast (server.cpp holds the I/O).
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "routing.hpp"
#include "tessel/base/http_status.hpp"

namespace tessel::http {

// ---------------------------------------------------------------- requests

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// The value of query parameter `name` in `target`, if present.
std::optional<std::string> query_param(const std::string& target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string::npos) return std::nullopt;
  std::string_view rest(target);
  rest.remove_prefix(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (percent_decode(pair.substr(0, eq), true) != name) continue;
    return eq == std::string_view::npos ? std::string() : percent_decode(pair.substr(eq + 1), true);
  }
  return std::nullopt;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const auto end = path.find('/', i);
    out.emplace_back(path.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    if (end == std::string_view::npos) break;
    i = end;
  }
  return out;
}

}  // namespace

std::string Request::header(std::string_view name) const {
  for (const auto& h : headers)
    if (iequals(h.name, name)) return h.value;
  return "";
}

bool Request::has_header(std::string_view name) const {
  for (const auto& h : headers)
    if (iequals(h.name, name)) return true;
  return false;
}

bool Request::has_param(std::string_view name) const { return query_param(target, name).has_value(); }

std::string Request::param(std::string_view name) const { return query_param(target, name).value_or(""); }

// ---------------------------------------------------------------- responses

Response json_response(int status, std::string json_text) {
  Response r;
  r.status = status;
  r.body = std::move(json_text);
  return r;
}

Response error_response(const Error& err) {
  nlohmann::json e = {{"code", to_string(err.code)}, {"message", err.message}};
  if (!err.field.empty()) e["field"] = err.field;
  Response r = json_response(http_status_of(err.code), nlohmann::json{{"error", e}}.dump(
                                                           -1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (err.code == ErrorCode::unauthenticated) r.headers.push_back({"WWW-Authenticate", "Bearer"});
  return r;
}

// ---------------------------------------------------------------- routing

void Router::add(std::string method, const std::string& pattern, Handler h, Exec exec) {
  routes_.push_back(Route{std::move(method), split_path(pattern), std::move(h), exec});
}

std::vector<std::string> Router::describe() const {
  std::vector<std::string> out;
  for (const auto& r : routes_) {
    std::string line = r.method + " ";
    for (const auto& seg : r.segments) line += "/" + seg;
    if (r.segments.empty()) line += "/";
    out.push_back(std::move(line));
  }
  return out;
}

Router::Match Router::match(const std::string& method, const std::string& path, const Route** route,
                            std::vector<std::string>& captures) const {
  const auto segs = split_path(path);
  Match best = Match::no_path;
  for (const auto& r : routes_) {
    if (r.segments.size() != segs.size()) continue;
    std::vector<std::string> caps;
    bool ok = true;
    for (size_t i = 0; i < segs.size() && ok; ++i) {
      const auto& p = r.segments[i];
      if (p.size() >= 2 && p.front() == '{' && p.back() == '}')
        caps.push_back(percent_decode(segs[i], false));
      else
        ok = p == segs[i];
    }
    if (!ok) continue;
    if (r.method != method) {
      best = Match::no_method;
      continue;
    }
    *route = &r;
    captures = std::move(caps);
    return Match::found;
  }
  if (fallback_) {
    *route = &*fallback_;
    captures.clear();
    return Match::found;
  }
  return best;
}

void Router::set_fallback(Handler h, Exec exec) { fallback_ = Route{"", {}, std::move(h), exec}; }

}  // namespace tessel::http
