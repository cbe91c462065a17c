// bench_stamp DIR [SLEEP_S]: the job the turnaround and mixed-workload benchmarks run.
// Its first action is to append "start <CLOCK_REALTIME ns>" to DIR/<id>; then it sleeps
// SLEEP_S seconds (default 0, fractions allowed) and appends "end <ns>" just before
// exiting. <id> is $TESSEL_JOB_ID, else $SLURM_JOB_ID, else $STAMP_ID (the job's id in
// the system that ran it). No shell, no C++ runtime beyond libc: nothing between exec and
// the first stamp except the dynamic loader.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

bool append(const char* path, const char* what, const timespec& ts) {
  char line[64];
  long long ns = static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  int n = std::snprintf(line, sizeof line, "%s %lld\n", what, ns);
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, line, static_cast<size_t>(n)) == n;
  return ::close(fd) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  timespec start{};
  ::clock_gettime(CLOCK_REALTIME, &start);  // the first thing the job does
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: bench_stamp DIR [SLEEP_S]\n");
    return 2;
  }
  const char* id = std::getenv("TESSEL_JOB_ID");
  if (!id || !*id) id = std::getenv("SLURM_JOB_ID");
  if (!id || !*id) id = std::getenv("STAMP_ID");
  if (!id || !*id || std::strchr(id, '/')) {
    std::fprintf(stderr, "bench_stamp: no usable TESSEL_JOB_ID, SLURM_JOB_ID or STAMP_ID\n");
    return 2;
  }
  char path[4096];
  if (std::snprintf(path, sizeof path, "%s/%s", argv[1], id) >= static_cast<int>(sizeof path)) return 2;
  if (!append(path, "start", start)) {
    std::fprintf(stderr, "bench_stamp: %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  double sleep_s = argc == 3 ? std::strtod(argv[2], nullptr) : 0.0;
  if (sleep_s > 0) {
    timespec d{static_cast<time_t>(sleep_s), static_cast<long>((sleep_s - static_cast<time_t>(sleep_s)) * 1e9)};
    while (::nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
  }
  timespec end{};
  ::clock_gettime(CLOCK_REALTIME, &end);
  if (!append(path, "end", end)) {
    std::fprintf(stderr, "bench_stamp: %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  return 0;
}
