// The manifest parser: any bytes as a partition's manifest.json must be read and validated
// into a status, never a crash.

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "server/graph/manifest.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fz = graphstore::fuzz;
  const std::string seeds = fz::SeedsDir();
  if (seeds.empty()) return 0;
  fz::WriteFile(seeds + "/generated", fz::ReadFile(fz::SeedDataset() + "/manifest.json"));
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    const std::string d = graphstore::fuzz::ScratchDir() + "/manifest";
    mkdir(d.c_str(), 0700);
    return d;
  }();
  if (!graphstore::fuzz::WriteFile(dir + "/manifest.json", std::string(reinterpret_cast<const char*>(data), size))) {
    return 0;
  }
  auto manifest = graphstore::ReadManifest(dir);
  if (manifest.ok()) (void)graphstore::ValidateManifest(*manifest, "manifest.json");
  return 0;
}
