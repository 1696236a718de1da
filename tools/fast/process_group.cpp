#include "process_group.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"

namespace fast::cli {

namespace {

constexpr std::size_t kMaxLine = 1 << 20;    // a longer line is cut (bytes)
constexpr std::size_t kMaxInput = 32 << 10;  // ChildSpec::input, bytes: well inside a pipe's buffer

// Writes all of text to fd; gives up silently if fd is broken (launch's own output closed).
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
      continue;
    }
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// NUL-terminated pointer arrays for execve, built before fork (no allocation in the child).
std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the forked child: never returns.
[[noreturn]] void exec_child(pid_t parent, int in_fd, int out_fd, int err_fd, const char* program, char* const* argv,
                             char* const* envp, const char* exec_failed) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(core::exit_code::cannot_exec);  // launch died before prctl
  const int stdin_fd = in_fd >= 0 ? in_fd : ::open("/dev/null", O_RDONLY);
  if (stdin_fd >= 0) ::dup2(stdin_fd, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(program, argv, envp);
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, exec_failed, std::strlen(exec_failed));
  ::_exit(core::exit_code::cannot_exec);
}

ChildExit exit_of(int status) {
  return WIFSIGNALED(status) ? ChildExit{core::exit_code::killed_by(WTERMSIG(status)), WTERMSIG(status)}
                             : ChildExit{WEXITSTATUS(status), 0};
}

}  // namespace

std::string ChildExit::describe() const {
  if (signal == 0) return fmt::format("exit code {}", code);
  const char* name = ::sigabbrev_np(signal);
  return name != nullptr ? fmt::format("killed by signal SIG{}", name) : fmt::format("killed by signal {}", signal);
}

ProcessGroup::ProcessGroup(const std::vector<ChildSpec>& children) {
  children_.reserve(children.size());
  try {
    for (std::size_t i = 0; i < children.size(); ++i) children_.push_back(start(static_cast<int>(i), children[i]));
  } catch (...) {
    kill_all();
    throw;
  }
}

ProcessGroup::~ProcessGroup() {
  finish();
  kill_all();
}

