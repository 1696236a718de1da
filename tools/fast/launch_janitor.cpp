#include "launch_janitor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fast/core/error.hpp"

namespace fast::cli {

namespace {

namespace fs = std::filesystem;

constexpr double kOutliveSeconds = 30;  // at most this long for the processes to be gone

// Whether pid is a process that has not ended (a zombie has).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

// The janitor's life: pids from `fd` until end of file, then the clean-up. Never returns.
[[noreturn]] void janitor(int fd, const fs::path& key_dir) {
  std::vector<pid_t> pids;
  pid_t pid = 0;
  for (;;) {
    const ::ssize_t n = ::read(fd, &pid, sizeof pid);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<::ssize_t>(sizeof pid)) break;  // launch ended (or closed the pipe)
    pids.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kOutliveSeconds);
  for (const pid_t p : pids)
    while (running(p) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::error_code ec;
  if (!key_dir.empty()) fs::remove_all(key_dir, ec);
  const fs::path temporary = fs::temp_directory_path(ec);
  for (const pid_t p : pids) {
    const std::string prefix = "fast-" + std::to_string(p) + "-";
    for (const auto& entry : fs::directory_iterator(temporary, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with(prefix) && name.ends_with(".sock")) fs::remove(entry.path(), ec);
    }
  }
  ::_exit(0);
}

// In the forked janitor: detached by setsid() (a signal to launch's group does not reach it), default
// signals, /dev/null for stdio, every other file closed but `keep`.
void detach(int keep) {
  ::setsid();
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);  // then unblocked
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null = ::open("/dev/null", O_RDWR);
  for (const int std_fd : {0, 1, 2})
    if (null >= 0) ::dup2(null, std_fd);
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != keep) ::close(fd);
}

}  // namespace

LaunchJanitor::LaunchJanitor(fs::path key_dir) {
  int fds[2];
  FAST_ENFORCE_AS(core::IoError, ::pipe2(fds, O_CLOEXEC) == 0, "fast launch: cannot create a pipe ({})",
                  std::strerror(errno));
  pid_ = ::fork();
  if (pid_ == 0) {
    detach(fds[0]);
    janitor(fds[0], key_dir);
  }
  const int fork_errno = errno;
  ::close(fds[0]);
  if (pid_ < 0) {
    ::close(fds[1]);
    FAST_THROW(core::IoError, "fast launch: cannot start its clean-up process ({})", std::strerror(fork_errno));
  }
  pipe_ = fds[1];
}

LaunchJanitor::~LaunchJanitor() {
  if (pipe_ >= 0) ::close(pipe_);
  int status = 0;
  while (pid_ > 0 && ::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

void LaunchJanitor::watch(pid_t pid) {
  if (pipe_ < 0) return;
  [[maybe_unused]] const ::ssize_t n = ::write(pipe_, &pid, sizeof pid);  // 4 bytes: atomic on a pipe
}

}  // namespace fast::cli
