// The C++ half of bench/python_bench.py: the C++ Loader's loop over a running server, timed
// the same way as the Python loop (the first batch is warm-up; epochs follow each other until
// --seconds have passed). Prints "batches/s X".
//
//   loader_bench --servers=127.0.0.1:PORT --batch_size=1024 --fanouts=15,10,5 --shared_memory=false

#include "client/loader.h"  // LibTorch first (see loader.h)

#include <chrono>
#include <cstdio>

#include "common/flags.h"

namespace graphstore {
namespace {

int Run(int argc, char** argv) {
  Flags flags;
  flags.Define("servers", "", "host:port of every server");
  flags.Define("batch_size", "1024", "seeds per batch");
  flags.Define("fanouts", "15,10,5", "neighbours per hop");
  flags.Define("shared_memory", "true", "take batches through shared memory when the server offers it");
  flags.Define("seconds", "10", "time to measure");
  flags.Define("backend_key", "loader_bench", "backend to create or join");
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
  const double seconds = *flags.GetDouble("seconds");
  try {
    client::Loader loader(o);
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
