// The partition loader: a generated partition with one of its files changed (bytes
// overwritten, inserted, or the file cut short) must load with every index verified, or be
// refused with a status naming the file, never crash.
//
// Input: byte 0 picks the file, bytes 1-4 the offset (little-endian, modulo the file's size),
// byte 5 the change (0: overwrite, 1: insert, 2: cut at the offset), the rest the new bytes.

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "server/graph/partition.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace fz = graphstore::fuzz;

// Files under `dir`, relative, sorted.
void ListFiles(const std::string& dir, const std::string& rel, std::vector<std::string>* out) {
  DIR* d = opendir((dir + "/" + rel).c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (stat((dir + "/" + path).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      ListFiles(dir, path, out);
    } else {
      out->push_back(path);
    }
  }
  closedir(d);
}

struct Work {
  std::string dir;
  std::vector<std::string> files;
  std::vector<std::string> contents;  // the originals
};

const Work& TheWork() {
  static const Work w = [] {
    Work w;
    const std::string& seed = fz::SeedDataset();
    ListFiles(seed, "", &w.files);
    std::sort(w.files.begin(), w.files.end());
    w.dir = fz::ScratchDir() + "/work";
    for (const std::string& f : w.files) {
      w.contents.push_back(fz::ReadFile(seed + "/" + f));
      std::string parent = w.dir + "/" + f;
      for (size_t p = parent.find('/', w.dir.size() + 1); p != std::string::npos; p = parent.find('/', p + 1)) {
        mkdir(parent.substr(0, p).c_str(), 0700);
      }
      mkdir(w.dir.c_str(), 0700);
      fz::WriteFile(w.dir + "/" + f, w.contents.back());
    }
    return w;
  }();
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const Work& w = TheWork();
  if (w.files.empty()) std::abort();
  const std::string seeds = fz::SeedsDir();
  if (seeds.empty()) return 0;
  for (size_t i = 0; i < w.files.size(); ++i) {
    // Each file untouched, cut in half, and with a byte changed in its middle.
    const auto half = static_cast<uint32_t>(w.contents[i].size() / 2);
    const std::string off(reinterpret_cast<const char*>(&half), 4);
    fz::WriteFile(seeds + "/" + std::to_string(i) + "-same", std::string(1, static_cast<char>(i)) + std::string(4, '\0') + '\0');
    fz::WriteFile(seeds + "/" + std::to_string(i) + "-cut", std::string(1, static_cast<char>(i)) + off + '\2');
    fz::WriteFile(seeds + "/" + std::to_string(i) + "-flip", std::string(1, static_cast<char>(i)) + off + '\0' + '\x7f');
  }
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Work& w = TheWork();
  if (size < 6) return 0;
  const size_t file = data[0] % w.files.size();
  uint32_t offset = 0;
  for (int k = 0; k < 4; ++k) offset |= static_cast<uint32_t>(data[1 + k]) << (8 * k);
  const std::string& original = w.contents[file];
  const size_t at = offset % (original.size() + 1);
  const std::string payload(reinterpret_cast<const char*>(data) + 6, size - 6);
  std::string changed = original;
  switch (data[5] % 3) {
    case 0: changed.replace(at, std::min(payload.size(), original.size() - at), payload); break;
    case 1: changed.insert(at, payload); break;
    default: changed.resize(at); break;
  }
  const std::string path = w.dir + "/" + w.files[file];
  fz::WriteFile(path, changed);
  (void)graphstore::Partition::Load(w.dir);
  fz::WriteFile(path, original);
  return 0;
}
