// The .npy reader: any bytes as a header, and as a whole file mapped and checked against the
// shapes the partition loader asks for. It must answer a status, never crash or over-read.

#include <dirent.h>

#include <cstdint>
#include <string>

#include "server/graph/npy.h"
#include "tests/fuzz/fuzz_util.h"

using graphstore::MappedNpy;
using graphstore::NpyDtype;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fz = graphstore::fuzz;
  const std::string seeds = fz::SeedsDir();
  if (seeds.empty()) return 0;
  // Every array the generator wrote.
  const std::string nodes = fz::SeedDataset() + "/nodes/node";
  int n = 0;
  if (DIR* d = opendir(nodes.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 4 && name.substr(name.size() - 4) == ".npy") {
        fz::WriteFile(seeds + "/" + std::to_string(n++), fz::ReadFile(nodes + "/" + name));
      }
    }
    closedir(d);
  }
  std::exit(n > 0 ? 0 : 1);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* bytes = reinterpret_cast<const char*>(data);
  (void)graphstore::ParseNpyHeader(bytes, size, "fuzz.npy");
  static const std::string path = graphstore::fuzz::ScratchDir() + "/input.npy";
  if (!graphstore::fuzz::WriteFile(path, std::string(bytes, size))) return 0;
  auto npy = MappedNpy::Open(path);
  if (!npy.ok()) return 0;
  // What the loader does next: check the shape, then read every element.
  (void)npy->Expect(NpyDtype::kInt64, {-1});
  (void)npy->Expect(NpyDtype::kFloat32, {-1, 4});
  const auto* raw = static_cast<const unsigned char*>(npy->raw());
  const size_t n = static_cast<size_t>(npy->num_elements()) * graphstore::DtypeSize(npy->dtype());
  unsigned sum = 0;
  for (size_t i = 0; i < n; ++i) sum += raw[i];
  return static_cast<int>(sum & 0);
}
