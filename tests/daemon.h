#ifndef GRAPHSTORE_TESTS_DAEMON_H_
#define GRAPHSTORE_TESTS_DAEMON_H_

// Runs the real graphstored binary on loopback for end-to-end tests: --port=0 with a port
// file, so the test learns the bound port the way operations scripts do.

#include <sys/types.h>

#include <string>
#include <vector>

namespace graphstore::testing {

class Daemon {
 public:
  /// Starts graphstored serving `partition_dir` with extra flags on `port` (0: a free one);
  /// waits for its port file (written once it serves sampling) unless `wait` is false.
  Daemon(const std::string& partition_dir, const std::vector<std::string>& flags = {}, int port = 0,
         bool wait = true);
  /// Kills the daemon if it still runs.
  ~Daemon();

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool running() const { return pid_ > 0; }

  /// Waits up to `timeout_s` for the port file; throws if the daemon exits or the time runs out.
  void WaitReady(int timeout_s = 30);
  /// Sends `signal` without waiting.
  void Signal(int signal);
  /// Sends `signal` and waits up to `timeout_s`; returns the exit status (or -1 if it did not
  /// exit normally, -2 on timeout).
  int Stop(int signal, int timeout_s = 30);
  /// Waits up to `timeout_s` for the process to exit on its own; same return values.
  int WaitExit(int timeout_s);
  /// The daemon's log so far.
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
  std::string port_file_;
};

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_DAEMON_H_
