// UsageBook: accounting records in memory and their windowed sums (accounting.hpp).
#include "tessel/scheduler/accounting.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>

namespace tessel::scheduler {

int32_t UsageBook::intern_locked(const std::string& s) {
  auto [it, added] = ids_.try_emplace(s, static_cast<int32_t>(names_.size()));
  if (added) names_.push_back(s);
  return it->second;
}

void UsageBook::add(const UsageRecord& r) {
  if (r.end_ms <= r.start_ms) return;
  MutexLock lk(mu_);
  const int64_t job = job_key(r.job_id);
  if (!keys_.try_emplace(r.key(), job).second) return;  // Written again (an upsert): counted once.
  const int32_t project = intern_locked(r.project), user = intern_locked(r.user);
  // Records arrive nearly in end order: the insertion point is at or near the back.
  auto insert = [&](const Entry& e) REQUIRES(mu_) {
    auto pos = std::upper_bound(entries_.begin(), entries_.end(), e.end_ms,
                                [](int64_t end, const Entry& x) { return end < x.end_ms; });
    entries_.insert(pos, e);
  };
  bool any_cards = false;
  for (const auto& [model, cards] : r.cards) {
    if (cards <= 0) continue;
    any_cards = true;
    const Entry e{r.start_ms, r.end_ms, job, project, user, intern_locked(model), static_cast<int32_t>(cards), 0};
    insert(e);
    totals_[{project, e.model}] += static_cast<double>(cards) * static_cast<double>(r.end_ms - r.start_ms) / 1000.0;
  }
  if (!any_cards && r.cpus > 0)
    insert(Entry{r.start_ms, r.end_ms, job, project, user, intern_locked(kNoCards), 0,
                 static_cast<int32_t>(std::min<int64_t>(r.cpus, INT32_MAX))});
}

std::vector<UsageRow> UsageBook::report(const UsageQuery& q) const {
  MutexLock lk(mu_);
  std::set<int32_t> projects;
  int32_t user = -1;
  if (!q.all) {
    for (const auto& p : q.projects)
      if (auto it = ids_.find(p); it != ids_.end()) projects.insert(it->second);
    if (auto it = ids_.find(q.user); it != ids_.end()) user = it->second;
  }
  // Filters: -1 for none; a name never recorded matches nothing.
  int32_t only_project = -1, only_user = -1;
  for (auto [name, id] : {std::pair{&q.only_project, &only_project}, std::pair{&q.only_user, &only_user}}) {
    if (name->empty()) continue;
    auto it = ids_.find(*name);
    if (it == ids_.end()) return {};
    *id = it->second;
  }
  struct Sum {
    double card_seconds = 0;
    double cpu_seconds = 0;
    std::vector<int64_t> jobs;  // With repeats; counted distinct at the end.
  };
  std::map<std::pair<int32_t, int32_t>, Sum> sums;
  // Entries ending at or before `since` add nothing: start past them.
  auto it = std::upper_bound(entries_.begin(), entries_.end(), q.since_ms,
                             [](int64_t since, const Entry& x) { return since < x.end_ms; });
  for (; it != entries_.end(); ++it) {
    const Entry& e = *it;
    if (e.start_ms >= q.until_ms) continue;
    if (!q.all && e.user != user && !projects.count(e.project)) continue;
    if ((only_project >= 0 && e.project != only_project) || (only_user >= 0 && e.user != only_user)) continue;
    const int64_t ms = std::min(e.end_ms, q.until_ms) - std::max(e.start_ms, q.since_ms);
    if (ms <= 0) continue;
    Sum& s = sums[{q.by == UsageBy::project ? e.project : e.user, e.model}];
    s.card_seconds += static_cast<double>(e.cards) * static_cast<double>(ms) / 1000.0;
    s.cpu_seconds += static_cast<double>(e.cpus) * static_cast<double>(ms) / 1000.0;
    if (s.jobs.empty() || s.jobs.back() != e.job) s.jobs.push_back(e.job);
  }
  std::vector<UsageRow> rows;
  rows.reserve(sums.size());
  for (auto& [k, s] : sums) {
    std::sort(s.jobs.begin(), s.jobs.end());
    const auto distinct = std::unique(s.jobs.begin(), s.jobs.end()) - s.jobs.begin();
    rows.push_back(UsageRow{names_[static_cast<size_t>(k.first)], names_[static_cast<size_t>(k.second)], s.card_seconds,
                            static_cast<int64_t>(distinct), s.cpu_seconds});
  }
  std::sort(rows.begin(), rows.end(),
            [](const UsageRow& a, const UsageRow& b) { return std::tie(a.key, a.model) < std::tie(b.key, b.model); });
  return rows;
}

std::map<std::pair<std::string, std::string>, double> UsageBook::totals() const {
  MutexLock lk(mu_);
  std::map<std::pair<std::string, std::string>, double> out;
  for (const auto& [k, v] : totals_)
    out[{names_[static_cast<size_t>(k.first)], names_[static_cast<size_t>(k.second)]}] = v;
  return out;
}

bool UsageBook::has(const std::string& key) const {
  MutexLock lk(mu_);
  return keys_.count(key) > 0;
}

size_t UsageBook::size() const {
  MutexLock lk(mu_);
  return keys_.size();
}

}  // namespace tessel::scheduler
