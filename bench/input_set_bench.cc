// What a seed's id costs a channel with global batches: the server's shared set of the split (a
// bit a node of the type and a count every 512, IdSet::Select) against the whole input's id
// list a channel kept before (8 bytes a seed, read at random), the way a batch reads them: the
// positions of one batch at random, their ids into a buffer. At the default 100M nodes and a
// tenth of them in the split, the list (80 MB) and the set (14 MB) both lie past the caches.
// Prints ns a seed of both, the bytes of both and the ratios.
//
//   bazel build -c opt //bench:input_set_bench && bazel-bin/bench/input_set_bench --nodes=100000000 --density=0.1

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "common/flags.h"
#include "server/service/channel_input.h"

namespace {

// Best of `rounds` over every batch of `positions`, ns a seed.
double NsPerSeed(const graphstore::ChannelInput& input, const std::vector<int64_t>& positions, size_t batch, int rounds,
                 int64_t* sink) {
  std::vector<int64_t> ids(batch);
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t first = 0; first + batch <= positions.size(); first += batch) {
      input.Ids(positions.data() + first, batch, ids.data());
      *sink += ids[0];
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / static_cast<double>(positions.size() / batch * batch));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  graphstore::Flags flags;
  flags.Define("nodes", "100000000", "nodes of the type");
  flags.Define("density", "0.1", "share of the nodes in the split");
  flags.Define("lookups", "4000000", "random positions looked up a round");
  flags.Define("batch_size", "512", "positions a batch");
  flags.Define("rounds", "5", "rounds, best taken");
  if (auto exit = flags.ParseCommandLine(argc, argv, "input_set_bench", "A split's ids: the shared set against a list.")) {
    return *exit;
  }
  auto nodes = flags.GetInt("nodes");
  auto density = flags.GetDouble("density");
  auto lookups = flags.GetInt("lookups");
  auto batch = flags.GetInt("batch_size");
  auto rounds = flags.GetInt("rounds");
  if (!nodes.ok() || !density.ok() || !lookups.ok() || !batch.ok() || !rounds.ok() || *nodes < 1 || *density <= 0 ||
      *density > 1 || *lookups < 1 || *batch < 1 || *rounds < 1) {
    std::fprintf(stderr, "input_set_bench: --nodes, --lookups, --batch_size and --rounds must be >= 1, --density in (0, 1]\n");
    return 2;
  }
  std::mt19937_64 rng(7);
  std::bernoulli_distribution in(*density);
  std::vector<int64_t> members;
  for (int64_t g = 0; g < *nodes; ++g) {
    if (in(rng)) members.push_back(g);
  }
  if (members.empty()) members.push_back(0);
  auto set = std::make_shared<graphstore::IdSet>(*nodes);
  if (!set->Add(members).ok()) return 1;
  set->Seal();
  const size_t list_bytes = members.size() * sizeof(int64_t);
  const graphstore::ChannelInput listed = graphstore::ChannelInput::Listed(members);
  const graphstore::ChannelInput shared = graphstore::ChannelInput::Members(set);
  std::vector<int64_t> positions(static_cast<size_t>(*lookups));
  for (auto& p : positions) p = static_cast<int64_t>(rng() % members.size());
  int64_t sink = 0;
  const double list_ns = NsPerSeed(listed, positions, static_cast<size_t>(*batch), static_cast<int>(*rounds), &sink);
  const double set_ns = NsPerSeed(shared, positions, static_cast<size_t>(*batch), static_cast<int>(*rounds), &sink);
  std::printf("input_set_bench: %lld nodes, %zu in the split, %zu random positions a round in batches of %lld, best of %lld\n",
              static_cast<long long>(*nodes), members.size(), positions.size(), static_cast<long long>(*batch),
              static_cast<long long>(*rounds));
  std::printf("  shared set: %.1f ns a seed, %.1f MB (%.3f bytes a node of the type), once per server\n", set_ns,
              static_cast<double>(set->ByteSize()) / 1e6, static_cast<double>(set->ByteSize()) / static_cast<double>(*nodes));
  std::printf("  id list (the baseline): %.1f ns a seed, %.1f MB (8 bytes a seed), per channel\n", list_ns,
              static_cast<double>(list_bytes) / 1e6);
  std::printf("  ratio: %.2f of the baseline's time, %.3f of its bytes (checksum %lld)\n", set_ns / list_ns,
              static_cast<double>(set->ByteSize()) / static_cast<double>(list_bytes), static_cast<long long>(sink & 1));
  return 0;
}
