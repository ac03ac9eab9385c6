// command_runner.h - the --on-event command (docs/events.md "The command"): one child per
// event, the event's JSON line on its stdin, at most `jobs` children at once, from the
// agent's event loop without ever waiting on a child.
//
// A child is started with fork and execve (no shell: CMD is split into words, quotes group
// them; `sh -c '...'` is the operator's to write). Before execve it has: stdin the read end
// of a pipe holding the event, stdout /dev/null, stderr the agent's; every other descriptor
// closed (close_range: no socket, map or pin of the agent's); default signal mask and
// SIGPIPE; a session of its own (so a timeout kills its whole process group); no
// capability in any set, ambient cleared, no_new_privs. It runs as the agent's uid.
// The parent writes the line without blocking (O_NONBLOCK; the rest on POLLOUT), reaps
// with a pidfd (WNOHANG), and kills the group (SIGKILL) at timeout_ns. Outcomes are
// counted in the bus (exit 0, non-zero or a signal, spawn errors, timeouts) and failures
// logged at a limited rate.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/no_copy.h"
#include "events/event_bus.h"

namespace dt {

inline constexpr size_t kDefaultEventJobs = 4;
inline constexpr uint64_t kDefaultEventTimeoutNs = 10'000'000'000ull;

// "CMD ARG 'two words' \"x y\"": the words of an --on-event command. The first must be an
// absolute path. False with a sentence in *err.
bool split_command(const std::string &text, std::vector<std::string> *argv, std::string *err);

struct CommandRunnerConfig {
  std::vector<std::string> argv;  // split_command's
  size_t jobs = kDefaultEventJobs;
  uint64_t timeout_ns = kDefaultEventTimeoutNs;
};

// A descriptor the loop polls for the runner, and for what.
struct RunnerPollFd {
  int fd;
  bool out;  // waiting to write (else to read)
};

class CommandRunner : NoCopy {
 public:
  CommandRunner(CommandRunnerConfig cfg, EventBus &bus);
  ~CommandRunner();  // kills and reaps the children still running

  // The descriptors to poll: the wake-up (an event queued), each child's pidfd and, while
  // its line is not all written, its stdin pipe.
  std::vector<RunnerPollFd> poll_fds() const;
  // The earliest child's timeout (UINT64_MAX: none running).
  uint64_t deadline() const;
  // After any of them is ready or the deadline passed: reaps, kills at the timeout,
  // writes, and starts children for queued events up to `jobs`.
  void poll(uint64_t now_ns);
  size_t running() const { return children_.size(); }

 private:
  struct Child {
    pid_t pid = -1;
    int pidfd = -1, in = -1;  // in: the write end of its stdin (-1 once all written)
    std::string line;
    size_t written = 0;
    uint64_t deadline_ns = 0;
    bool killed = false;
  };
  void reap(uint64_t now_ns);
  void start_queued(uint64_t now_ns);
  bool start(const std::string &line, uint64_t now_ns);
  void write_in(Child &c);
  void finish(Child &c, int status, uint64_t now_ns);

  CommandRunnerConfig cfg_;
  EventBus &bus_;
  int wake_fd_ = -1, devnull_ = -1;
  std::vector<Child> children_;
  LogLimiter fail_log_{10'000'000'000ull, 5};
};

}  // namespace dt
