// command_runner.cpp - the --on-event children: started, fed, timed out and reaped from
// the event loop (command_runner.h).
#include "events/command_runner.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace dt {
namespace {

constexpr const char *kChildPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// In the child, between fork and execve: system calls only (the agent has other threads,
// whose locks the child may have inherited held). Never returns.
[[noreturn]] void exec_child(int in_fd, int devnull, char *const argv[], char *const envp[]) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < 32; sig++) sigaction(sig, &dfl, nullptr);  // SIGKILL, SIGSTOP: EINVAL, harmless
  sigset_t none;
  sigemptyset(&none);
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof(uint64_t));  // signalfd's blocked ones
  if (dup2(in_fd, 0) < 0 || dup2(devnull, 1) < 0) _exit(126);
  if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
    for (int fd = 3; fd < 65536; fd++) close(fd);
  setsid();
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capset, &header, data) != 0) _exit(126);  // never run it with capabilities
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  execve(argv[0], argv, envp);
  _exit(127);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

bool split_command(const std::string &text, std::vector<std::string> *argv, std::string *err) {
  argv->clear();
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : text) {
    if (quote) {
      if (ch == quote) quote = 0;
      else word += ch;
    } else if (ch == '\'' || ch == '"') {
      quote = ch, in_word = true;
    } else if (ch == ' ' || ch == '\t') {
      if (in_word) argv->push_back(word), word.clear(), in_word = false;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      return *err = "a control character in the command", false;
    } else {
      word += ch, in_word = true;
    }
  }
  if (quote) return *err = std::string("an unclosed ") + quote + " in the command", false;
  if (in_word) argv->push_back(word);
  if (argv->empty()) return *err = "an empty command", false;
  if ((*argv)[0].empty() || (*argv)[0][0] != '/')
    return *err = "'" + (*argv)[0] +
                  "' is not an absolute path (no shell and no PATH search: write /bin/sh -c '...' for a shell)",
           false;
  return true;
}

CommandRunner::CommandRunner(CommandRunnerConfig cfg, EventBus &bus) : cfg_(std::move(cfg)), bus_(bus) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  devnull_ = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int fd = wake_fd_;
  bus_.set_command_notify([fd] {
    const uint64_t one = 1;
    if (write(fd, &one, sizeof one) < 0) {
    }  // full (it cannot be): the loop wakes anyway
  });
}

CommandRunner::~CommandRunner() {
  bus_.set_command_notify(nullptr);
  for (Child &c : children_) {
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);
    waitpid(c.pid, nullptr, 0);
    if (c.pidfd >= 0) close(c.pidfd);
    if (c.in >= 0) close(c.in);
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  if (devnull_ >= 0) close(devnull_);
}

std::vector<RunnerPollFd> CommandRunner::poll_fds() const {
  std::vector<RunnerPollFd> fds;
  if (wake_fd_ >= 0) fds.push_back({wake_fd_, false});
  for (const Child &c : children_) {
    if (c.pidfd >= 0) fds.push_back({c.pidfd, false});
    if (c.in >= 0) fds.push_back({c.in, true});
  }
  return fds;
}

uint64_t CommandRunner::deadline() const {
  uint64_t d = UINT64_MAX;
  for (const Child &c : children_) {
    if (!c.killed) d = std::min(d, c.deadline_ns);
    if (c.pidfd < 0) d = std::min<uint64_t>(d, mono_now_ns() + 100'000'000ull);  // no pidfd: look every 100 ms
  }
  return d;
}

void CommandRunner::poll(uint64_t now_ns) {
  uint64_t drained = 0;
  if (wake_fd_ >= 0 && read(wake_fd_, &drained, sizeof drained) < 0) {
  }  // EAGAIN: nothing new
  reap(now_ns);
  for (Child &c : children_) write_in(c);
  start_queued(now_ns);
}

void CommandRunner::reap(uint64_t now_ns) {
  for (size_t i = 0; i < children_.size();) {
    Child &c = children_[i];
    int status = 0;
    const pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r == c.pid || (r < 0 && errno == ECHILD)) {
      finish(c, r == c.pid ? status : 0, now_ns);
      children_.erase(children_.begin() + static_cast<long>(i));
      continue;
    }
    if (!c.killed && now_ns >= c.deadline_ns) {
      kill(-c.pid, SIGKILL);  // its session's group: what it started too
      kill(c.pid, SIGKILL);
      c.killed = true;
      bus_.count(&EventCounters::command_timeouts);
      log_limited(fail_log_, LogLevel::Warn, now_ns, "--on-event: %s (pid %d) ran over %.1fs: killed",
                  cfg_.argv[0].c_str(), static_cast<int>(c.pid), cfg_.timeout_ns / 1e9);
    }
    i++;
  }
}

void CommandRunner::finish(Child &c, int status, uint64_t now_ns) {
  if (c.pidfd >= 0) close(c.pidfd);
  if (c.in >= 0) close(c.in);
  if (c.killed) return;  // counted as a timeout
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    bus_.count(&EventCounters::command_ok);
    return;
  }
  bus_.count(&EventCounters::command_failed);
  log_limited(fail_log_, LogLevel::Warn, now_ns, "--on-event: %s (pid %d) failed: %s%s", cfg_.argv[0].c_str(),
              static_cast<int>(c.pid), describe_status(status).c_str(),
              WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (it could not be executed)" : "");
}

void CommandRunner::write_in(Child &c) {
  while (c.in >= 0 && c.written < c.line.size()) {
    const ssize_t n = write(c.in, c.line.data() + c.written, c.line.size() - c.written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) break;  // EPIPE: it does not read its stdin; its exit status says the rest
    c.written += static_cast<size_t>(n);
  }
  if (c.in >= 0) close(c.in);
  c.in = -1;
}

void CommandRunner::start_queued(uint64_t now_ns) {
  std::string line;
  while (children_.size() < cfg_.jobs && bus_.pop_command_event(&line)) {
    if (start(line, now_ns)) write_in(children_.back());
  }
}

bool CommandRunner::start(const std::string &line, uint64_t now_ns) {
  int pipefd[2];
  auto fail = [&](const char *what) {
    bus_.count(&EventCounters::command_spawn_errors);
    log_limited(fail_log_, LogLevel::Warn, now_ns, "--on-event: cannot start %s: %s: %s", cfg_.argv[0].c_str(), what,
                strerror(errno));
    return false;
  };
  if (pipe2(pipefd, O_CLOEXEC) != 0) return fail("pipe");
  std::vector<char *> argv, envp{const_cast<char *>(kChildPath), nullptr};
  for (const std::string &a : cfg_.argv) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) exec_child(pipefd[0], devnull_, argv.data(), envp.data());
  const int saved = errno;
  close(pipefd[0]);
  if (pid < 0) {
    close(pipefd[1]);
    errno = saved;
    return fail("fork");
  }
  fcntl(pipefd[1], F_SETFL, O_NONBLOCK);
  Child c;
  c.pid = pid;
  c.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // -1 before Linux 5.3: looked at every 100 ms
  c.in = pipefd[1];
  c.line = line;
  c.deadline_ns = now_ns + cfg_.timeout_ns;
  children_.push_back(std::move(c));
  return true;
}

}  // namespace dt
