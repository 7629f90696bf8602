#include "tests/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "tests/test_util.h"

namespace graphstore::testing {

namespace {
int counter = 0;
}

Daemon::Daemon(const std::string& partition_dir, const std::vector<std::string>& flags, int port, bool wait) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string base = std::string(tmp != nullptr ? tmp : "/tmp") + "/graphstored-" +
                           std::to_string(::getpid()) + "-" + std::to_string(counter++);
  port_ = port;
  port_file_ = base + ".port";
  log_path_ = base + ".log";
  std::remove(port_file_.c_str());
  std::vector<std::string> args = {"server/graphstored", "--partition=" + partition_dir,
                                   "--port=" + std::to_string(port), "--port_file=" + port_file_,
                                   "--log_level=debug"};
  args.insert(args.end(), flags.begin(), flags.end());
  // Everything the child needs is built before the fork: the test process has gRPC threads, and
  // a child may only make async-signal-safe calls (no malloc) until it execs.
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const char* log_path = log_path_.c_str();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int fd = ::open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (wait) WaitReady();
}

void Daemon::WaitReady(int timeout_s) {
  for (int i = 0; i < timeout_s * 100; ++i) {
    const std::string text = ReadFile(port_file_);
    if (!text.empty()) {
      port_ = std::atoi(text.c_str());
      return;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("graphstored exited at start-up: " + Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("graphstored did not write its port file: " + Log());
}

Daemon::~Daemon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

int Daemon::WaitExit(int timeout_s) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -2;
}

void Daemon::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

int Daemon::Stop(int signal, int timeout_s) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  return WaitExit(timeout_s);
}

std::string Daemon::Log() const { return ReadFile(log_path_); }

}  // namespace graphstore::testing
