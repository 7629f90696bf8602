// graphstore-partition: turns edge lists (+ optional features, labels, splits) into the
// partition directories graphstored serves.

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/dataset/transforms.h"
#include "tools/dataset/writer.h"
#include "common/flags.h"
#include "tools/bounded_partition.h"
#include "tools/graph_input.h"
#include "tools/metis_partition.h"

namespace graphstore {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "graphstore-partition: %s\n", std::string(s.message()).c_str());
  return 2;
}

void DefineFlags(Flags* flags) {
  flags->Define("edges", "",
                "[src__rel__dst=]PATH: a text edge list (\"a b\" per line, # comments) or "
                "SRC.npy,DST.npy; one per edge type",
                true);
  flags->Define("edge_weights", "",
                "[src__rel__dst=]PATH: sampling weight of each edge of that type's --edges file, in its order "
                "(.npy float 1-D, or text: one number per line; finite, >= 0)",
                true);
  flags->Define("edge_times", "",
                "[src__rel__dst=]PATH: time of each edge of that type's --edges file, in its order (.npy int 1-D, "
                "or text: one integer per line), for temporal sampling",
                true);
  flags->Define("node_times", "",
                "[type=]PATH: time of each row (rows as for --labels; every node needs one), for temporal "
                "sampling: a node is reached only from nodes at or after its time",
                true);
  flags->Define("swap_columns", "false", "text edge lists are \"dst src\" (e.g. Cora's cora.cites)");
  flags->Define("node_ids", "", "[type=]PATH: raw id of each feature/label row (else row i is id i)", true);
  flags->Define("features", "", "[type=]PATH.npy: node features [rows, dim], float32 or float64", true);
  flags->Define("labels", "", "[type=]PATH.npy: node labels [rows], int64 or int32", true);
  flags->Define("train_ids", "", "[type=]PATH: raw ids of the training split", true);
  flags->Define("val_ids", "", "[type=]PATH: raw ids of the validation split", true);
  flags->Define("test_ids", "", "[type=]PATH: raw ids of the test split", true);
  flags->Define("split", "0.8,0.1,0.1",
                "train,val,test fractions used when no split files are given (labelled node "
                "types, or every type when none is labelled); \"none\" for no splits");
  flags->Define("split_types", "", "comma-separated node types to split (overrides the default)");
  flags->Define("partitions", "1", "number of partitions");
  flags->Define("method", "random",
                "partitioning method: random (balanced, ignores structure), metis (keeps neighbourhoods together; "
                "holds the graph in memory) or stream (clusters by label propagation, METIS over the clusters: "
                "keeps neighbourhoods together in O(nodes) memory)");
  flags->Define("edge_dir", "out", "\"out\" (CSR by source) or \"in\" (CSR by destination)");
  flags->Define("reverse_edges", "false",
                "also store every edge type's reverse (dst__rev_rel__src), so sampling can follow it both ways");
  flags->Define("seed", "0", "seed of the random assignment and splits");
  flags->Define("name", "graph", "dataset name recorded in the manifest");
  flags->Define("memory_mb", "0",
                "memory the tool may use, in MiB (0: a quarter of the host's); inputs larger than it are "
                "partitioned in passes that spill to --tmp_dir, and METIS is refused when it needs more");
  flags->Define("bounded", "auto",
                "partition in passes over the files: auto (when the input does not fit --memory_mb), always, never");
  flags->Define("tmp_dir", "", "where passes over inputs larger than --memory_mb spill (default: $TMPDIR or /tmp)");
  flags->Define("out", "", "output directory (one partition: DIR itself; N: DIR/part-0..N-1)");
}

// The input files the flags name.
absl::StatusOr<GraphInputSpec> InputSpec(const Flags& flags) {
  auto swap = flags.GetBool("swap_columns");
  if (!swap.ok()) return swap.status();
  GraphInputSpec spec;
  spec.name = flags.Get("name");
  spec.swap_columns = *swap;
  for (const auto& v : flags.GetAll("edges")) spec.edges.push_back(ParseTypedFile(v));
  for (const auto& v : flags.GetAll("node_ids")) spec.node_ids.push_back(ParseTypedFile(v));
  for (const auto& v : flags.GetAll("features")) spec.features.push_back(ParseTypedFile(v));
  for (const auto& v : flags.GetAll("labels")) spec.labels.push_back(ParseTypedFile(v));
  for (const auto& v : flags.GetAll("edge_weights")) spec.edge_weights.push_back(ParseTypedFile(v));
  for (const auto& v : flags.GetAll("edge_times")) spec.edge_times.push_back(ParseTypedFile(v));
  for (const auto& v : flags.GetAll("node_times")) spec.node_times.push_back(ParseTypedFile(v));
  for (const char* split : {"train", "val", "test"}) {
    for (const auto& v : flags.GetAll(absl::StrCat(split, "_ids"))) spec.splits[split].push_back(ParseTypedFile(v));
  }
  return spec;
}

