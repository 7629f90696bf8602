#include "tests/test_util.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace graphstore::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base ? base : "/tmp") + "/gs-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
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

}  // namespace graphstore::testing
