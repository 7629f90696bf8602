#ifndef GRAPHSTORE_TESTS_FUZZ_FUZZ_UTIL_H_
#define GRAPHSTORE_TESTS_FUZZ_FUZZ_UTIL_H_

// Shared pieces of the libFuzzer targets (built by tests/fuzz/run.sh with clang's
// -fsanitize=fuzzer,address, outside Bazel): a scratch directory, the small generated dataset
// every target starts from, and writing a seed corpus when GRAPHSTORE_FUZZ_SEEDS names a
// directory (the target then exits).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tools/generator.h"

namespace graphstore::fuzz {

// A directory of this process under TMPDIR (or /tmp), made once.
inline const std::string& ScratchDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/graphstore-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    return pattern;
  }();
  return dir;
}

// A 1-partition generated graph (300 nodes, 4 features, 3 classes), written once.
inline const std::string& SeedDataset() {
  static const std::string dir = [] {
    GeneratorOptions g;
    g.num_nodes = 300;
    g.avg_degree = 5;
    g.max_degree = 40;
    g.feature_dim = 4;
    g.num_classes = 3;
    g.seed = 3;
    g.edge_weights = true;  // weights.npy and time.npy are read and verified too
    g.times = true;
    const std::string out = ScratchDir() + "/seed-dataset";
    if (!GenerateDataset(g, out).ok()) std::abort();
    return out;
  }();
  return dir;
}

inline bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The seed-corpus directory asked for, or "".
inline std::string SeedsDir() {
  const char* d = std::getenv("GRAPHSTORE_FUZZ_SEEDS");
  return d != nullptr ? d : "";
}

}  // namespace graphstore::fuzz

#endif  // GRAPHSTORE_TESTS_FUZZ_FUZZ_UTIL_H_
