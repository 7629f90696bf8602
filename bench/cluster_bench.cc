// Throughput of a 2-partition cluster against one server holding the whole graph, on the same
// machine and graph, in the same run; and of global batches (the default: batch b formed over
// the whole cluster's seeds) against each server batching only the seeds it owns.
//
// The graph is generated once and written three ways: one partition, two partitions assigned
// by METIS, and two assigned at random. For each, the servers run in this process on loopback
// (real gRPC, cross-partition hops and feature fetches between the servers), with the same
// total number of sampling workers, and a Loader -- the trainer's iterator -- reads every
// batch of several epochs of the training split. Printed per setup: seeds/s and batches/s,
// the ratio to the single server, the edge cut of the assignment, and the calls and bytes
// that crossed between the servers per batch (from the servers' own counters), with the
// servers' cache of peers' node data and neighbour lists on (the default), keeping node data
// only (--no_list_setups) and off (--no_cache_setups); also the bytes the trainer received per
// batch, the peer caches' hit rates (rows, lists) and the rows of other partitions' nodes the
// servers sent the trainer. Global setups take those rows from their owners (the Loader's
// default, rows_from_owners); --server_rows_setups adds them with every row through the server
// that assembles the batch. --peer_cache_mb bounds every cache of other partitions' data: the
// default holds the whole other partition, 4 about a tenth of one partition's node data (the
// regime of graphs larger than any cache); --four_partitions adds 4-partition setups;
// --cache_curve runs the global METIS setups again at budgets that are shares of the other
// partitions' data. The first epochs are a warm-up and not
// measured (--warmup_epochs): with the cache on, the first is the epoch that fills it, and the
// ones after it still grow the channels' pools of shared-memory files (a server whose batches
// wait in the trainer's order window for another's keeps more files in flight once sampling runs
// at full speed); a trainer meets those costs once, in its first epochs. The first epoch after
// the cache-filling one is also timed on its own and printed apart. With --owner_parts it also
// prices the design not built, per-owner parts merged on the trainer (see PartMerger).
//
//   bazel-bin/bench/cluster_bench

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "client/loader.h"  // LibTorch first (see loader.h)

#include "absl/strings/str_cat.h"
#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_format.h"
#include "bench/bench_graphs.h"
#include "bench/process_usage.h"
#include "client/client.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "server/server.h"
#include "common/flags.h"
#include "server/util/log.h"
#include "tools/generator.h"
#include "tools/metis_partition.h"

namespace graphstore {
namespace {

using Clock = std::chrono::steady_clock;

struct Setup {
  std::string name;
  std::string dir;
  int num_partitions = 1;
  PartitionReport report;
  // Peer node-data cache of each server (ServerOptions::peer_cache_bytes).
  int64_t cache_bytes = 0;
  // The Loader's batches: over the whole cluster's input (the default), or each server's own.
  bool global_batches = true;
  // The setup a global one is compared with (its owner-only twin), or -1.
  int compare_with = -1;
  // The Loader's transport, order and read-ahead (--shared_memory, --ordered, --prefetch).
  bool shared_memory = true;
  bool ordered = true;
  int prefetch = client::LoaderOptions().prefetch;
  // Owner parts: each server batches its own seeds, B / num_partitions a batch, and the trainer
  // merges one batch of each server into one (see PartMerger).
  bool owner_parts = false;
  // Whether the servers' peer cache keeps neighbour lists (CoreOptions::peer_cache_lists).
  bool lists = true;
  // The Loader's LoaderOptions::rows_from_owners: rows of other partitions' nodes come to the
  // trainer from their owners (else through the server that assembles the batch).
  bool rows_from_owners = true;
};

struct Result {
  double seeds_per_s = 0;
  double batches_per_s = 0;
  double nodes_per_batch = 0;
  double cpu_ms_per_batch = 0;  // of the whole process: servers, peers and trainer
  double faults_per_batch = 0;  // minor page faults of the whole process
  double sampled_per_batch = 0;  // batches the servers sampled per batch delivered
  double calls_per_batch = 0;
  double bytes_per_batch = 0;
  // Bytes of the batches the trainer received (their tensors), per batch, and the servers' peer
  // caches' hit rate (of lookups of other partitions' node data), while measuring.
  double trainer_bytes_per_batch = 0;
  double cache_hit_rate = 0;
  double list_hit_rate = 0;  // of lookups of other partitions' neighbour lists
  // Rows and labels of other partitions' nodes the servers sent the trainer, per batch.
  double other_rows_per_batch = 0;
  // The servers' shared-memory files made while measuring (grown pools), in all.
  int64_t files_made = 0;
  // Seeds/s of epoch 1 alone, the first after the one that fills the peer cache (0: not timed).
  double epoch1_seeds_per_s = 0;
  // Owner parts only: the parts' nodes before merging, and the trainer's merge time.
  double part_nodes_per_batch = 0;
  double merge_ms_per_batch = 0;
};

// Peer calls and bytes the servers made so far, the batches they sampled and the shared-memory
// files their channels' pools hold.
struct Traffic {
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t sampled = 0;
  int64_t files = 0;
  int64_t other_rows = 0;  // rows and labels of other partitions' nodes the servers sent trainers
};
Traffic PeerTraffic(const std::vector<std::string>& addresses) {
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t sampled = 0;
  int64_t files = 0;
  int64_t other_rows = 0;
  for (const auto& a : addresses) {
    client::ClientOptions o;
    o.address = a;
    auto c = client::Client::Connect(o);
    if (!c.ok()) continue;
    auto s = (*c)->GetServerStats();
    if (!s.ok()) continue;
    for (const auto& p : s->peers()) {
      calls += p.calls();
      bytes += p.bytes_sent() + p.bytes_received();
    }
    for (const auto& b : s->backends()) {
      sampled += b.total_batches_sampled();
      for (const auto& c : b.channels()) {
        files += c.pooled_buffers();
        other_rows += c.other_partitions_rows_sent();
      }
    }
  }
  return {calls, bytes, sampled, files, other_rows};
}

// The trainer's half of a design not built, to price it: each owner samples its own seeds'
// share of global batch b, and the trainer merges the parts into one batch -- node ids kept
// once (a dense map over the graph's ids, as the samplers use), local ids re-based, every
// feature row and label copied once more into the merged arrays (reused from batch to batch),
// and a node's incoming edges taken from the one part that drew the most for it (with draws
// that are prefix-consistent in the fanout, the others' are a subset). The parts here are
// owner-only batches of B / N seeds, one from each server: the makeup such parts would have
// (each server's share of a global batch is a random draw of its seeds).
class PartMerger {
 public:
  explicit PartMerger(int64_t num_nodes) : merged_of_(num_nodes, -1) {}

