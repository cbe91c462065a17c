#pragma once
// UsageBook: the accounting ledger behind GET /v1/usage. It holds every usage record
// (one per ended job attempt, store.hpp) in compact form, ordered by end time, and
// sums card-seconds by project or user and model over a time window.
//
// Window rule (as Slurm's sreport): an attempt counts by the card-seconds that fall
// inside [since, until): cards * (min(end, until) - max(start, since)). An attempt
// that overlaps the window counts once in `jobs` however little of it falls inside;
// `jobs` counts distinct jobs, so a job's retries count once.
//
// Thread-safe with a mutex of its own, so a long report never holds the cluster
// state's lock: ClusterState adds records after their commit (with its own mutex
// held; the lock order is ClusterState's, then this one) and the usage route reads.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessel/scheduler/store.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

enum class UsageBy { project, user };

struct UsageQuery {
  UsageBy by = UsageBy::project;
  int64_t since_ms = 0, until_ms = 0;  // [since, until).
  // Who asks: with `all` every record counts; else only the records of `user` and
  // those of the projects in `projects`.
  bool all = true;
  std::string user;
  std::set<std::string> projects;
  // Filters (empty: none), applied after who-sees-what: only this project's records,
  // only this user's.
  std::string only_project, only_user;
};

struct UsageRow {
  std::string key;    // The project or the user, as UsageQuery::by says.
  std::string model;  // A card model, or kNoCards for jobs without cards.
  double card_seconds = 0;
  int64_t jobs = 0;
  double cpu_seconds = 0;  // CPUs held x seconds, of jobs without cards only.
};

class UsageBook {
 public:
  void add(const UsageRecord& r) EXCLUDES(mu_);
  // The model of the rows of jobs without cards, which count CPU-seconds instead.
  static constexpr const char* kNoCards = "none";
  // Rows sorted by key, then model; none with zero card- and CPU-seconds.
  std::vector<UsageRow> report(const UsageQuery& q) const EXCLUDES(mu_);
  // Card-seconds of every record, by (project, model): the counter of /metrics.
  std::map<std::pair<std::string, std::string>, double> totals() const EXCLUDES(mu_);
  // Whether a record for this key (UsageRecord::key()) was added.
  bool has(const std::string& key) const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);

 private:
  // One model's cards of one record; 40 bytes, strings interned.
  struct Entry {
    int64_t start_ms, end_ms, job;
    int32_t project, user, model, cards, cpus;  // cpus: of jobs without cards (model kNoCards).
  };
  int32_t intern_locked(const std::string& s) REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);  // Ascending end_ms.
  std::vector<std::string> names_ GUARDED_BY(mu_);
  std::unordered_map<std::string, int32_t> ids_ GUARDED_BY(mu_);
  std::unordered_map<std::string, int64_t> keys_ GUARDED_BY(mu_);  // Record key -> job sequence (deduplication).
  std::map<std::pair<int32_t, int32_t>, double> totals_ GUARDED_BY(mu_);
};

}  // namespace tessel::scheduler
