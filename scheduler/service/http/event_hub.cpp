#include "tessel/scheduler/event_hub.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace tessel::scheduler {

EventHub::EventHub(const ClusterState& state, http::Server& server, const Clock& clock, EventHubOptions opts)
    : state_(state),
      server_(server),
      clock_(clock),
      opts_(opts),
      slots_(StreamSlots::make("console event streams", opts.max_clients_per_user)) {}

std::string EventHub::render(const ClusterState::ChangeCounts& counts) {
  return "event: change\ndata: {\"jobs\":" + std::to_string(counts.jobs) +
         ",\"nodes\":" + std::to_string(counts.nodes) + ",\"metrics\":" + std::to_string(counts.metrics) + "}\n\n";
}

void EventHub::subscribe(const http::Reply& reply, const std::string& user) {
  {
    MutexLock lk(mu_);
    if (stopped_) return reply(Error::unavailable("the scheduler is stopping"));
    if (clients_.size() >= opts_.max_clients)
      return reply(Error::unavailable(std::to_string(opts_.max_clients) + " event streams are open; try again later"));
  }
  auto slot = slots_->take(user);
  if (!slot) return reply(slot.error());
  http::Response res;
  res.content_type = "text/event-stream; charset=utf-8";
  res.headers.push_back({"Cache-Control", "no-store"});
  res.headers.push_back({"X-Accel-Buffering", "no"});
  res.stream = [this, slot = std::move(*slot)](std::shared_ptr<http::BodyStream> stream) mutable {
    attach(std::move(stream), std::move(slot));
  };
  reply(std::move(res));
}

void EventHub::attach(std::shared_ptr<http::BodyStream> stream, std::shared_ptr<void> slot) {
  auto c = std::make_shared<Client>();
  c->stream = std::move(stream);
  c->slot = std::move(slot);
  {
    MutexLock lk(mu_);
    // Checked again: streams that were answered together may pass the first check.
    if (stopped_ || clients_.size() >= opts_.max_clients) return c->stream->finish();
    clients_.push_back(c);
    schedule_tick_locked();
  }
  // Its client left: dropped now, not at the next keep-alive (the hub is stopped, and
  // so drops no one, before the server that runs this stops).
  c->stream->on_close([this, weak = std::weak_ptr<Client>(c)] {
    auto gone = weak.lock();
    if (!gone) return;
    MutexLock lk(mu_);
    drop_locked(gone);
  });
  send(c, render(state_.change_counts()));
}

void EventHub::schedule_tick_locked() {
  if (ticking_ || stopped_) return;
  ticking_ = true;
  server_.after(std::chrono::milliseconds(opts_.tick_ms), [this] { tick(); });
}

void EventHub::tick() {
  const auto counts = state_.change_counts();
  const int64_t now = clock_.now_ms();
  std::vector<std::shared_ptr<Client>> to;
  std::string data;
  {
    MutexLock lk(mu_);
    ticking_ = false;
    if (stopped_ || clients_.empty()) return;
    for (const auto& c : std::vector(clients_))
      if (c->writing && now - c->writing_since_ms > opts_.slow_client_ms) drop_locked(c);
    if (!(counts == sent_)) {
      data = render(counts);
      sent_ = counts;
    } else if (now - last_write_ms_ >= opts_.keepalive_ms) {
      data = ": keep-alive\n\n";
    }
    if (!data.empty()) {
      last_write_ms_ = now;
      to = clients_;
    }
    schedule_tick_locked();
  }
  for (const auto& c : to) send(c, data);
}

void EventHub::send(const std::shared_ptr<Client>& c, std::string data) {
  {
    MutexLock lk(mu_);
    if (c->writing) {
      c->queued = std::move(data);
      return;
    }
    c->writing = true;
    c->writing_since_ms = clock_.now_ms();
  }
  // A weak reference: a dropped client's stream dies with it, which closes its connection.
  std::weak_ptr<Client> weak = c;
  c->stream->write(std::move(data), [this, weak](bool ok) { written(weak, ok); });
}

void EventHub::written(const std::weak_ptr<Client>& weak, bool ok) {
  auto c = weak.lock();
  if (!c) return;
  std::string next;
  {
    MutexLock lk(mu_);
    c->writing = false;
    if (!ok) return drop_locked(c);
    if (c->queued.empty()) return;
    next = std::exchange(c->queued, {});
  }
  send(c, std::move(next));
}

void EventHub::drop_locked(const std::shared_ptr<Client>& c) {
  clients_.erase(std::remove(clients_.begin(), clients_.end(), c), clients_.end());
}

void EventHub::stop() {
  std::vector<std::shared_ptr<Client>> gone;
  {
    MutexLock lk(mu_);
    stopped_ = true;
    gone.swap(clients_);
  }
  // Their streams close as the last references go.
}

size_t EventHub::clients() const {
  MutexLock lk(mu_);
  return clients_.size();
}

}  // namespace tessel::scheduler