  // Merges one batch of each server; returns the merged batch's node count.
  int64_t Merge(const std::vector<client::Batch>& parts) {
    const auto t0 = Clock::now();
    ids_.clear();
    labels_.clear();
    locals_.resize(parts.size());
    for (size_t p = 0; p < parts.size(); ++p) AddNodes(parts[p], &locals_[p]);
    const int64_t n = static_cast<int64_t>(ids_.size());
    // The part that drew the most edges into each node, and the merged edges from it alone.
    best_count_.assign(n, 0);
    best_part_.assign(n, -1);
    count_.resize(n);
    for (size_t p = 0; p < parts.size(); ++p) {
      std::fill(count_.begin(), count_.end(), 0);
      const int64_t e = parts[p].edge_index.size(1);
      const int64_t* dst = parts[p].edge_index.data_ptr<int64_t>() + e;
      for (int64_t k = 0; k < e; ++k) ++count_[locals_[p][dst[k]]];
      for (int64_t i = 0; i < n; ++i) {
        if (count_[i] > best_count_[i]) best_count_[i] = count_[i], best_part_[i] = static_cast<int32_t>(p);
      }
    }
    src_.clear();
    dst_.clear();
    for (size_t p = 0; p < parts.size(); ++p) {
      const int64_t e = parts[p].edge_index.size(1);
      const int64_t* src = parts[p].edge_index.data_ptr<int64_t>();
      for (int64_t k = 0; k < e; ++k) {
        const int32_t d = locals_[p][src[e + k]];
        if (best_part_[d] != static_cast<int32_t>(p)) continue;
        src_.push_back(locals_[p][src[k]]);
        dst_.push_back(d);
      }
    }
    for (int64_t id : ids_) merged_of_[id] = -1;
    for (const client::Batch& p : parts) part_nodes_ += p.n_id.numel();
    seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    return n;
  }

  // Nodes of the parts merged so far (before dropping duplicates), and the time merging took.
  int64_t part_nodes() const { return part_nodes_; }
  double seconds() const { return seconds_; }

