// JSON forms of the records the store keeps, and job id <-> sequence.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tessel/api/json_int.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler {

using nlohmann::json;

int64_t job_seq(const std::string& id) {
  if (api::split_element_id(id)) {
    const int64_t key = job_key(id);
    return key < 0 ? -1 : -key;
  }
  if (id.size() < 3 || id.size() > 22 || id.rfind("j-", 0) != 0) return -1;
  int64_t v = 0;
  for (size_t i = 2; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return -1;
    v = v * 10 + (id[i] - '0');
  }
  return v;
}

int64_t job_key(const std::string& id) {
  constexpr int64_t kMaxSeq = int64_t{1} << 48;
  if (auto element = api::split_element_id(id)) {
    const int64_t seq = job_seq(element->parent);
    if (seq < 0 || seq >= kMaxSeq) return -1;
    return key_of_seq(seq) + element->index + 1;
  }
  const int64_t seq = job_seq(id);
  if (seq < 0 || seq >= kMaxSeq) return -1;
  return key_of_seq(seq);
}

std::string make_job_id(int64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "j-%08lld", static_cast<long long>(seq));
  return buf;
}

std::string node_record_to_json(const NodeRecord& n) {
  json j = {{"name", n.name},
            {"address", n.address},
            {"agent_port", n.agent_port},
            {"drained", n.drained},
            {"inventory", api::to_json(n.inventory)},
            {"last_heartbeat_ms", n.last_heartbeat_ms}};
  if (!n.scheduler_key.empty()) j["scheduler_key"] = n.scheduler_key;
  if (!n.labels.empty()) j["labels"] = n.labels;
  return j.dump();
}

Result<NodeRecord> node_record_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::conflict("node record: not a JSON object");
  return api::read_json(Error::conflict("node record"), [&](api::JsonInts& ints) -> Result<NodeRecord> {
    NodeRecord n;
    n.name = j.at("name").get<std::string>();
    n.address = j.at("address").get<std::string>();
    n.agent_port = ints.at<int>(j, "agent_port");
    n.drained = j.at("drained").get<bool>();
    n.last_heartbeat_ms = ints.at<int64_t>(j, "last_heartbeat_ms");
    n.scheduler_key = j.value("scheduler_key", "");
    if (j.contains("labels")) {
      auto labels = api::labels_from_json(j["labels"], "labels");
      if (!labels) return labels.error().wrap("node record " + n.name);
      n.labels = std::move(*labels);
    }
    json inv = j.at("inventory");
    inv.erase("groups");  // Computed on output; not part of the agent's form.
    auto parsed = api::inventory_from_json(inv);
    if (!parsed) return parsed.error().wrap("node record " + n.name);
    n.inventory = *parsed;
    return n;
  });
}

std::string fence_to_json(const Fence& f) {
  return json{{"id", f.id}, {"job_id", f.job_id}, {"allocation", api::to_json(f.allocation)}}.dump();
}

Result<Fence> fence_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::conflict("fence record: not a JSON object");
  return api::read_json(Error::conflict("fence record"), [&](api::JsonInts& /*ints*/) -> Result<Fence> {
    Fence f;
    f.id = j.at("id").get<std::string>();
    f.job_id = j.at("job_id").get<std::string>();
    auto a = api::allocation_from_json(j.at("allocation"));
    if (!a) return a.error();
    f.allocation = *a;
    return f;
  });
}

std::string project_to_json(const api::Project& p) { return api::to_json(p).dump(); }

Result<api::Project> project_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::conflict("project record: not a JSON object");
  auto parsed = api::parse_project(j);
  if (!parsed) return Error::conflict("project record: " + parsed.error().message);
  return parsed;
}

std::string usage_record_to_json(const UsageRecord& u) {
  json j{{"job_id", u.job_id}, {"attempt", u.attempt},   {"project", u.project}, {"user", u.user},
         {"cards", u.cards},   {"start_ms", u.start_ms}, {"end_ms", u.end_ms}};
  if (u.cpus > 0) j["cpus"] = u.cpus;
  if (u.cpu_seconds) j["cpu_seconds"] = *u.cpu_seconds;
  if (u.max_rss_mib) j["max_rss_mib"] = *u.max_rss_mib;
  return j.dump();
}

Result<UsageRecord> usage_record_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::conflict("usage record: not a JSON object");
  return api::read_json(Error::conflict("usage record"), [&](api::JsonInts& ints) -> Result<UsageRecord> {
    UsageRecord u;
    u.job_id = j.at("job_id").get<std::string>();
    u.attempt = ints.at<int>(j, "attempt");
    u.project = j.at("project").get<std::string>();
    u.user = j.at("user").get<std::string>();
    const json& cards = j.at("cards");
    if (!cards.is_object()) return Error::conflict("usage record " + u.job_id + ": cards is not an object");
    for (const auto& [model, n] : cards.items()) u.cards[model] = ints.of<int64_t>(n, "cards." + model);
    u.start_ms = ints.at<int64_t>(j, "start_ms");
    u.end_ms = ints.at<int64_t>(j, "end_ms");
    if (j.contains("cpus")) u.cpus = ints.at<int64_t>(j, "cpus");
    if (j.contains("cpu_seconds") && j["cpu_seconds"].is_number()) u.cpu_seconds = j["cpu_seconds"].get<double>();
    if (j.contains("max_rss_mib")) u.max_rss_mib = ints.at<int64_t>(j, "max_rss_mib");
    return u;
  });
}

std::string node_token_to_json(const NodeToken& t) {
  return json{{"node", t.node}, {"sha256", t.sha256}, {"issued_at_ms", t.issued_at_ms}}.dump();
}

Result<NodeToken> node_token_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"node token record: not a JSON object"};
  return api::read_json(Error{"node token record"}, [&](api::JsonInts& ints) -> Result<NodeToken> {
    NodeToken t;
    t.node = j.at("node").get<std::string>();
    t.sha256 = j.at("sha256").get<std::string>();
    t.issued_at_ms = ints.at<int64_t>(j, "issued_at_ms");
    return t;
  });
}

std::string reservation_to_json(const api::Reservation& r) { return api::to_json(r).dump(); }

Result<api::Reservation> reservation_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error::conflict("reservation record: not a JSON object");
  return api::reservation_from_json(j);
}

}  // namespace tessel::scheduler
