#ifndef GRAPHSTORE_TESTS_TEST_UTIL_H_
#define GRAPHSTORE_TESTS_TEST_UTIL_H_

// Helpers shared by the tests: scratch directories and the location of ../shared/data.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace graphstore::testing {

/// A fresh directory under $TEST_TMPDIR (or /tmp), or under `parent` (e.g. /dev/shm, a tmpfs),
/// removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  explicit TempDir(const std::string& parent);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Absolute path of a file in the shared datasets directory (`../shared/data` beside the
/// repository): $GRAPHSTORE_SHARED_DATA when set, else found from the workspace's README.
std::string SharedDataPath(const std::string& relative);

/// Whole file contents ("" when unreadable).
std::string ReadFile(const std::string& path);
/// Overwrites a file.
void WriteFile(const std::string& path, const std::string& contents);
/// Runs a shell command; returns its exit status (or -1).
int RunCommand(const std::string& command);

/// Asks `done` until it answers true or `timeout` passes (polling a server's state, with a
/// short pause between asks); returns its last answer. Tests REQUIRE it, so a state that never
/// comes fails instead of passing.
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// `n` distinct loopback ports that were free a moment ago (for servers that must know each
/// other's addresses before they start).
std::vector<int> FreeLoopbackPorts(int n);

/// TCP connections in this network namespace established to local port `port` (the client
/// ends, read from /proc/net/tcp): how many connections clients hold to a server.
int EstablishedConnectionsTo(int port);

/// The line of /proc/self/smaps that starts with `field` (e.g. "VmFlags:") in the block of the
/// mapping holding `p`; "" when nothing is mapped there.
std::string SmapsLine(const void* p, const std::string& field);

/// The kilobytes a "<field> <n> kB" line of SmapsLine gives; 0 when there is none.
int64_t SmapsKb(const void* p, const std::string& field);

/// Whether this kernel moves the pages of a file in tmpfs directory `dir` onto huge pages when
/// asked (MADV_COLLAPSE, Linux 6.1, where transparent huge pages for tmpfs are not denied),
/// asked here directly of a 2 MiB file.
bool KernelCollapsesTmpfs(const std::string& dir);

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_TEST_UTIL_H_