ProcessGroup::Child ProcessGroup::start(int rank, const ChildSpec& spec) {
  int out[2], err[2];
  FAST_ENFORCE_AS(core::IoError, ::pipe2(out, O_CLOEXEC) == 0, "fast launch: cannot create a pipe ({})",
                  std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    FAST_THROW(core::IoError, "fast launch: cannot create a pipe ({})", std::strerror(errno));
  }
  int in[2] = {-1, -1};
  if (spec.input) {
    FAST_ENFORCE(spec.input->size() <= kMaxInput, "fast launch: the input of process {} is {} bytes; at most {}", rank,
                 spec.input->size(), kMaxInput);
    if (::pipe2(in, O_CLOEXEC) != 0) {
      for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
      FAST_THROW(core::IoError, "fast launch: cannot create a pipe ({})", std::strerror(errno));
    }
    write_all(in[1], *spec.input);  // fits the pipe's buffer: never blocks
    ::close(in[1]);
  }
  const std::vector<char*> argv = c_strings(spec.argv);
  const std::vector<char*> envp = c_strings(spec.env);
  const std::string exec_failed = fmt::format("fast launch: cannot execute '{}'\n", spec.program);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_child(parent, in[0], out[1], err[1], spec.program.c_str(), argv.data(), envp.data(), exec_failed.c_str());
  const int fork_errno = errno;
  ::close(out[1]);
  ::close(err[1]);
  if (in[0] >= 0) ::close(in[0]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    FAST_THROW(core::IoError, "fast launch: cannot start process {} ({})", rank, std::strerror(fork_errno));
  }
  ::setpgid(pid, pid);  // also in the child: whichever runs first
  for (int fd : {out[0], err[0]}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  Child child;
  child.pid = pid;
  child.label = spec.label.empty() ? std::to_string(rank) : spec.label;
  child.out = {out[0], STDOUT_FILENO, {}};
  child.err = {err[0], STDERR_FILENO, {}};
  return child;
}

void ProcessGroup::restart(int rank, const ChildSpec& spec) {
  Child& old = children_.at(static_cast<std::size_t>(rank));
  FAST_ENFORCE_AS(core::InvalidUsage, old.exit.has_value(), "fast launch: process {} restarted while it runs", rank);
  close_streams(rank);
  ::kill(-old.pid, SIGKILL);  // what it started and left behind in its process group
  Child fresh = start(rank, spec);
  children_[static_cast<std::size_t>(rank)] = std::move(fresh);
}

int ProcessGroup::running() const {
  int n = 0;
  for (const Child& c : children_) n += c.exit ? 0 : 1;
  return n;
}

void ProcessGroup::write_lines(int rank, Stream& s, bool flush_partial) {
  std::string text;
  std::size_t begin = 0;
  for (;;) {
    std::size_t end = s.partial.find('\n', begin);
    if (end == std::string::npos && s.partial.size() - begin >= kMaxLine) end = begin + kMaxLine;
    if (end == std::string::npos && flush_partial && begin < s.partial.size()) end = s.partial.size();
    if (end == std::string::npos) break;
    text += fmt::format("[{}] ", children_[static_cast<std::size_t>(rank)].label);
    text.append(s.partial, begin, end - begin);
    s.last_line.assign(s.partial, begin, end - begin);
    text += '\n';
    begin = end < s.partial.size() && s.partial[end] == '\n' ? end + 1 : end;
  }
  s.partial.erase(0, begin);
  write_all(s.out_fd, text);
}

void ProcessGroup::relay(int rank, Stream& s, bool drain) {
  char buf[65536];
  while (s.fd >= 0) {
    const ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // EAGAIN: nothing more now
    if (n == 0) {      // end of file: the child and what it started closed it
      ::close(s.fd);
      s.fd = -1;
      write_lines(rank, s, true);
      return;
    }
    s.partial.append(buf, static_cast<std::size_t>(n));
    write_lines(rank, s, false);
    if (!drain) break;
  }
}

bool ProcessGroup::reap(int rank) {
  Child& c = children_[static_cast<std::size_t>(rank)];
  if (c.exit) return false;
  int status = 0;
  pid_t got = 0;
  while ((got = ::waitpid(c.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (got != c.pid) return false;
  c.exit = exit_of(status);
  relay(rank, c.out, true);
  relay(rank, c.err, true);
  return true;
}

std::vector<int> ProcessGroup::pump(std::chrono::milliseconds timeout, int wake_fd) {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, Stream*>> owners;  // parallel to fds after the wake fd
  if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
  for (std::size_t r = 0; r < children_.size(); ++r) {
    for (Stream* s : {&children_[r].out, &children_[r].err}) {
      if (s->fd < 0) continue;
      fds.push_back({s->fd, POLLIN, 0});
      owners.push_back({static_cast<int>(r), s});
    }
  }
  const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, timeout.count())));
  if (ready > 0) {
    const std::size_t first = wake_fd >= 0 ? 1 : 0;
    for (std::size_t i = 0; i < owners.size(); ++i) {
      if (fds[first + i].revents != 0) relay(owners[i].first, *owners[i].second, false);
    }
  }
  std::vector<int> reaped;
  for (std::size_t r = 0; r < children_.size(); ++r) {
    if (reap(static_cast<int>(r))) reaped.push_back(static_cast<int>(r));
  }
  return reaped;
}

int ProcessGroup::signal(int sig, bool whole_group) {
  int sent = 0;
  for (const Child& c : children_) {
    if (c.exit) continue;  // reaped: its pid may belong to another process now
    // Once each: a process that stops gracefully on its first SIGINT or SIGTERM ends at once on a
    // second (docs/faults.md, "Interrupting a run"), so a signal its group got is not sent again to
    // the child itself, the group's leader; to the child alone where no such group exists.
    if (whole_group && ::kill(-c.pid, sig) == 0) {
      ++sent;
      continue;
    }
    sent += ::kill(c.pid, sig) == 0 ? 1 : 0;
  }
  return sent;
}

void ProcessGroup::close_streams(int rank) {
  Child& c = children_[static_cast<std::size_t>(rank)];
  for (Stream* s : {&c.out, &c.err}) {
    relay(rank, *s, true);
    if (s->fd >= 0) {
      ::close(s->fd);
      s->fd = -1;
    }
    write_lines(rank, *s, true);
  }
}

void ProcessGroup::finish() {
  for (std::size_t r = 0; r < children_.size(); ++r) close_streams(static_cast<int>(r));
}

void ProcessGroup::kill_all() {
  for (Child& c : children_) {
    ::kill(-c.pid, SIGKILL);  // the group outlives a reaped leader only while members remain
    if (c.exit) continue;
    ::kill(c.pid, SIGKILL);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    c.exit = exit_of(status);
  }
}

}  // namespace fast::cli