// The input files read into a graph (with reverse edge types when asked).
absl::StatusOr<GraphData> ReadInput(const GraphInputSpec& spec, bool reverse_edges) {
  auto graph = BuildGraph(spec);
  if (!graph.ok()) return graph.status();
  if (reverse_edges) AddReverseEdgeTypes(&*graph);
  return graph;
}

// Splits by --split fractions, unless split files were given or --split=none.
// The fractions --split gives, or none where split files are given or --split=none.
absl::StatusOr<std::optional<SplitFractions>> SplitFractionsOf(const Flags& flags) {
  const bool files = !flags.GetAll("train_ids").empty() || !flags.GetAll("val_ids").empty() ||
                     !flags.GetAll("test_ids").empty();
  if (files || flags.Get("split") == "none") return std::optional<SplitFractions>();
  const auto fr = SplitList(flags.Get("split"), ',');
  if (fr.size() != 3) return absl::InvalidArgumentError("--split needs three fractions: train,val,test");
  double f[3];
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    f[i] = std::strtod(fr[i].c_str(), &end);
    if (*end != '\0') return absl::InvalidArgumentError(absl::StrCat("--split: '", fr[i], "' is not a number"));
  }
  SplitFractions out;
  out.train = f[0];
  out.val = f[1];
  out.test = f[2];
  out.only_types = SplitList(flags.Get("split_types"), ',');
  if (auto s = CheckSplitFractions(out); !s.ok()) return s;
  return std::optional<SplitFractions>(out);
}

void PrintSummary(const GraphData& graph, const Assignment& assignment, const WriteOptions& options,
                  const std::string& out) {
  for (const auto& t : graph.node_types) {
    std::printf("node type %-16s %12lld nodes  features %lld  labels %s\n", t.name.c_str(),
                static_cast<long long>(t.num_nodes), static_cast<long long>(t.feature_dim),
                t.labels.empty() ? "no" : "yes");
  }
  for (const auto& e : graph.edge_types) {
    std::printf("edge type %s__%s__%s %lld edges\n", e.src_type.c_str(), e.relation.c_str(), e.dst_type.c_str(),
                static_cast<long long>(e.src.size()));
  }
  if (options.num_partitions > 1) {
    const PartitionReport report =
        EvaluateAssignment(graph, assignment, options.num_partitions, options.edge_dir != "in");
    std::printf("method %s\n%s", options.method.c_str(), report.ToString().c_str());
  }
  std::printf("wrote %d partition(s) to %s\n", options.num_partitions, out.c_str());
}

// --memory_mb in bytes: the flag, or a quarter of the host's memory.
absl::StatusOr<int64_t> MemoryBudget(const Flags& flags) {
  auto mb = flags.GetInt("memory_mb");
  if (!mb.ok()) return mb.status();
  if (*mb < 0) return absl::InvalidArgumentError("--memory_mb must be >= 0");
  if (*mb > 0) return *mb << 20;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / 4 : int64_t{1} << 30;
}

