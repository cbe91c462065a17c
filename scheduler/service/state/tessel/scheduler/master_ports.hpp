#pragma once
// MASTER_PORT for the jobs one scheduling pass places (torch.distributed's rendezvous
// port on rank 0's node): the lowest port of the scheduler's range
// (--master-port-range) that neither a job already running with its rank 0 on that
// node nor a job placed earlier in the same pass uses there. Pure: one per pass.

#include <map>
#include <set>
#include <string>

namespace tessel::scheduler {

class MasterPorts {
 public:
  MasterPorts(int lo, int hi) : lo_(lo), hi_(hi) {}

  // A port on `node`, given that jobs with rank 0 there use `in_use`; 0 when every
  // port of the range is taken (the job then starts without one, as before a range
  // existed, and a warning says so).
  int take(const std::string& node, const std::set<int>& in_use) {
    std::set<int>& given = given_[node];
    for (int port = lo_; port <= hi_; ++port) {
      if (in_use.count(port) || given.count(port)) continue;
      given.insert(port);
      return port;
    }
    return 0;
  }

 private:
  const int lo_, hi_;
  std::map<std::string, std::set<int>> given_;  // By node, in this pass.
};

}  // namespace tessel::scheduler
