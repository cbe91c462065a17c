#pragma once
// Database files for the integrity tests: a real scheduler database with jobs, an
// old one without application_id, and garbage written over a page of the jobs table.

#include <sqlite3.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler::testing {

inline api::Job test_job(int64_t seq) {
  api::Job j;
  j.id = make_job_id(seq);
  j.name = "job-" + std::to_string(seq);
  j.user = "alice";
  j.spec.name = j.name;
  j.spec.command = {"python3", "train.py", "--seed", std::to_string(seq)};
  j.submitted_at_ms = 1'700'000'000'000 + seq;
  return j;
}

// A scheduler database at PATH (made by the store, closed again) holding jobs 1..n.
inline void make_database(const std::string& path, int n) {
  auto store = open_sqlite_store(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  WriteBatch b;
  for (int i = 1; i <= n; ++i) b.jobs.push_back(test_job(i));
  auto s = (*store)->write(b);
  ASSERT_TRUE(s.ok()) << s.error().message;
}

// Runs SQL on PATH with a plain sqlite3 connection; the first column of the last row.
inline std::string sql(const std::string& path, const std::string& text) {
  sqlite3* db = nullptr;
  std::string out;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(
      db, text.c_str(),
      [](void* o, int, char** v, char**) {
        *static_cast<std::string*>(o) = v[0] ? v[0] : "";
        return 0;
      },
      &out, nullptr);
  sqlite3_close(db);
  return out;
}

inline int64_t sql_int(const std::string& path, const std::string& text) { return std::stoll(sql(path, text)); }

// The number of a leaf page of the jobs table (down the middle of its b-tree, so that
// rows before it read fine), from the root page sqlite_master names.
inline int64_t jobs_leaf_page(const std::string& path) {
  const int64_t page_size = sql_int(path, "PRAGMA page_size");
  int64_t page = sql_int(path, "SELECT rootpage FROM sqlite_master WHERE name = 'jobs'");
  std::ifstream in(path, std::ios::binary);
  for (;;) {
    std::vector<unsigned char> p(static_cast<size_t>(page_size));
    in.seekg((page - 1) * page_size);
    in.read(reinterpret_cast<char*>(p.data()), page_size);
    if (!in || p[0] != 0x05) return page;  // 0x05: interior table page; 0x0d: leaf.
    const int cells = p[3] << 8 | p[4];
    const size_t at = 12 + 2 * static_cast<size_t>(cells / 2);
    const size_t cell = static_cast<size_t>(p[at] << 8 | p[at + 1]);
    page = int64_t{p[cell]} << 24 | int64_t{p[cell + 1]} << 16 | int64_t{p[cell + 2]} << 8 | p[cell + 3];
  }
}

// Writes garbage over page `page` of PATH (the database must be closed, its WAL
// folded in).
inline void corrupt_page(const std::string& path, int64_t page) {
  const int64_t page_size = sql_int(path, "PRAGMA page_size");
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f);
  f.seekp((page - 1) * page_size);
  const std::string garbage(static_cast<size_t>(page_size), '\xa5');
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  ASSERT_TRUE(f);
}

}  // namespace tessel::scheduler::testing