std::string TmpDir(const Flags& flags) {
  if (!flags.Get("tmp_dir").empty()) return flags.Get("tmp_dir");
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

// Peak resident memory of this process so far, in MiB.
int64_t PeakRssMb() {
  struct rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Partitions in passes over the files, within `memory` bytes.
int RunBounded(const Flags& flags, const GraphInputSpec& spec, const WriteOptions& options, int64_t seed,
               int64_t memory, bool reverse_edges) {
  BoundedOptions bounded;
  bounded.write = options;
  bounded.seed = static_cast<uint64_t>(seed);
  bounded.memory_bytes = memory;
  bounded.tmp_dir = TmpDir(flags);
  bounded.reverse_edges = reverse_edges;
  auto fractions = SplitFractionsOf(flags);
  if (!fractions.ok()) return Fail(fractions.status());
  bounded.split_fractions = *fractions;
  // Large arrays come and go pass by pass: map each on its own so that freeing one returns its
  // pages, instead of leaving them in a heap that glibc's adaptive threshold would grow.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 20);
  auto report = PartitionBounded(spec, bounded, flags.Get("out"));
  if (!report.ok()) return Fail(report.status());
  if (options.num_partitions > 1) std::printf("method %s\n%s", options.method.c_str(), report->ToString().c_str());
  std::printf("wrote %d partition(s) to %s in passes within --memory_mb=%lld (peak RSS %lld MiB)\n",
              options.num_partitions, flags.Get("out").c_str(), static_cast<long long>(memory >> 20),
              static_cast<long long>(PeakRssMb()));
  return 0;
}

int Run(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "graphstore-partition", "Writes graphstore partition directories.")) {
    return *exit;
  }
  if (flags.Get("out").empty()) return Fail(absl::InvalidArgumentError("--out is required"));
  auto parts = flags.GetInt("partitions");
  if (!parts.ok()) return Fail(parts.status());
  if (*parts < 1 || *parts > 4096) return Fail(absl::InvalidArgumentError("--partitions must be in [1, 4096]"));
  auto seed = flags.GetInt("seed");
  if (!seed.ok()) return Fail(seed.status());
  if (flags.Get("method") != "random" && flags.Get("method") != "metis" && flags.Get("method") != "stream") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--method=", flags.Get("method"),
                                                        " is not a method (random, metis, stream)")));
  }
  auto budget = MemoryBudget(flags);
  if (!budget.ok()) return Fail(budget.status());
  const int64_t memory = *budget;
  auto spec = InputSpec(flags);
  if (!spec.ok()) return Fail(spec.status());
  WriteOptions options;
  options.num_partitions = static_cast<int>(*parts);
  options.edge_dir = flags.Get("edge_dir");
  options.method = flags.Get("method");
  auto reverse = flags.GetBool("reverse_edges");
  if (!reverse.ok()) return Fail(reverse.status());

  // What the in-memory path would need, from the files' sizes, before reading any of them.
  auto input = EstimateInput(*spec);
  if (!input.ok()) return Fail(input.status());
  const int64_t need = InMemoryBytes(*input, options.method, *reverse);
  std::fprintf(stderr, "graphstore-partition: about %lld edges; in memory this needs about %lld MiB (--memory_mb=%lld)\n",
               static_cast<long long>(input->edges), static_cast<long long>(need >> 20),
               static_cast<long long>(memory >> 20));
  const std::string bounded = flags.Get("bounded");
  if (bounded != "auto" && bounded != "always" && bounded != "never") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--bounded=", bounded, " is not auto, always or never")));
  }
  if (bounded == "always" || (bounded == "auto" && need > memory)) {
    if (options.method == "metis") {
      return Fail(absl::ResourceExhaustedError(absl::StrCat(
          "--method=metis holds the graph in memory and needs about ", need >> 20, " MiB for about ", input->edges,
          " edges, more than --memory_mb=", memory >> 20, "; raise --memory_mb, or use --method=stream (METIS over a ",
          "coarsened graph, in bounded memory)")));
    }
    if (auto s = CheckStreamable(*spec); !s.ok()) {
      if (bounded == "always") return Fail(s);
      return Fail(absl::InvalidArgumentError(absl::StrCat("the input needs about ", need >> 20,
                                                          " MiB in memory, more than --memory_mb=", memory >> 20,
                                                          ", and ", s.message())));
    }
    return RunBounded(flags, *spec, options, *seed, memory, *reverse);
  }
  auto graph = ReadInput(*spec, *reverse);
  if (!graph.ok()) return Fail(graph.status());
  auto fractions = SplitFractionsOf(flags);
  if (!fractions.ok()) return Fail(fractions.status());
  if (fractions->has_value()) {
    if (auto s = AssignSplits(&*graph, **fractions, static_cast<uint64_t>(*seed)); !s.ok()) return Fail(s);
  }
  options.deal_seed = DealSeed(options.method, static_cast<uint64_t>(*seed));
  auto assignment = AssignPartitions(*graph, options.method, options.num_partitions, *seed, options.edge_dir != "in",
                                     memory, TmpDir(flags));
  if (!assignment.ok()) return Fail(assignment.status());
  if (auto s = WritePartitions(*graph, *assignment, options, flags.Get("out")); !s.ok()) return Fail(s);
  PrintSummary(*graph, *assignment, options, flags.Get("out"));
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
