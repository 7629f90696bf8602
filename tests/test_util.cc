#include "tests/test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/huge_map.h"

namespace graphstore::testing {

namespace {
std::string TestTmpDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  return base != nullptr && *base ? base : "/tmp";
}
}  // namespace

TempDir::TempDir() : TempDir(TestTmpDir()) {}

TempDir::TempDir(const std::string& parent) {
  std::string tmpl = parent + "/gs-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed in " + parent);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string SharedDataPath(const std::string& relative) {
  const char* env = std::getenv("GRAPHSTORE_SHARED_DATA");
  if (env != nullptr && *env) return std::string(env) + "/" + relative;
  // Runfiles hold symlinks into the workspace; the workspace's sibling is ../shared.
  char real[PATH_MAX];
  if (realpath("README.md", real) != nullptr) {
    const std::string workspace = std::filesystem::path(real).parent_path().string();
    return workspace + "/../shared/data/" + relative;
  }
  return "../shared/data/" + relative;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

int RunCommand(const std::string& command) {
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
  }
}

std::vector<int> FreeLoopbackPorts(int n) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof(a);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("cannot find a free loopback port");
    }
    fds.push_back(fd);
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

int EstablishedConnectionsTo(int port) {
  int n = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // "  sl  local_address rem_address   st ...": addresses are HEXADDR:HEXPORT, st 01 is ESTABLISHED.
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = remote.rfind(':');
      if (colon == std::string::npos || state != "01") continue;
      n += std::stoi(remote.substr(colon + 1), nullptr, 16) == port;
    }
  }
  return n;
}

std::string SmapsLine(const void* p, const std::string& field) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
    } else if (inside && line.rfind(field, 0) == 0) {
      return line;
    }
  }
  return "";
}

bool KernelCollapsesTmpfs(const std::string& dir) {
  const std::string path = dir + "/collapse-probe";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  unlink(path.c_str());
  bool ok = posix_fallocate(fd, 0, kHugePageBytes) == 0;
  void* p = ok ? MapAtHugeBoundary(kHugePageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd) : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED) return false;
  ok = CollapseIntoHugePages(p, kHugePageBytes);
  munmap(p, kHugePageBytes);
  return ok;
}

int64_t SmapsKb(const void* p, const std::string& field) {
  const std::string line = SmapsLine(p, field);
  if (line.empty()) return 0;
  return std::stoll(line.substr(field.size()));
}

}  // namespace graphstore::testing