 private:
  // Gives the part's new nodes merged ids, copying their rows and labels; `local` maps the
  // part's local ids to merged ones.
  void AddNodes(const client::Batch& part, std::vector<int32_t>* local) {
    const int64_t* n_id = part.n_id.data_ptr<int64_t>();
    const int64_t n = part.n_id.numel();
    const bool rows = part.x.defined() && n > 0;
    const char* x = rows ? static_cast<const char*>(part.x.data_ptr()) : nullptr;
    const int64_t* y = part.y.defined() ? part.y.data_ptr<int64_t>() : nullptr;
    const size_t row_bytes = rows ? part.x.nbytes() / n : 0;
    local->resize(n);
    for (int64_t i = 0; i < n; ++i) {
      int32_t& m = merged_of_[n_id[i]];
      if (m < 0) {
        m = static_cast<int32_t>(ids_.size());
        ids_.push_back(n_id[i]);
        if (rows) {
          if (x_.size() < ids_.size() * row_bytes) x_.resize(2 * ids_.size() * row_bytes);
          std::memcpy(x_.data() + m * row_bytes, x + i * row_bytes, row_bytes);
        }
        if (y != nullptr) labels_.push_back(y[i]);
      }
      (*local)[i] = m;
    }
  }

  std::vector<int32_t> merged_of_;  // global id -> merged local id, -1 between merges
  std::vector<std::vector<int32_t>> locals_;
  std::vector<int32_t> count_, best_count_, best_part_;
  std::vector<int64_t> ids_, labels_, src_, dst_;
  std::vector<char> x_;
  int64_t part_nodes_ = 0;
  double seconds_ = 0;
};

// Seeds, batches and nodes the trainer has read.
struct Counts {
  int64_t seeds = 0;
  int64_t batches = 0;
  int64_t nodes = 0;
  int64_t bytes = 0;  // of the batches' tensors as the trainer holds them, whatever the transport
};

int64_t BatchBytes(const client::Batch& b) {
  int64_t n = 0;
  for (const torch::Tensor* t : {&b.n_id, &b.x, &b.y, &b.edge_index, &b.e_id}) {
    if (t->defined()) n += static_cast<int64_t>(t->nbytes());
  }
  return n;
}

// Reads one epoch as the trainer sees it: the Loader's batches, or with owner parts batches
// merged from one of each server (the epoch's last parts merged with what is left).
void ReadEpoch(const Setup& setup, int64_t epoch, client::Loader* loader, PartMerger* merger, Counts* counts) {
  loader->StartEpoch(epoch);
  std::vector<std::deque<client::Batch>> waiting(setup.num_partitions);
  auto merge = [&](bool all) {
    std::vector<client::Batch> parts;
    for (auto& q : waiting) {
      if (q.empty()) continue;
      parts.push_back(std::move(q.front()));
      q.pop_front();
    }
    if (parts.empty() || (!all && static_cast<int>(parts.size()) < setup.num_partitions)) return false;
    for (const auto& p : parts) counts->seeds += p.batch_size;
    counts->nodes += merger->Merge(parts);
    ++counts->batches;
    return true;
  };
  while (auto b = loader->Next()) {
    counts->bytes += BatchBytes(*b);
    if (!setup.owner_parts) {
      counts->seeds += b->batch_size;
      counts->nodes += b->n_id.numel();
      ++counts->batches;
      continue;
    }
    waiting[b->server].push_back(*std::move(b));
    if (std::all_of(waiting.begin(), waiting.end(), [](const auto& q) { return !q.empty(); })) merge(false);
  }
  while (merge(true)) {
  }
}

// The trainer's options for `setup` on the servers at `addresses`.
client::LoaderOptions LoaderOptionsFor(const Setup& setup, const v1::SamplingConfig& config,
                                       const std::vector<std::string>& addresses) {
  client::LoaderOptions lo;
  lo.servers = addresses;
  lo.config = config;
  lo.backend_key = "bench";
  lo.global_batches = setup.global_batches && !setup.owner_parts;
  lo.shared_memory = setup.shared_memory;
  lo.ordered = setup.ordered;
  lo.prefetch = setup.prefetch;
  lo.rows_from_owners = setup.rows_from_owners;
  if (setup.owner_parts) lo.config.set_batch_size(std::max(1, config.batch_size() / setup.num_partitions));
  return lo;
}

// The servers' peer-cache lookups so far, summed.
Core::PeerCacheLookups PeerCacheLookupsOf(const std::vector<std::unique_ptr<GraphStoreServer>>& servers) {
  Core::PeerCacheLookups all;
  for (const auto& server : servers) {
    const Core::PeerCacheLookups l = server->core().peer_cache_lookups();
    all.hits += l.hits;
    all.misses += l.misses;
    all.list_hits += l.list_hits;
    all.list_misses += l.list_misses;
  }
  return all;
}

absl::StatusOr<Result> Run(const Setup& setup, const v1::SamplingConfig& config, int total_workers, int warmup,
                           int epochs, int64_t num_nodes) {
  std::vector<ServerOptions> options(setup.num_partitions);
  for (int k = 0; k < setup.num_partitions; ++k) {
    ServerOptions& o = options[k];
    o.partition_dir = setup.num_partitions == 1 ? setup.dir : absl::StrCat(setup.dir, "/part-", k);
    o.core.default_num_workers = std::max(1, total_workers / setup.num_partitions);
    o.core.state_log_interval_s = 0;
    o.core.peer_cache_bytes = setup.cache_bytes;
    o.core.peer_cache_lists = setup.lists;
  }
  auto servers = StartLocalCluster(options);
  if (!servers.ok()) return servers.status();
  std::vector<std::string> addresses;
  for (const auto& s : *servers) addresses.push_back(s->address());

  client::Loader loader(LoaderOptionsFor(setup, config, addresses));
  PartMerger merger(setup.owner_parts ? num_nodes : 0);
  // Page cache, connections, the peer cache, first allocations; epoch 1 timed on its own.
  Counts warm_up;
  double epoch1_seeds_per_s = 0;
  for (int e = 0; e < warmup; ++e) {
    const auto start = Clock::now();
    const int64_t seeds = warm_up.seeds;
    ReadEpoch(setup, e, &loader, &merger, &warm_up);
    if (e == 1) {
      epoch1_seeds_per_s = (warm_up.seeds - seeds) / std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  auto cache_lookups = [&] { return PeerCacheLookupsOf(*servers); };
  const auto lookups0 = cache_lookups();
  const auto before = PeerTraffic(addresses);
  const int64_t part_nodes0 = merger.part_nodes();
  const double merge0 = merger.seconds();
  const double cpu0 = ProcessCpuSeconds();
  const int64_t faults0 = MinorPageFaults();
  const auto t0 = Clock::now();
  Counts c;
  for (int e = warmup; e < warmup + epochs; ++e) ReadEpoch(setup, e, &loader, &merger, &c);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = ProcessCpuSeconds() - cpu0;
  const int64_t faults = MinorPageFaults() - faults0;
  const auto after = PeerTraffic(addresses);
  const auto lookups = cache_lookups();
  loader.Close();
  Result r;
  r.seeds_per_s = c.seeds / s;
  r.batches_per_s = c.batches / s;
  r.nodes_per_batch = static_cast<double>(c.nodes) / c.batches;
  r.cpu_ms_per_batch = 1e3 * cpu / c.batches;
  r.faults_per_batch = static_cast<double>(faults) / c.batches;
  r.calls_per_batch = static_cast<double>(after.calls - before.calls) / c.batches;
  r.bytes_per_batch = static_cast<double>(after.bytes - before.bytes) / c.batches;
  r.trainer_bytes_per_batch = static_cast<double>(c.bytes) / c.batches;
  auto rate = [](int64_t hits, int64_t misses) {
    return hits + misses > 0 ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
  };
  r.cache_hit_rate = rate(lookups.hits - lookups0.hits, lookups.misses - lookups0.misses);
  r.list_hit_rate = rate(lookups.list_hits - lookups0.list_hits, lookups.list_misses - lookups0.list_misses);
  r.sampled_per_batch = static_cast<double>(after.sampled - before.sampled) / c.batches;
  r.files_made = after.files - before.files;
  r.other_rows_per_batch = static_cast<double>(after.other_rows - before.other_rows) / c.batches;
  r.epoch1_seeds_per_s = epoch1_seeds_per_s;
  r.part_nodes_per_batch = static_cast<double>(merger.part_nodes() - part_nodes0) / c.batches;
  r.merge_ms_per_batch = 1e3 * (merger.seconds() - merge0) / c.batches;
  return r;
}

// Writes each setup's partitions (kept in the cache between runs), records its cut, and drops
// them from the page cache.
absl::Status PrepareSetups(const GraphData& graph, uint64_t seed, const std::string& base, std::vector<Setup>* setups) {
  for (auto& s : *setups) {
    const bool metis = s.dir.find("/metis") != std::string::npos;
    Assignment a;
    if (s.num_partitions == 1) {
      a = RandomAssignment(graph, 1, seed);
    } else if (metis) {
      auto m = MetisAssignment(graph, s.num_partitions, seed);
      if (!m.ok()) return m.status();
      a = *std::move(m);
    } else {
      a = RandomAssignment(graph, s.num_partitions, seed);
    }
    s.report = EvaluateAssignment(graph, a, s.num_partitions, true);
    const std::string method = s.num_partitions == 1 ? "single" : (metis ? "metis" : "random");
    if (auto st = WriteClusterBenchDataset(graph, a, method, s.num_partitions, s.dir, seed); !st.ok()) return st;
    EvictFromPageCache(s.dir);  // the servers read it as servers started cold do
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "cluster_bench: %s\n", s.ToString().c_str());
  return 1;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The global METIS setups again with every peer cache at each of `percents` of the other
// partitions' data one server could cache (their rows, labels and neighbour lists), one round
// each: seeds/s against the single server's median, CPU and crossing bytes per batch, and the
// caches' hit rates.
absl::Status PrintCacheCurve(const std::vector<Setup>& setups, const std::vector<std::vector<Result>>& results,
                             const std::vector<double>& percents, const v1::SamplingConfig& config, int workers,
                             int warmup, int epochs, int64_t num_nodes, int feature_dim) {
  if (percents.empty() || results[0].empty()) return absl::OkStatus();
  std::vector<double> single;
  for (const Result& r : results[0]) single.push_back(r.seeds_per_s);
  std::printf("\npeer caches against the other partitions' data one server could cache (rows, labels, lists):\n");
  std::printf("%-32s %8s %9s %10s %7s %9s %14s %9s %10s\n", "setup", "budget", "MiB", "seeds/s", "ratio",
              "CPU ms/b", "crossing/batch", "rows hit", "lists hit");
  for (const Setup& base : setups) {
    // The global setups on METIS partitions, lists kept.
    if (!base.global_batches || base.owner_parts || !base.lists || base.dir.find("/metis") == std::string::npos) {
      continue;
    }
    const double remote = static_cast<double>(num_nodes) * (base.num_partitions - 1) / base.num_partitions;
    const double remote_edges = static_cast<double>(base.report.num_edges) * (base.num_partitions - 1) /
                                base.num_partitions;
    const double data = remote * (4.0 * feature_dim + 8 + 8) + remote_edges * 8;
    for (double percent : percents) {
      Setup s = base;
      s.cache_bytes = std::max<int64_t>(1, static_cast<int64_t>(data * percent / 100));
      auto r = Run(s, config, workers, warmup, epochs, num_nodes);
      if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(s.name, ": ", r.status().message()));
      std::printf("%-32s %7.0f%% %9.1f %10.0f %7.2f %9.1f %11.2f MB %8.1f%% %9.1f%%\n", s.name.c_str(), percent,
                  static_cast<double>(s.cache_bytes) / (1 << 20), r->seeds_per_s, r->seeds_per_s / Median(single),
                  r->cpu_ms_per_batch, r->bytes_per_batch / 1e6, 100 * r->cache_hit_rate, 100 * r->list_hit_rate);
    }
  }
  return absl::OkStatus();
}

// Each setup's medians over the rounds, and its ratios round by round to the single server and,
// for a global setup, to the owner-only batches on the same partitions.
void PrintResults(const std::vector<Setup>& setups, const std::vector<std::vector<Result>>& results) {
  // Ratios of one setup's rate to another's, round by round (of epoch 1 alone, or measured).
  auto ratios = [&](size_t i, size_t j, bool epoch1 = false) {
    std::vector<double> out;
    for (size_t r = 0; r < std::min(results[i].size(), results[j].size()); ++r) {
      const Result& a = results[i][r];
      const Result& b = results[j][r];
      if (epoch1 && b.epoch1_seeds_per_s == 0) continue;
      out.push_back(epoch1 ? a.epoch1_seeds_per_s / b.epoch1_seeds_per_s : a.seeds_per_s / b.seeds_per_s);
    }
    return out;
  };
  auto format = [&](const std::vector<double>& v) {
    if (v.empty()) return std::string();
    return absl::StrFormat("%.2f (%.2f-%.2f)", Median(v), *std::min_element(v.begin(), v.end()),
                           *std::max_element(v.begin(), v.end()));
  };
  for (size_t i = 0; i < setups.size(); ++i) {
    const Setup& s = setups[i];
    if (results[i].empty()) continue;
    std::vector<double> rate, nodes, calls, bytes, cpu, faults, sampled, files, trainer, hit, list_hit, other;
    for (const Result& r : results[i]) {
      other.push_back(r.other_rows_per_batch);
      trainer.push_back(r.trainer_bytes_per_batch);
      hit.push_back(r.cache_hit_rate);
      list_hit.push_back(r.list_hit_rate);
      files.push_back(static_cast<double>(r.files_made));
      sampled.push_back(r.sampled_per_batch);
      rate.push_back(r.seeds_per_s);
      cpu.push_back(r.cpu_ms_per_batch);
      faults.push_back(r.faults_per_batch);
      nodes.push_back(r.nodes_per_batch);
      calls.push_back(r.calls_per_batch);
      bytes.push_back(r.bytes_per_batch);
    }
    const std::string vs = s.compare_with >= 0 ? format(ratios(i, s.compare_with)) : "";
    std::printf("%-32s %10.0f %7s %14s %11.0f %9.1f %9.0f %9.2f %8.2f%% %12.1f %11.2f MB %10.0f %11.2f MB %8.1f%% "
                "%9.1f%% %12.0f\n",
                s.name.c_str(), Median(rate), i == 0 ? "1.00" : format(ratios(i, 0)).substr(0, 4).c_str(),
                vs.substr(0, 4).c_str(), Median(nodes), Median(cpu), Median(faults), Median(sampled),
                100 * s.report.cut_fraction(), Median(calls), Median(bytes) / 1e6, Median(files),
                Median(trainer) / 1e6, 100 * Median(hit), 100 * Median(list_hit), Median(other));
  }
  for (size_t i = 0; i < setups.size(); ++i) {
    if (!setups[i].owner_parts || results[i].empty()) continue;
    std::vector<double> part_nodes, merge_ms;
    for (const Result& r : results[i]) {
      part_nodes.push_back(r.part_nodes_per_batch);
      merge_ms.push_back(r.merge_ms_per_batch);
    }
    std::printf("%-24s parts: %.0f nodes a batch before merging; merge %.1f ms a batch\n", setups[i].name.c_str(),
                Median(part_nodes), Median(merge_ms));
  }
  auto print_ratios = [&](const char* title, bool epoch1) {
    std::printf("\n%s (against the single server | global against owner-only):\n", title);
    for (size_t i = 1; i < setups.size(); ++i) {
      if (results[i].empty()) continue;
      std::printf("  %-22s %s | %s\n", setups[i].name.c_str(), format(ratios(i, 0, epoch1)).c_str(),
                  setups[i].compare_with >= 0 ? format(ratios(i, setups[i].compare_with, epoch1)).c_str() : "");
    }
  };
  print_ratios("per-round ratios", false);
  if (!results[0].empty() && results[0].front().epoch1_seeds_per_s > 0) {
    print_ratios("epoch 1 alone, the first after the cache fills", true);
  }
}

// Each setup's least disturbed round: its highest rate and lowest CPU time, and the ratios of
// those rates. On a shared machine a round's figure mixes the setup's own cost with what other
// work took from it; the best of several rounds comes closest to the cost alone.
void PrintBestRounds(const std::vector<Setup>& setups, const std::vector<std::vector<Result>>& results) {
  auto best = [&](size_t i) {
    Result b = results[i].front();
    for (const Result& r : results[i]) {
      b.seeds_per_s = std::max(b.seeds_per_s, r.seeds_per_s);
      b.cpu_ms_per_batch = std::min(b.cpu_ms_per_batch, r.cpu_ms_per_batch);
    }
    return b;
  };
  std::printf("\nbest round of each setup (highest seeds/s, lowest CPU ms/b; ratios of the highest rates):\n");
  for (size_t i = 0; i < setups.size(); ++i) {
    if (results[i].empty()) continue;
    const Result b = best(i);
    std::string vs_single, vs_owner;
    if (i > 0 && !results[0].empty()) vs_single = absl::StrFormat("%.2f", b.seeds_per_s / best(0).seeds_per_s);
    if (const int j = setups[i].compare_with; j >= 0 && !results[j].empty()) {
      vs_owner = absl::StrFormat("%.2f", b.seeds_per_s / best(j).seeds_per_s);
    }
    std::printf("  %-22s %10.0f seeds/s %9.1f CPU ms/b   vs single %4s   vs owner-only %4s\n", setups[i].name.c_str(),
                b.seeds_per_s, b.cpu_ms_per_batch, vs_single.c_str(), vs_owner.c_str());
  }
}

void DefineFlags(Flags* flags) {
  flags->Define("nodes", "200000", "nodes of the generated graph");
  flags->Define("avg_degree", "10", "mean out-degree of the generated graph");
  flags->Define("feature_dim", "100", "float features per node");
  flags->Define("batch_size", "1024", "seeds per batch");
  flags->Define("fanouts", "15,10,5", "fanout per hop");
  flags->Define("workers", "4",
               "sampling workers in total (split between the servers of a cluster, whose workers wait on "
               "their peers part of the time)");
  flags->Define("epochs", "2", "measured epochs per setup and round (after the warm-up epochs)");
  flags->Define("warmup_epochs", "3",
               "epochs read before measuring: the first fills the peer cache, the ones after it finish growing "
               "the channels' shared-memory pools (at least 1; from 2 on, epoch 1 is also printed on its own)");
  flags->Define("rounds", "3", "rounds of every setup; figures are medians over them");
  flags->Define("cache_dir", "/tmp/graphstore-bench", "where the written datasets are kept");
  flags->Define("features", "true", "gather node features and labels into every batch");
  flags->Define("temporal", "false",
                "a graph with node and edge times, sampled temporally (uniform) from each seed's node time, with "
                "each node's time in the batch (with_node_times): on a cluster both come from the nodes' owners");
  flags->Define("no_list_setups", "false",
               "also run the global setups with the peer cache keeping node data only, the owners drawing every "
               "hop of their nodes (--peer_cache_lists=false)");
  flags->Define("peer_cache_mb", std::to_string(CoreOptions().peer_cache_bytes >> 20),
                "every server's cache of other partitions' node data and neighbour lists, MiB (0: off); the "
                "default holds the whole other partition of the default graph, 4 about a tenth of it");
  flags->Define("cache_curve", "",
                "percentages of the other partitions' data (rows, labels, lists) one server could cache, e.g. "
                "5,10,25,100: the global METIS setups run again, one round each, with every peer cache at each");
  flags->Define("server_rows_setups", "false",
                "also run the global setups with every row of a batch assembled by its server (rows of other "
                "partitions' nodes fetched from their owners and sent on: LoaderOptions::rows_from_owners=false)");
  flags->Define("four_partitions", "false", "also the 4-partition METIS and random setups (global batches)");
  flags->Define("no_cache_setups", "false", "also run the 2-partition setups with the peer cache off (owner-only)");
  flags->Define("shared_memory", "true", "the trainer takes batches through shared memory (else the socket)");
  flags->Define("owner_parts", "false",
               "also price per-owner parts merged on the trainer (owner-only batches of batch_size / 2 from each "
               "server, merged in the bench; see PartMerger)");
  flags->Define("ordered", "true", "global batches reach the trainer in batch order (else in arrival order)");
  flags->Define("prefetch", std::to_string(client::LoaderOptions().prefetch),
               "batches the trainer reads ahead per server (LoaderOptions::prefetch); with ordered global batches "
               "also how far one server may run ahead of the others");
  flags->Define("only", "", "run only the setups whose name contains one of these, split by '|' (e.g. under a "
               "profiler, or 'single|METIS, global'); ratios need the "
               "single server and, for a global setup, its owner-only twin");
}

// The setups the flags ask for, on the datasets under `base`.
std::vector<Setup> MakeSetups(const Flags& flags, const std::string& base) {
  const int64_t cache = flags.GetInt("peer_cache_mb").value_or(CoreOptions().peer_cache_bytes >> 20) << 20;
  std::vector<Setup> setups = {
      {"single server", base + "/single", 1, {}, 0},
      {"METIS, owner-only", base + "/metis2", 2, {}, cache, false},
      {"METIS, global", base + "/metis2", 2, {}, cache, true, 1},
      {"random, owner-only", base + "/random2", 2, {}, cache, false},
      {"random, global", base + "/random2", 2, {}, cache, true, 3},
  };
  // A variant of the two global setups, compared with their owner-only twins.
  auto add_global = [&](const std::string& variant, auto edit) {
    for (const auto& [name, dir, twin] : {std::tuple<std::string, std::string, int>{"METIS", "/metis2", 1},
                                          {"random", "/random2", 3}}) {
      Setup g{name + ", " + variant, base + dir, 2, {}, cache, true, twin};
      edit(&g);
      setups.push_back(g);
    }
  };
  if (flags.Get("owner_parts") == "true") add_global("owner parts", [](Setup* g) { g->owner_parts = true; });
  if (flags.Get("no_list_setups") == "true") add_global("global, no lists", [](Setup* g) { g->lists = false; });
  if (flags.Get("server_rows_setups") == "true") {
    add_global("global, rows via server", [](Setup* g) { g->rows_from_owners = false; });
  }
  if (flags.Get("four_partitions") == "true") {
    setups.push_back({"METIS 4, global", base + "/metis4", 4, {}, cache, true});
    setups.push_back({"random 4, global", base + "/random4", 4, {}, cache, true});
  }
  if (flags.Get("no_cache_setups") == "true") {
    setups.push_back({"METIS, no peer cache", base + "/metis2", 2, {}, 0, false});
    setups.push_back({"random, no peer cache", base + "/random2", 2, {}, 0, false});
  }
  for (Setup& s : setups) {
    s.shared_memory = flags.Get("shared_memory") != "false";
    s.ordered = flags.Get("ordered") != "false";
    s.prefetch = static_cast<int>(flags.GetInt("prefetch").value_or(s.prefetch));
  }
  return setups;
}

// --cache_curve's percentages.
absl::StatusOr<std::vector<double>> CurvePercents(const std::string& list) {
  std::vector<double> percents;
  for (const auto& p : SplitList(list, ',')) {
    double percent = 0;
    if (!absl::SimpleAtod(p, &percent) || percent <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--cache_curve: '", p, "' is not a positive percentage"));
    }
    percents.push_back(percent);
  }
  return percents;
}

// Whether --only (alternatives split by '|', empty: all) selects setup `name`.
bool Selected(const std::string& only, const std::string& name) {
  return only.empty() ||
         absl::c_any_of(absl::StrSplit(only, '|'), [&](absl::string_view part) { return absl::StrContains(name, part); });
}

int Main(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "cluster_bench", "Cluster vs single-server throughput.")) {
    return *exit;
  }
  SetLogLevel("warn");
  auto nodes = flags.GetInt("nodes");
  auto degree = flags.GetDouble("avg_degree");
  auto dim = flags.GetInt("feature_dim");
  auto batch = flags.GetInt("batch_size");
  auto workers = flags.GetInt("workers");
  auto epochs = flags.GetInt("epochs");
  auto rounds = flags.GetInt("rounds");
  auto warmup = flags.GetInt("warmup_epochs");
  for (const absl::Status& s : {nodes.status(), degree.status(), dim.status(), batch.status(), workers.status(),
                                epochs.status(), rounds.status(), warmup.status()}) {
    if (!s.ok()) return Fail(s);
  }
  if (*warmup < 1) return Fail(absl::InvalidArgumentError("--warmup_epochs must be at least 1"));
  GeneratorOptions g;
  g.num_nodes = *nodes;
  g.avg_degree = *degree;
  g.feature_dim = static_cast<int>(*dim);
  g.seed = 1;
  const bool temporal = flags.Get("temporal") == "true";
  g.times = temporal;
  auto graph = GenerateGraph(g);
  if (!graph.ok()) return Fail(graph.status());
  const std::string base = ClusterBenchDir(flags.Get("cache_dir"), g);
  std::vector<Setup> setups = MakeSetups(flags, base);
  if (auto s = PrepareSetups(*graph, g.seed, base, &setups); !s.ok()) return Fail(s);

  v1::SamplingConfig config;
  config.set_batch_size(static_cast<int>(*batch));
  for (const auto& f : SplitList(flags.Get("fanouts"), ',')) config.add_num_neighbors(std::stoi(f));
  config.set_shuffle(true);
  const bool features = flags.Get("features") != "false";
  config.set_with_node_features(features);
  config.set_with_labels(features);
  if (temporal) {
    config.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
    config.set_with_node_times(true);
  }
  std::printf("graph: %lld nodes, %lld edges, %d float features; batch %lld, fanouts [%s], %lld workers in total, "
              "%lld epochs of the train split measured after %lld warm-up epochs\n",
              static_cast<long long>(*nodes), static_cast<long long>(setups[0].report.num_edges), g.feature_dim,
              static_cast<long long>(*batch), flags.Get("fanouts").c_str(), static_cast<long long>(*workers),
              static_cast<long long>(*epochs), static_cast<long long>(*warmup));
  std::printf("%lld rounds, each running every setup once; seeds/s and its ratios are medians over the rounds of "
              "each round's figure (ratio: against the single server; vs owner-only: a global setup against the same "
              "partitions with each server batching its own seeds)\n",
              static_cast<long long>(*rounds));
  std::printf("%-32s %10s %7s %14s %11s %9s %9s %9s %9s %12s %14s %10s %14s %9s %10s %12s\n", "setup", "seeds/s",
              "ratio", "vs owner-only", "nodes/batch", "CPU ms/b", "faults/b", "sampled/b", "edge cut", "calls/batch",
              "crossing/batch", "new files", "to trainer/b", "rows hit", "lists hit", "other rows/b");
  const std::string only = flags.Get("only");
  std::vector<std::vector<Result>> results(setups.size());
  for (int64_t round = 0; round < *rounds; ++round) {
    for (size_t i = 0; i < setups.size(); ++i) {
      const Setup& s = setups[i];
      if (!Selected(only, s.name)) continue;
      auto r = Run(s, config, static_cast<int>(*workers), static_cast<int>(*warmup), static_cast<int>(*epochs), *nodes);
      if (!r.ok()) return Fail(absl::Status(r.status().code(), absl::StrCat(s.name, ": ", r.status().message())));
      results[i].push_back(*r);
    }
  }
  PrintResults(setups, results);
  PrintBestRounds(setups, results);
  auto percents = CurvePercents(flags.Get("cache_curve"));
  if (!percents.ok()) return Fail(percents.status());
  if (auto s = PrintCacheCurve(setups, results, *percents, config, static_cast<int>(*workers),
                               static_cast<int>(*warmup), static_cast<int>(*epochs), *nodes, g.feature_dim);
      !s.ok()) {
    return Fail(s);
  }
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Main(argc, argv); }
