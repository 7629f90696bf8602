// The C++ half of bench/python_bench.py: the C++ Loader's loop over a running server, timed
// the same way as the Python loop (the first batch is warm-up; epochs follow each other until
// --seconds have passed). Prints "batches/s X". With --fleet_go, a C++ trainer host of
// bench/fleet_bench.py: rank / world_size of the global batches, one JSON line of what arrived.
//
//   loader_bench --servers=127.0.0.1:PORT --batch_size=1024 --fanouts=15,10,5 --shared_memory=false

#include "client/loader.h"  // LibTorch first (see loader.h)

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "common/flags.h"

namespace graphstore {
namespace {

// The bytes of a batch's own tensors (what bench/fleet_bench.py counts for a Python trainer).
int64_t TensorBytes(const client::Batch& b) {
  int64_t n = 0;
  for (const at::Tensor* t : {&b.x, &b.y, &b.edge_index, &b.n_id}) {
    if (t->defined()) n += static_cast<int64_t>(t->numel()) * static_cast<int64_t>(t->element_size());
  }
  return n;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A trainer host of bench/fleet_bench.py: epochs until `end` (Unix seconds), counting what
// arrives from `start` on; one JSON line.
void Fleet(client::Loader& loader, double start, double end) {
  int64_t seeds = 0, batches = 0, payload = 0;
  double cpu0 = -1;
  for (int64_t epoch = 0; UnixNow() < end; ++epoch) {
    loader.StartEpoch(epoch);
    while (auto b = loader.Next()) {
      const double now = UnixNow();
      if (now >= end) break;
      if (now < start) continue;
      if (cpu0 < 0) cpu0 = CpuSeconds();
      seeds += b->batch_size;
      ++batches;
      payload += TensorBytes(*b);
    }
  }
  std::printf("{\"seeds\": %lld, \"batches\": %lld, \"cpu\": %.3f, \"bytes\": %lld, \"retries\": 0}\n",
              static_cast<long long>(seeds), static_cast<long long>(batches), CpuSeconds() - std::max(cpu0, 0.0),
              static_cast<long long>(payload));
}

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("servers", "", "host:port of every server");
  flags.Define("batch_size", "1024", "seeds per batch");
  flags.Define("fanouts", "15,10,5", "neighbours per hop");
  flags.Define("shared_memory", "true", "take batches through shared memory when the server offers it");
  flags.Define("seconds", "10", "time to measure");
  flags.Define("backend_key", "loader_bench", "backend to create or join");
  flags.Define("rank", "0", "this trainer's share of the global batches");
  flags.Define("world_size", "1", "trainers sharing them");
  flags.Define("feature_encoding", "", "the features' encoding on the wire");
  flags.Define("fleet_go", "",
               "bench/fleet_bench.py: once registered create GO.ready.RANK, wait for GO ('start end', Unix "
               "seconds), count what arrives between them and print one JSON line");
  if (auto exit = flags.ParseCommandLine(argc, argv, "loader_bench", "Times the C++ Loader's loop.")) return *exit;
  client::LoaderOptions o;
  o.servers = SplitList(flags.Get("servers"), ',');
  o.config.set_batch_size(static_cast<int>(*flags.GetInt("batch_size")));
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) o.config.add_num_neighbors(std::stoi(f));
  o.config.set_shuffle(true);
  o.config.set_with_node_features(true);
  o.config.set_with_labels(true);
  o.shared_memory = *flags.GetBool("shared_memory");
  o.backend_key = flags.Get("backend_key");
  o.split = "";
  o.rank = static_cast<int>(*flags.GetInt("rank"));
  o.world_size = static_cast<int>(*flags.GetInt("world_size"));
  if (!flags.Get("fleet_go").empty()) o.deadline = std::chrono::seconds(180);  // see fleet_bench.py
  if (!flags.Get("feature_encoding").empty()) {
    auto encoding = client::ParseFeatureEncoding(flags.Get("feature_encoding"));
    if (!encoding.ok()) {
      std::fprintf(stderr, "loader_bench: %s\n", std::string(encoding.status().message()).c_str());
      return 1;
    }
    o.feature_encoding = *encoding;
  }
  const double seconds = *flags.GetDouble("seconds");
  try {
    client::Loader loader(o);
    if (!flags.Get("fleet_go").empty()) {
      const std::string go = flags.Get("fleet_go");
      std::ofstream(go + ".ready." + std::to_string(o.rank)).flush();
      double start = 0, end = 0;
      while (!(std::ifstream(go) >> start >> end)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      Fleet(loader, start, end);
      return 0;
    }
    using Clock = std::chrono::steady_clock;
    Clock::time_point start;
    int64_t batches = -1;  // the first batch is warm-up
    double elapsed = 0;
    for (int64_t epoch = 0; elapsed < seconds; ++epoch) {
      loader.StartEpoch(epoch);
      while (auto b = loader.Next()) {
        if (batches < 0) start = Clock::now();
        ++batches;
        elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (elapsed >= seconds) break;
      }
    }
    std::printf("batches/s %.3f\n", batches / elapsed);
  } catch (const client::Error& e) {
    std::fprintf(stderr, "loader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
