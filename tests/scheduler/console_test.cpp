// The web console as the scheduler serves it: its built-in files (no token, content
// types, ETag, Content-Security-Policy), GET /v1/whoami, and the event stream
// GET /v1/events (authorized like the API, an event after each change, capped).
#include <atomic>
#include <mutex>
#include <thread>

#include "harness.hpp"
#include "tessel/scheduler/console_assets.hpp"

namespace tessel::scheduler::testing {
namespace {

TokenTable tokens() { return tokens_from("admintok admin root\nalicetok user alice\n"); }

TEST(Console, FilesAreServedWithoutATokenWithTypeEtagAndCsp) {
  Harness h(tokens());
  auto index = h.get("/ui/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<script type=\"module\" src=\"app.js\">"), std::string::npos);
  const std::string csp = index->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-cache");
  const std::string etag = index->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());

  auto again = h.client->Get("/ui/", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());

  auto js = h.get("/ui/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(h.get("/ui/style.css")->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(h.get("/ui/nothing.js")->status, 404);
}

TEST(Console, RootAndUiWithoutSlashRedirectToTheConsole) {
  Harness h;
  for (const char* path : {"/", "/ui"}) {
    auto r = h.get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 308) << path;
    EXPECT_EQ(r->get_header_value("Location"), "/ui/") << path;
  }
}

TEST(Console, EveryFileIsBuiltInWithAType) {
  const auto assets = console_assets();
  ASSERT_GE(assets.size(), 4U);
  for (const auto& a : assets) {
    EXPECT_FALSE(a.body.empty()) << a.name;
    EXPECT_FALSE(a.content_type.empty()) << a.name;
    EXPECT_EQ(a.etag.front(), '"') << a.name;
  }
}

TEST(Console, WhoamiNamesTheTokensPrincipal) {
  Harness h(tokens());
  EXPECT_EQ(h.get("/v1/whoami")->status, 401);
  EXPECT_EQ(h.get("/v1/whoami", "wrong")->status, 401);
  auto me = Harness::body(h.get("/v1/whoami", "alicetok"));
  EXPECT_EQ(me["name"], "alice");
  EXPECT_EQ(me["role"], "user");
  EXPECT_EQ(me["auth"], true);
  Harness open;
  EXPECT_EQ(Harness::body(open.get("/v1/whoami"))["auth"], false);
}

// Reads GET /v1/events on its own connection until close() or the stream ends.
struct EventReader {
  EventReader(int port, const std::string& token) : client("127.0.0.1", port) {
    client.set_read_timeout(30);
    thread = std::thread([this, token] {
      httplib::Headers hs;
      if (!token.empty()) hs.emplace("Authorization", "Bearer " + token);
      auto r = client.Get(
          "/v1/events", hs,
          [this](const httplib::Response& res) {
            status = res.status;
            return true;
          },
          [this](const char* data, size_t len) {
            std::lock_guard lk(mu);
            text.append(data, len);
            return true;
          });
      done = true;
    });
  }
  ~EventReader() { close(); }
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;

  // Closes the connection from this side.
  void close() {
    client.stop();
    if (thread.joinable()) thread.join();
  }
  std::string seen() {
    std::lock_guard lk(mu);
    return text;
  }
  // The counters of the last event read; zeros before the first.
  ClusterState::ChangeCounts last() {
    const std::string t = seen();
    const auto at = t.rfind("data: ");
    if (at == std::string::npos) return {};
    const json j = json::parse(t.substr(at + 6, t.find('\n', at) - at - 6), nullptr, false);
    if (!j.is_object()) return {};
    return {j["jobs"], j["nodes"], j["metrics"]};
  }

  httplib::Client client;
  std::mutex mu;
  std::string text;
  std::atomic<int> status{0};
  std::atomic<bool> done{false};
  std::thread thread;
};

TEST(Console, EventsNeedAToken) {
  Harness h(tokens());
  EXPECT_EQ(h.get("/v1/events")->status, 401);
  EXPECT_EQ(h.get("/v1/events", "wrong")->status, 401);
  EventReader reader(h.service->port(), "alicetok");
  ASSERT_TRUE(eventually([&] { return reader.seen().find("event: change\n") != std::string::npos; }));
  EXPECT_EQ(reader.status, 200);
}

TEST(Console, EventsFollowJobAndNodeChanges) {
  Harness h;
  EventReader reader(h.service->port(), "");
  const auto before = h.service->state().change_counts();
  ASSERT_TRUE(eventually([&] { return reader.seen() == EventHub::render(before); })) << reader.seen();
  h.submit({{"command", {"true"}}});
  ASSERT_TRUE(eventually([&] { return reader.last().jobs > before.jobs; })) << reader.seen();
  h.register_node("n1");
  ASSERT_TRUE(eventually([&] { return reader.last().nodes > before.nodes; })) << reader.seen();
  EXPECT_EQ(h.service->event_clients(), 1U);
  // A client that left is dropped at the next event it cannot take.
  reader.close();
  ASSERT_TRUE(eventually([&] {
    h.submit({{"command", {"true"}}});
    return h.service->event_clients() == 0;
  }));
}

TEST(Console, EventStreamsAreCapped) {
  auto s = open_sqlite_store(":memory:");
  ASSERT_TRUE(s.ok());
  FakeClock clock;
  ServiceOptions opts = test_service_options();
  opts.events.max_clients = 1;
  Service service(**s, clock, std::nullopt, opts);
  ASSERT_TRUE(service.start().ok());
  EventReader first(service.port(), "");
  ASSERT_TRUE(eventually([&] { return service.event_clients() == 1; }));
  httplib::Client c("127.0.0.1", service.port());
  auto second = c.Get("/v1/events");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503);
  EXPECT_EQ(json::parse(second->body)["error"]["code"], "unavailable");
  // Stopping the service ends the open stream.
  service.stop();
  ASSERT_TRUE(eventually([&] { return first.done.load(); }));
  EXPECT_EQ(first.status, 200);
}

}  // namespace
}  // namespace tessel::scheduler::testing
