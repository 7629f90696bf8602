// What a node's owner and an owned node's row cost through the book in memory against the book
// files' int32 owner and int64 row per node that a server read before, the way the draws and
// gathers read them, each prefetched some ids ahead: random owned ids (the owner checked, then
// the row taken), and random ids of any owner (the owner alone, as a draw asks of every node it
// meets). Two books of the same random partition: the stored one (NodeBook::FromOwners: up to
// 128 partitions a cache line per 67 to 120 ids, their owners and a count; beyond, an owner array
// and a search among the partition's own ids in the node's block) and the dealt one
// (NodeBook::Dealt: owners computed from the deal's key, rows by blocks). At the default 100M
// nodes the files' arrays (1.2 GB) lie well past the caches; the stored book (50 to 200 MB) may
// fit a large last-level cache, as it then does on a server. Prints ns a lookup of each, the
// ratios to the files, and each book's bytes for the whole graph and for the nodes owned here.
//
//   bazel build -c opt //bench:node_book_bench && bazel-bin/bench/node_book_bench --nodes=100000000 --partitions=200

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "common/flags.h"
#include "server/graph/node_book.h"

namespace {

template <typename Row, typename Prefetch>
double NsPerLookup(const std::vector<int64_t>& ids, int rounds, Row row, Prefetch prefetch, int64_t* sink) {
  constexpr size_t kAhead = 16;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t sum = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i + kAhead < ids.size()) prefetch(ids[i + kAhead]);
      sum += row(ids[i]);
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / static_cast<double>(ids.size()));
    *sink += sum;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  graphstore::Flags flags;
  flags.Define("nodes", "100000000", "nodes of the graph");
  flags.Define("partitions", "4", "partitions; the book is partition 0's");
  flags.Define("lookups", "4000000", "random owned ids looked up a round");
  flags.Define("rounds", "5", "rounds, best taken");
  if (auto exit = flags.ParseCommandLine(argc, argv, "node_book_bench", "Owned rows: the book in memory against the row file.")) {
    return *exit;
  }
  auto nodes = flags.GetInt("nodes");
  auto partitions = flags.GetInt("partitions");
  auto lookups = flags.GetInt("lookups");
  auto rounds_flag = flags.GetInt("rounds");
  if (!nodes.ok() || !partitions.ok() || !lookups.ok() || !rounds_flag.ok() || *nodes < 1 || *partitions < 2 ||
      *lookups < 1 || *rounds_flag < 1) {
    std::fprintf(stderr, "node_book_bench: --nodes, --lookups and --rounds must be >= 1, --partitions >= 2\n");
    return 2;
  }
  const int64_t n = *nodes;
  const int parts = static_cast<int>(*partitions);
  const graphstore::OwnerDeal deal(n, parts, graphstore::OwnerDeal::TypeKey(7, 0));
  std::vector<int32_t> owners(static_cast<size_t>(n));
  std::vector<int64_t> rows(static_cast<size_t>(n), -1);  // the .local.npy a server read before
  std::vector<int64_t> owned;
  for (int64_t g = 0; g < n; ++g) {
    owners[static_cast<size_t>(g)] = deal.Owner(g);
    if (owners[static_cast<size_t>(g)] == 0) {
      rows[static_cast<size_t>(g)] = static_cast<int64_t>(owned.size());
      owned.push_back(g);
    }
  }
  const graphstore::NodeBook stored = graphstore::NodeBook::FromOwners(owners.data(), n, parts, 0);
  const graphstore::NodeBook dealt = graphstore::NodeBook::Dealt(deal, 0);
  std::mt19937_64 rng(7);
  std::vector<int64_t> ids(static_cast<size_t>(*lookups)), any(static_cast<size_t>(*lookups));
  for (auto& id : ids) id = owned[rng() % owned.size()];
  for (auto& id : any) id = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  const int rounds = static_cast<int>(*rounds_flag);
  int64_t sink = 0;
  auto file_prefetch = [&](int64_t g) {
    __builtin_prefetch(owners.data() + g);
    __builtin_prefetch(rows.data() + g);
  };
  // As the gathers and draws read them: the owner first, then the row of an owned node.
  const double file = NsPerLookup(
      ids, rounds, [&](int64_t g) { return owners[static_cast<size_t>(g)] == 0 ? rows[static_cast<size_t>(g)] : -1; },
      file_prefetch, &sink);
  const double file_owner = NsPerLookup(any, rounds, [&](int64_t g) { return owners[static_cast<size_t>(g)]; },
                                        file_prefetch, &sink);
  std::printf("node_book_bench: %lld nodes, %d partitions, %zu random ids a round, best of %d\n",
              static_cast<long long>(n), parts, ids.size(), rounds);
  std::printf("  book files (int32 owner, int64 row per node, the baseline): %.1f ns an owned row, %.1f ns an owner, 12 bytes a node\n",
              file, file_owner);
  for (const auto* book : {&stored, &dealt}) {
    const char* what = book == &stored ? "stored book"
                       : book->dealt() ? "dealt book (owners computed)"
                                       : "dealt book (below 8 partitions: the deal's owners in lines)";
    const double row = NsPerLookup(
        ids, rounds, [&](int64_t g) { return book->Owner(g) == 0 ? book->Row(g) : -1; },
        [&](int64_t g) { book->Prefetch(g); }, &sink);
    const double owner = NsPerLookup(any, rounds, [&](int64_t g) { return book->Owner(g); },
                                     [&](int64_t g) { book->Prefetch(g); }, &sink);
    std::printf("  %s: %.1f ns an owned row (%.2f of the files'), %.1f ns an owner (%.2f), %.3f bytes a node of the graph and %.2f a node owned here\n",
                what, row, row / file, owner, owner / file_owner,
                static_cast<double>(book->bytes()) / static_cast<double>(n),
                static_cast<double>(book->own_bytes()) / static_cast<double>(owned.size()));
  }
  std::printf("  (checksum %lld)\n", static_cast<long long>(sink & 1));
  return 0;
}
