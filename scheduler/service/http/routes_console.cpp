// REST: the web console (GET /ui/ and its files, built into the binary), its live
// updates (GET /v1/events) and GET /v1/whoami. The files need no token: they hold
// no data. Every call the page makes for data carries the bearer token and is
// authorized as any API call; so is the event stream.
#include <algorithm>

#include "tessel/scheduler/console_assets.hpp"
#include "tessel/scheduler/event_hub.hpp"
#include "tessel/scheduler/http_util.hpp"

namespace tessel::scheduler {

namespace {

// Scripts and styles come from the console's own files only: no inline script,
// no other origin, and no page may frame it.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const ConsoleAsset* find_asset(std::string_view name) {
  const auto assets = console_assets();
  auto it = std::find_if(assets.begin(), assets.end(), [&](const ConsoleAsset& a) { return a.name == name; });
  return it == assets.end() ? nullptr : &*it;
}

http::Response redirect_to_console() {
  http::Response res;
  res.status = 308;
  res.content_type = "text/plain; charset=utf-8";
  res.body = "the console is at /ui/\n";
  res.headers.push_back({"Location", "/ui/"});
  return res;
}

void serve_asset(const http::Request& req, const http::Reply& reply, std::string_view name) {
  const ConsoleAsset* a = find_asset(name);
  if (a == nullptr) return reply(Error::not_found("no console file " + std::string(name)));
  http::Response res;
  // Revalidated on every load (the files change with the binary); unchanged ones cost a 304.
  res.headers = {{"ETag", std::string(a->etag)},
                 {"Cache-Control", "no-cache"},
                 {"Content-Security-Policy", kContentSecurityPolicy},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Referrer-Policy", "no-referrer"}};
  res.content_type = std::string(a->content_type);
  if (req.header("If-None-Match") == a->etag) {
    res.status = 304;
  } else {
    res.body = std::string(a->body);
  }
  reply(std::move(res));
}

}  // namespace

void add_console_routes(http::Router& r, RouteContext& ctx) {
  r.add("GET", "/", [](http::Request&, const http::Reply& reply) { reply(redirect_to_console()); });
  // "/ui" and "/ui/" both arrive here; the page's relative links need the slash.
  r.add("GET", "/ui", [](http::Request& req, const http::Reply& reply) {
    if (req.path != "/ui/") return reply(redirect_to_console());
    serve_asset(req, reply, "index.html");
  });
  r.add("GET", "/ui/{file}",
        [](http::Request& req, const http::Reply& reply) { serve_asset(req, reply, req.captures[0]); });
  // Who the token belongs to, so the console shows the actions its role may take.
  r.add("GET", "/v1/whoami", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::read);
    if (!who) return reply(who.error());
    reply(json_reply(200, {{"name", who->name}, {"role", to_string(who->role)}, {"auth", !who->token.empty()}}));
  });
  r.add("GET", "/v1/events", [&ctx](http::Request& req, const http::Reply& reply) {
    auto who = authorize(ctx, req, Action::read);
    if (!who) return reply(who.error());
    if (ctx.events == nullptr) return reply(Error::unavailable("the event stream is not running"));
    ctx.events->subscribe(reply, who->name);
  });
}

}  // namespace tessel::scheduler
