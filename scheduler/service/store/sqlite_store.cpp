// SqliteStore: the Store on SQLite with group commit (GroupCommitter): each group
// of queued batches is one transaction. The committer's writer thread is the only
// user of the Db besides load().

#include <string>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tessel/scheduler/group_commit.hpp"
#include "tessel/scheduler/sqlite_db.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::scheduler {

namespace {

// "INSERT INTO <table>(<key>, body) VALUES(?1, ?2)", replacing the body of a row
// already there.
std::string upsert(const std::string& table, const std::string& key) {
  return "INSERT INTO " + table + "(" + key + ", body) VALUES(?1, ?2) ON CONFLICT(" + key +
         ") DO UPDATE SET body = excluded.body";
}

// The writer's statements, prepared once per connection: a commit of one job (a plain
// submission) prepared all 15 each time before, and parsing and planning them cost
// more than the job's own insert.
struct WriteStatements {
  explicit WriteStatements(sqlite3* db)
      : begin(db, "BEGIN IMMEDIATE"),
        commit(db, "COMMIT"),
        job(db,
            "INSERT INTO jobs(seq, id, body) VALUES(?1, ?2, ?3) ON CONFLICT(seq) DO UPDATE SET body = excluded.body"),
        unjob(db, "DELETE FROM jobs WHERE seq = ?1"),
        node(db, upsert("nodes", "name").c_str()),
        unnode(db, "DELETE FROM nodes WHERE name = ?1"),
        fence(db, upsert("fences", "id").c_str()),
        unfence(db, "DELETE FROM fences WHERE id = ?1"),
        project(db, upsert("projects", "name").c_str()),
        unproject(db, "DELETE FROM projects WHERE name = ?1"),
        usage(db, upsert("usage_records", "key").c_str()),
        node_token(db, upsert("node_tokens", "node").c_str()),
        unnode_token(db, "DELETE FROM node_tokens WHERE node = ?1"),
        reservation(db, upsert("reservations", "name").c_str()),
        unreservation(db, "DELETE FROM reservations WHERE name = ?1") {}
  bool ok() const {
    for (const Stmt* s : {&begin, &commit, &job, &unjob, &node, &unnode, &fence, &unfence, &project, &unproject, &usage,
                          &node_token, &unnode_token, &reservation, &unreservation})
      if (!s->ok()) return false;
    return true;
  }
  Stmt begin, commit, job, unjob, node, unnode, fence, unfence, project, unproject, usage, node_token, unnode_token,
      reservation, unreservation;
};

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}

  Status write(const WriteBatch& batch) override { return committer_.write(batch); }
  std::future<Status> write_queued(std::shared_ptr<const WriteBatch> batch) override {
    return committer_.queue(std::move(batch));
  }

  Result<Snapshot> load() override EXCLUDES(db_mu_) {
    // Runs on the writer's Db under db_mu_; callers load before writing.
    MutexLock lk(db_mu_);
    return read_snapshot(*db_);
  }

 private:
  Status commit(const std::vector<const WriteBatch*>& group) EXCLUDES(db_mu_) {
    MutexLock lk(db_mu_);
    if (!stmts_) {
      auto st = std::make_unique<WriteStatements>(db_->raw());
      if (!st->ok()) return Error{"prepare: " + db_->errmsg()};
      stmts_ = std::move(st);
    }
    if (auto s = step_once(stmts_->begin); !s) return s.error().wrap("begin");
    Status s = apply_all(group);
    if (!s) {
      (void)db_->exec("ROLLBACK");
      return s;
    }
    if (auto c = step_once(stmts_->commit); !c) {
      (void)db_->exec("ROLLBACK");
      return c.error().wrap("commit");
    }
    return ok_status();
  }

  Status step_once(Stmt& st) REQUIRES(db_mu_) {
    const int rc = st.step();
    st.reset();
    if (rc != SQLITE_DONE) return Error{db_->errmsg()};
    return ok_status();
  }

  Status apply_all(const std::vector<const WriteBatch*>& group) REQUIRES(db_mu_) {
    WriteStatements& w = *stmts_;
    for (const WriteBatch* batch : group) {
      const WriteBatch& b = *batch;
      for (const auto& j : b.jobs) {
        w.job.bind(1, job_seq(j.id));
        w.job.bind(2, j.id);
        w.job.bind(3, api::to_json(j).dump());
        if (auto s = step_once(w.job); !s) return s.error().wrap("writing job " + j.id);
      }
      for (const auto& id : b.delete_jobs) {
        w.unjob.bind(1, job_seq(id));
        if (auto s = step_once(w.unjob); !s) return s.error().wrap("deleting job " + id);
      }
      for (const auto& n : b.nodes) {
        w.node.bind(1, n.name);
        w.node.bind(2, node_record_to_json(n));
        if (auto s = step_once(w.node); !s) return s.error().wrap("writing node " + n.name);
      }
      for (const auto& name : b.delete_nodes) {
        w.unnode.bind(1, name);
        if (auto s = step_once(w.unnode); !s) return s.error().wrap("deleting node " + name);
      }
      for (const auto& f : b.put_fences) {
        w.fence.bind(1, f.id);
        w.fence.bind(2, fence_to_json(f));
        if (auto s = step_once(w.fence); !s) return s.error().wrap("writing fence " + f.id);
      }
      for (const auto& id : b.delete_fences) {
        w.unfence.bind(1, id);
        if (auto s = step_once(w.unfence); !s) return s.error().wrap("deleting fence " + id);
      }
      for (const auto& p : b.put_projects) {
        w.project.bind(1, p.name);
        w.project.bind(2, project_to_json(p));
        if (auto s = step_once(w.project); !s) return s.error().wrap("writing project " + p.name);
      }
      for (const auto& name : b.delete_projects) {
        w.unproject.bind(1, name);
        if (auto s = step_once(w.unproject); !s) return s.error().wrap("deleting project " + name);
      }
      for (const auto& u : b.put_usage) {
        w.usage.bind(1, u.key());
        w.usage.bind(2, usage_record_to_json(u));
        if (auto s = step_once(w.usage); !s) return s.error().wrap("writing usage " + u.key());
      }
      for (const auto& t : b.put_node_tokens) {
        w.node_token.bind(1, t.node);
        w.node_token.bind(2, node_token_to_json(t));
        if (auto s = step_once(w.node_token); !s) return s.error().wrap("writing the token of node " + t.node);
      }
      for (const auto& name : b.delete_node_tokens) {
        w.unnode_token.bind(1, name);
        if (auto s = step_once(w.unnode_token); !s) return s.error().wrap("deleting the token of node " + name);
      }
      for (const auto& r : b.put_reservations) {
        w.reservation.bind(1, r.name);
        w.reservation.bind(2, reservation_to_json(r));
        if (auto s = step_once(w.reservation); !s) return s.error().wrap("writing reservation " + r.name);
      }
      for (const auto& name : b.delete_reservations) {
        w.unreservation.bind(1, name);
        if (auto s = step_once(w.unreservation); !s) return s.error().wrap("deleting reservation " + name);
      }
    }
    return ok_status();
  }

  Mutex db_mu_;  // Serialises load() with the writer's commits.
  std::unique_ptr<Db> db_ PT_GUARDED_BY(db_mu_);
  // Prepared at the first commit; before db_ in destruction (finalized before it closes).
  std::unique_ptr<WriteStatements> stmts_ PT_GUARDED_BY(db_mu_);
  // Last: its writer stops (committing what is queued) before db_ goes.
  GroupCommitter committer_{[this](const std::vector<const WriteBatch*>& group) { return commit(group); }};
};

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, SyncMode sync) {
  auto db = Db::open(path, sync);
  if (!db) return db.error();
  return std::unique_ptr<Store>(new SqliteStore(std::move(*db)));
}

}  // namespace tessel::scheduler
