#pragma once
// EnvBlock: a child's whole environment as a prepared envp, for Boost.Process.
//
// Why not boost::process::environment: in Boost 1.74 (Debian 12) its find(),
// used by operator[] and emplace(), compares a key against every entry with
// std::equal and no length check, reading past entries shorter than the key
// (a heap-buffer-overflow under ASan). EnvBlock never searches: callers build
// the final name -> value map, and the block hands execve() its envp directly.
// Header-only; include it only where Boost.Process is already used.

#include <map>
#include <string>
#include <vector>

#include <boost/process/extend.hpp>

namespace tessel {

class EnvBlock : public boost::process::extend::handler {
 public:
  explicit EnvBlock(const std::map<std::string, std::string>& vars) {
    entries_.reserve(vars.size());
    for (const auto& [k, v] : vars) entries_.push_back(std::string(k).append("=").append(v));
    for (auto& e : entries_) envp_.push_back(e.data());
    envp_.push_back(nullptr);
  }
  // Copies would leave envp_ pointing into the source's strings.
  EnvBlock(const EnvBlock&) = delete;
  EnvBlock& operator=(const EnvBlock&) = delete;

  // Boost.Process calls this in the parent before fork; execve() then uses envp_.
  template <class Executor>
  void on_setup(Executor& exec) const {
    exec.env = const_cast<char**>(envp_.data());
  }

 private:
  std::vector<std::string> entries_;
  std::vector<char*> envp_;
};

}  // namespace tessel
