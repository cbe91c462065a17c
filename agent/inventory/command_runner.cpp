#include "tessel/agent/command_runner.hpp"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>

namespace tessel::agent {

namespace bp = boost::process;
namespace asio = boost::asio;

namespace {

// Puts the child in a new process group so a timeout can kill it with its children.
struct NewProcessGroup : bp::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
  }
};

// Reads a pipe until EOF or error, keeping at most ProcessRunner::kMaxOutput bytes.
class PipeReader {
 public:
  PipeReader(bp::async_pipe& pipe, std::string& out) : pipe_(pipe), out_(out) {}
  void start() {
    pipe_.async_read_some(asio::buffer(buf_), [this](const boost::system::error_code& ec, size_t n) {
      size_t room = ProcessRunner::kMaxOutput - std::min(out_.size(), ProcessRunner::kMaxOutput);
      out_.append(buf_.data(), std::min(n, room));
      if (!ec) start();
    });
  }

 private:
  bp::async_pipe& pipe_;
  std::string& out_;
  std::array<char, 4096> buf_{};
};

}  // namespace

Result<CommandResult> ProcessRunner::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  if (argv.empty()) return Error{"empty command"};
  try {
    asio::io_context ios;
    bp::async_pipe out_pipe(ios);
    bp::async_pipe err_pipe(ios);
    std::error_code ec;
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    bp::child child(bp::exe = argv[0], bp::args = args, bp::std_in<bp::null, bp::std_out> out_pipe,
                    bp::std_err > err_pipe, NewProcessGroup{}, ec);
    if (ec) return Error{"starting " + argv[0] + ": " + ec.message()};

    CommandResult result;
    PipeReader out_reader(out_pipe, result.out);
    PipeReader err_reader(err_pipe, result.err);
    out_reader.start();
    err_reader.start();
    ios.run_for(timeout);
    if (!ios.stopped()) {
      // Still reading after the deadline: the tool hangs (or a child of it holds the pipes).
      result.timed_out = true;
      ::kill(-child.id(), SIGKILL);
      ::kill(child.id(), SIGKILL);
      boost::system::error_code ignore;
      out_pipe.close(ignore);
      err_pipe.close(ignore);
      ios.restart();
      ios.run();
    }
    child.wait(ec);
    if (ec) return Error{"waiting for " + argv[0] + ": " + ec.message()};
    const int status = child.native_exit_code();
    if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.signal = WTERMSIG(status);
    }
    return result;
  } catch (const std::exception& e) {
    return Error{"running " + argv[0] + ": " + e.what()};
  }
}

}  // namespace tessel::agent
