#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "server/graph/npy.h"
#include "tests/test_util.h"
#include "tools/dataset/writer.h"
#include "tools/graph_input.h"
#include "tools/metis_partition.h"
#include "tools/stream_partition.h"

namespace graphstore {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCommand;
using testing::SharedDataPath;
using testing::TempDir;
using testing::WriteFile;

const std::string kPartition = "tools/graphstore-partition";

// Every file under `a` has the same bytes under `b`, and `b` holds no other file.
void RequireSameTree(const std::string& a, const std::string& b) {
  std::vector<std::string> in_a, in_b;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (e.is_regular_file()) in_a.push_back(fs::relative(e.path(), a).string());
  }
  for (const auto& e : fs::recursive_directory_iterator(b)) {
    if (e.is_regular_file()) in_b.push_back(fs::relative(e.path(), b).string());
  }
  std::sort(in_a.begin(), in_a.end());
  std::sort(in_b.begin(), in_b.end());
  REQUIRE(in_a == in_b);
  REQUIRE(in_a.size() > 5);
  for (const auto& f : in_a) {
    INFO(f);
    CHECK(ReadFile(a + "/" + f) == ReadFile(b + "/" + f));
  }
}

// The chunks the bounded path bucketed into, from its stderr ("bucketing (K chunks)").
int ChunksOf(const std::string& log) {
  std::smatch m;
  REQUIRE(std::regex_search(log, m, std::regex("bucketing \\((\\d+) chunks\\)")));
  return std::stoi(m[1]);
}

// A heterogeneous input with sparse raw ids in every form the tool reads: users -> items as
// int32/int64 npy arrays, items -> items as text with comments and commas, item features as
// float64 rows in an order --node_ids gives, user labels, and split files.
std::string WriteHeteroInput(const TempDir& dir) {
  std::mt19937_64 rng(7);
  std::vector<int32_t> us;
  std::vector<int64_t> ui;
  for (int i = 0; i < 150000; ++i) {
    us.push_back(1000 + 3 * static_cast<int32_t>(rng() % 4000));
    ui.push_back(static_cast<int64_t>(rng() % 5000) * 7);
  }
  REQUIRE(WriteNpyVector(dir / "us.npy", us).ok());
  REQUIRE(WriteNpyVector(dir / "ui.npy", ui).ok());
  std::string text = "# items that go together\n";
  for (int i = 0; i < 100000; ++i) {
    text += std::to_string((rng() % 5000) * 7) + (i % 3 == 0 ? "," : "\t") + std::to_string((rng() % 5000) * 7) +
            (i % 5 == 0 ? " 1.0\n" : "\n");
  }
  WriteFile(dir / "ii.txt", text);
  // Every item 0, 7, ..., 34993 has a feature row, listed in a shuffled order.
  std::vector<int64_t> item_ids;
  for (int64_t k = 0; k < 5000; ++k) item_ids.push_back(7 * k);
  std::shuffle(item_ids.begin(), item_ids.end(), rng);
  REQUIRE(WriteNpyVector(dir / "item_ids.npy", item_ids).ok());
  std::vector<double> feats;
  for (size_t i = 0; i < item_ids.size() * 4; ++i) feats.push_back(static_cast<double>(rng() % 1000) / 7.0 - 50);
  REQUIRE(WriteNpy(dir / "item_feats.npy", NpyDtype::kFloat64, {5000, 4}, feats.data()).ok());
  std::string user_ids, train;
  std::vector<int64_t> labels;
  for (int k = 0; k < 4000; ++k) {
    user_ids += std::to_string(1000 + 3 * k) + "\n";
    labels.push_back(k % 11 == 0 ? -1 : k % 5);
    if (k % 4 == 0) train += std::to_string(1000 + 3 * k) + "\n";
  }
  WriteFile(dir / "user_ids.txt", user_ids);
  WriteFile(dir / "train.txt", train);
  REQUIRE(WriteNpyVector(dir / "user_labels.npy", labels).ok());
  return " --edges=user__buys__item=" + dir / "us.npy," + dir / "ui.npy" + " --edges=item__with__item=" +
         dir / "ii.txt" + " --node_ids=item=" + dir / "item_ids.npy" + " --features=item=" + dir / "item_feats.npy" +
         " --node_ids=user=" + dir / "user_ids.txt" + " --labels=user=" + dir / "user_labels.npy" +
         " --train_ids=user=" + dir / "train.txt" + " --reverse_edges";
}

TEST_CASE("partitioning in bounded memory writes byte for byte what the in-memory path writes",
          "[partitioner][bounded]") {
  TempDir dir;
  const std::string input = WriteHeteroInput(dir);
  for (const char* parts : {"1", "4"}) {
    for (const char* edge_dir : {"out", "in"}) {
      INFO("partitions " << parts << ", edge_dir " << edge_dir);
      const std::string common = kPartition + input + " --partitions=" + parts + " --edge_dir=" + edge_dir;
      const std::string mem = dir / (std::string("mem-") + parts + edge_dir);
      const std::string bnd = dir / (std::string("bnd-") + parts + edge_dir);
      REQUIRE(RunCommand(common + " --bounded=never --out=" + mem + " >/dev/null 2>&1") == 0);
      // 19 MiB leaves room for about 19,000 edges per chunk: several chunks per partition.
      REQUIRE(RunCommand(common + " --bounded=always --memory_mb=19 --tmp_dir=" + dir.path() + " --out=" + bnd +
                         " >/dev/null 2>" + dir / "log.txt") == 0);
      const std::string log = ReadFile(dir / "log.txt");
      CHECK(ChunksOf(log) > std::stoi(parts));
      RequireSameTree(mem, bnd);
    }
  }
  // The chunks are gone.
  for (const auto& e : fs::directory_iterator(dir.path())) {
    CHECK(e.path().filename().string().find("graphstore-partition-") == std::string::npos);
  }
}

TEST_CASE("ids spread over the int64 range, negatives included, partition in bounded memory as in memory",
          "[partitioner][bounded]") {
  // 30,000 ids 2^44 apart from -2^62: far past any bitmap the budget allows, so the bounded path
  // spills sorted runs of them and ranks them in Elias-Fano form.
  TempDir dir;
  auto id = [](int64_t k) { return k * (int64_t{1} << 44) + (k * k) % 1000 - (int64_t{1} << 62); };
  std::mt19937_64 rng(13);
  std::vector<int64_t> src, dst, listed, labels, train;
  for (int i = 0; i < 300000; ++i) {
    src.push_back(id(static_cast<int64_t>(rng() % 30000)));
    dst.push_back(id(static_cast<int64_t>(rng() % 30000)));
  }
  for (int64_t k = 0; k < 30000; ++k) listed.push_back(id(k));
  std::shuffle(listed.begin(), listed.end(), rng);
  for (int64_t raw : listed) {
    labels.push_back(static_cast<int64_t>(rng() % 7));
    if (rng() % 4 == 0) train.push_back(raw);
  }
  REQUIRE(WriteNpyVector(dir / "src.npy", src).ok());
  REQUIRE(WriteNpyVector(dir / "dst.npy", dst).ok());
  REQUIRE(WriteNpyVector(dir / "ids.npy", listed).ok());
  REQUIRE(WriteNpyVector(dir / "labels.npy", labels).ok());
  REQUIRE(WriteNpyVector(dir / "train.npy", train).ok());
  for (const char* method : {"random", "stream"}) {
    INFO("method " << method);
    const std::string common = kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" + " --node_ids=" +
                               dir / "ids.npy" + " --labels=" + dir / "labels.npy" + " --train_ids=" +
                               dir / "train.npy" + " --partitions=4 --method=" + method;
    const std::string mem = dir / (std::string("mem-") + method), bnd = dir / (std::string("bnd-") + method);
    REQUIRE(RunCommand(common + " --bounded=never --out=" + mem + " >/dev/null 2>&1") == 0);
    REQUIRE(RunCommand(common + " --bounded=always --memory_mb=19 --tmp_dir=" + dir.path() + " --out=" + bnd +
                       " >/dev/null 2>" + dir / "log.txt") == 0);
    const std::string log = ReadFile(dir / "log.txt");
    CHECK_THAT(log, Catch::Contains("held in Elias-Fano form"));
    if (std::string(method) == "random") {
      RequireSameTree(mem, bnd);
    } else {  // (the streaming method's coarse graph follows the budget: another assignment)
      CHECK(ReadFile(mem + "/part-0/book/node.raw_ids.npy") == ReadFile(bnd + "/part-0/book/node.raw_ids.npy"));
    }
    auto raw = MappedNpy::Open(bnd + "/part-0/book/node.raw_ids.npy");
    REQUIRE(raw.ok());
    REQUIRE(raw->num_elements() == 30000);
    CHECK(raw->data<int64_t>()[0] == id(0));
    CHECK(raw->data<int64_t>()[29999] == id(29999));
  }
}

// Runs `command` as a child (through /bin/sh, which execs it) and returns its exit status and
// its peak resident memory in bytes: the child's getrusage maximum, as wait4 reports it. The
// maximum counts the test's own pages the child had between fork and exec, so it can only
// overstate the command's: keep the test process small before calling.
struct Measured {
  int status = -1;
  int64_t peak_rss = 0;
};
Measured RunMeasured(const std::string& command) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, static_cast<int64_t>(usage.ru_maxrss) * 1024};
}

// Writes `slices` of 100,000 edges between random nodes of [0, nodes) to dir/src.npy and
// dir/dst.npy, in slices so that the test itself stays far below the budgets it measures; with
// `every_source`, the first slices' sources walk every id in turn.
void WriteRandomEdges(const TempDir& dir, int64_t nodes, int slices, uint64_t seed, bool every_source = false) {
  std::mt19937_64 rng(seed);
  auto src = NpyWriter::Create(dir / "src.npy", NpyDtype::kInt64);
  auto dst = NpyWriter::Create(dir / "dst.npy", NpyDtype::kInt64);
  REQUIRE(src.ok());
  REQUIRE(dst.ok());
  std::vector<int64_t> a(100000), b(a.size());
  int64_t walked = 0;
  for (int slice = 0; slice < slices; ++slice) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = every_source && walked < nodes ? walked++ : static_cast<int64_t>(rng() % static_cast<uint64_t>(nodes));
      b[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(nodes));
    }
    REQUIRE((*src)->Append(a.data(), static_cast<int64_t>(a.size())).ok());
    REQUIRE((*dst)->Append(b.data(), static_cast<int64_t>(b.size())).ok());
  }
  REQUIRE((*src)->Finish().ok());
  REQUIRE((*dst)->Finish().ok());
}

TEST_CASE("the bounded path's peak memory stays within --memory_mb where the in-memory path's does not",
          "[partitioner][bounded]") {
  // 300,000 nodes and 3M edges (46 MB of npy): the in-memory path peaks near 3x the budget
  // (random) and 7x (stream); the bounded path must stay under it, as the child's own maximum
  // resident set says.
  TempDir dir;
  WriteRandomEdges(dir, 300000, 30, 11);
  for (const auto& [method, budget_mb] : {std::pair<std::string, int64_t>{"random", 48}, {"stream", 64}}) {
    INFO("method " << method << ", --memory_mb=" << budget_mb);
    const std::string common = kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" +
                               " --partitions=2 --method=" + method + " --tmp_dir=" + dir.path();
    const Measured bounded = RunMeasured(common + " --bounded=always --memory_mb=" + std::to_string(budget_mb) +
                                         " --out=" + dir / ("bnd-" + method) + " >/dev/null 2>&1");
    REQUIRE(bounded.status == 0);
    const Measured in_memory =
        RunMeasured(common + " --bounded=never --out=" + dir / ("mem-" + method) + " >/dev/null 2>&1");
    REQUIRE(in_memory.status == 0);
    INFO("peak RSS bounded " << (bounded.peak_rss >> 20) << " MiB, in memory " << (in_memory.peak_rss >> 20) << " MiB");
    CHECK(bounded.peak_rss <= budget_mb << 20);
    CHECK(in_memory.peak_rss > 2 * (budget_mb << 20));
  }
}

TEST_CASE("the bounded path holds under 16 bytes a node: 5M labelled nodes split and partitioned in 80 MiB",
          "[partitioner][bounded]") {
  // 5M nodes (every row of the labels file is a node), 1M edges between them; split fractions by
  // default. 80 MiB is 16.8 bytes a node for everything: the program, the node arrays, the
  // edges' chunks. Holding each node's owner as int32, its row and degrees as int64 and a list
  // of the owned ids (the layout the in-memory path uses) would take 40 bytes a node.
  TempDir dir;
  constexpr int64_t kNodes = 5000000;
  WriteRandomEdges(dir, kNodes, 10, 5);
  {
    std::mt19937_64 rng(5);
    auto labels = NpyWriter::Create(dir / "labels.npy", NpyDtype::kInt64);
    REQUIRE(labels.ok());
    std::vector<int64_t> a(100000);
    for (int slice = 0; slice < 50; ++slice) {
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int64_t>(rng() % 11) - 1;
      REQUIRE((*labels)->Append(a.data(), static_cast<int64_t>(a.size())).ok());
    }
    REQUIRE((*labels)->Finish().ok());
  }
  const Measured run = RunMeasured(kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" + " --labels=" +
                                   dir / "labels.npy --partitions=4 --bounded=always --memory_mb=80 --tmp_dir=" +
                                   dir.path() + " --out=" + dir / "out >" + dir / "log.txt 2>&1");
  INFO(ReadFile(dir / "log.txt"));
  REQUIRE(run.status == 0);
  INFO("peak RSS " << (run.peak_rss >> 20) << " MiB, " << static_cast<double>(run.peak_rss) / kNodes << " bytes a node");
  CHECK(run.peak_rss <= int64_t{80} << 20);
  // Every node written once, split as labelled.
  int64_t owned = 0, train = 0;
  for (int p = 0; p < 4; ++p) {
    const std::string part = dir / ("out/part-" + std::to_string(p));
    auto ids = MappedNpy::Open(part + "/nodes/node/ids.npy");
    auto tr = MappedNpy::Open(part + "/nodes/node/train.npy");
    REQUIRE(ids.ok());
    REQUIRE(tr.ok());
    owned += ids->num_elements();
    train += tr->num_elements();
  }
  CHECK(owned == kNodes);
  // 10 of 11 nodes are labelled; 0.8 of those train.
  CHECK(std::abs(static_cast<double>(train) - 0.8 * kNodes * 10 / 11) < 0.01 * kNodes);

  // The streaming method on the same sparse graph: most nodes have no neighbour to cluster
  // with, and the millions of clusters left are merged into as many as METIS's share of the
  // budget allows (unmerged, METIS over 4M clusters took the run past 300 MB).
  const Measured stream = RunMeasured(kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" + " --labels=" +
                                      dir / "labels.npy --partitions=4 --method=stream --bounded=always --memory_mb=128" +
                                      " --tmp_dir=" + dir.path() + " --out=" + dir / "stream >" + dir / "log.txt 2>&1");
  INFO(ReadFile(dir / "log.txt"));
  REQUIRE(stream.status == 0);
  INFO("stream: peak RSS " << (stream.peak_rss >> 20) << " MiB");
  CHECK(stream.peak_rss <= int64_t{128} << 20);
  owned = 0;
  for (int p = 0; p < 4; ++p) {
    auto ids = MappedNpy::Open(dir / ("stream/part-" + std::to_string(p) + "/nodes/node/ids.npy"));
    REQUIRE(ids.ok());
    owned += ids->num_elements();
  }
  CHECK(owned == kNodes);
}

TEST_CASE("the streaming method adds 8 bytes a node: 1M nodes partitioned by it in 48 MiB",
          "[partitioner][bounded][stream]") {
  // 1M nodes, 2M edges. Beside the bounded path's own arrays (about 11 bytes a node here), the
  // streaming method holds a cluster (4 bytes) and a cluster's new number (4) or a cluster size
  // or a place (2) per node; with a row degree beside them it took 10, with 4 bytes for each of
  // those and a neighbour count (20 a node) it was refused this budget, and with 8-byte clusters
  // and degrees (40) it needed 64 MiB and more.
  TempDir dir;
  constexpr int64_t kNodes = 1000000;
  WriteRandomEdges(dir, kNodes, 20, 9, /*every_source=*/true);
  const Measured run = RunMeasured(kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" +
                                   " --partitions=4 --method=stream --bounded=always --memory_mb=48 --tmp_dir=" +
                                   dir.path() + " --out=" + dir / "out >" + dir / "log.txt 2>&1");
  INFO(ReadFile(dir / "log.txt"));
  REQUIRE(run.status == 0);
  INFO("peak RSS " << (run.peak_rss >> 20) << " MiB, " << static_cast<double>(run.peak_rss) / kNodes << " bytes a node");
  CHECK(run.peak_rss <= int64_t{48} << 20);
  int64_t owned = 0;
  for (int p = 0; p < 4; ++p) {
    auto ids = MappedNpy::Open(dir / ("out/part-" + std::to_string(p) + "/nodes/node/ids.npy"));
    REQUIRE(ids.ok());
    owned += ids->num_elements();
    // Balanced within the method's cap on nodes (1.03 of the mean).
    CHECK(ids->num_elements() <= static_cast<int64_t>(1.031 * kNodes / 4));
  }
  CHECK(owned == kNodes);
}

TEST_CASE("bounded-memory Cora with split fractions matches the in-memory path", "[partitioner][bounded]") {
  TempDir dir;
  const std::string common =
      kPartition + " --edges=" + SharedDataPath("cora/cora.cites") + " --swap_columns --partitions=3 --seed=5";
  REQUIRE(RunCommand(common + " --bounded=never --out=" + dir / "mem >/dev/null 2>&1") == 0);
  REQUIRE(RunCommand(common + " --bounded=always --memory_mb=20 --tmp_dir=" + dir.path() + " --out=" + dir / "bnd" +
                     " >" + dir / "out.txt 2>&1") == 0);
  CHECK_THAT(ReadFile(dir / "out.txt"), Catch::Contains("in passes within --memory_mb=20 (peak RSS "));
  RequireSameTree(dir / "mem", dir / "bnd");
}

TEST_CASE("METIS beyond --memory_mb is refused before it starts, with its estimate and the way out",
          "[partitioner][bounded][metis]") {
  TempDir dir;
  const std::string err = dir / "err.txt";
  CHECK(RunCommand(kPartition + " --edges=" + SharedDataPath("cora/cora.cites") +
                   " --partitions=2 --method=metis --memory_mb=1 --out=" + dir / "out >/dev/null 2>" + err) == 2);
  const std::string text = ReadFile(err);
  CHECK_THAT(text, Catch::Contains("--method=metis holds the graph in memory and needs about "));
  CHECK_THAT(text, Catch::Contains(" MiB for about "));
  CHECK_THAT(text, Catch::Contains("more than --memory_mb=1"));
  CHECK_THAT(text, Catch::Contains("--method=stream"));
  CHECK(!fs::exists(dir / "out"));
}

TEST_CASE("a truncated npy edge file and a malformed text line are named with their file and position",
          "[partitioner][bounded]") {
  TempDir dir;
  std::vector<int64_t> ids(1000);
  for (int i = 0; i < 1000; ++i) ids[i] = i;
  REQUIRE(WriteNpyVector(dir / "src.npy", ids).ok());
  REQUIRE(WriteNpyVector(dir / "dst.npy", ids).ok());
  fs::resize_file(dir / "src.npy", fs::file_size(dir / "src.npy") - 4004);  // ends inside id 499
  for (const char* mode : {"always", "never"}) {
    INFO(mode);
    const std::string err = dir / "err.txt";
    CHECK(RunCommand(kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" + " --bounded=" + mode +
                     " --out=" + dir / "out >/dev/null 2>" + err) == 2);
    const std::string text = ReadFile(err);
    CHECK_THAT(text, Catch::Contains(dir / "src.npy"));
    CHECK_THAT(text, Catch::Contains("truncated"));
  }
  CHECK_THAT(ReadFile(dir / "err.txt"), Catch::Contains(dir / "src.npy"));
  CHECK(RunCommand(kPartition + " --edges=" + dir / "src.npy," + dir / "dst.npy" +
                   " --bounded=always --out=" + dir / "out 2>&1 | grep -q 'ending inside id 499'") == 0);

  WriteFile(dir / "bad.txt", "1 2\n# fine\n\n3 x\n");
  const std::string err = dir / "err2.txt";
  CHECK(RunCommand(kPartition + " --edges=" + dir / "bad.txt --bounded=always --out=" + dir / "out2 >/dev/null 2>" +
                   err) == 2);
  CHECK_THAT(ReadFile(err), Catch::Contains(dir / "bad.txt:4: expected 2 integer ids, got '3 x'"));
}

TEST_CASE("what the bounded path cannot stream is refused naming the flag", "[partitioner][bounded]") {
  TempDir dir;
  WriteFile(dir / "e.txt", "0 1\n1 2\n");
  WriteFile(dir / "w.txt", "1\n2\n");
  const std::string err = dir / "err.txt";
  CHECK(RunCommand(kPartition + " --edges=" + dir / "e.txt --edge_weights=" + dir / "w.txt" +
                   " --bounded=always --out=" + dir / "out >/dev/null 2>" + err) == 2);
  CHECK_THAT(ReadFile(err), Catch::Contains("--edge_weights is read in memory only"));
  CHECK(RunCommand(kPartition + " --edges=" + dir / "e.txt --bounded=sometimes --out=" + dir / "out >/dev/null 2>" +
                   err) == 2);
  CHECK_THAT(ReadFile(err), Catch::Contains("--bounded=sometimes"));
}

GraphData Cora() {
  GraphInputSpec spec;
  spec.edges.push_back({"", SharedDataPath("cora/cora.cites")});
  spec.swap_columns = true;
  auto g = BuildGraph(spec);
  REQUIRE(g.ok());
  return *std::move(g);
}

TEST_CASE("the streaming method cuts Cora within 1.5x of METIS, balanced to 1.05 in nodes and edges",
          "[partitioner][stream]") {
  const GraphData g = Cora();
  for (int parts : {2, 4, 8}) {
    auto metis = MetisAssignment(g, parts, 0);
    REQUIRE(metis.ok());
    const PartitionReport m = EvaluateAssignment(g, *metis, parts, true);
    // The whole graph as METIS's input, and coarsened to a ninth of it.
    for (int64_t coarse : {int64_t{0}, int64_t{300}}) {
      INFO(parts << " parts, coarse nodes " << coarse);
      StreamOptions o;
      o.num_partitions = parts;
      o.coarse_nodes = coarse;
      auto a = StreamAssignment(g, true, o);
      REQUIRE(a.ok());
      const PartitionReport r = EvaluateAssignment(g, *a, parts, true);
      INFO("stream cut " << r.cut_edges << ", METIS cut " << m.cut_edges);
      CHECK(r.cut_edges <= 1.5 * m.cut_edges);
      CHECK(r.node_imbalance() <= 1.05);
      CHECK(r.edge_imbalance() <= 1.05);
    }
  }
}

TEST_CASE("the streaming method weighs self-loops into a partition's stored edges, held or spilled",
          "[partitioner][stream]") {
  // Two cliques of 20 nodes and 40 isolated nodes. Each node of the first clique stores 10
  // self-loops: kept whole, the cliques would leave one partition 380 stored edges and the other
  // 190. A node's stored edges are counted from its adjacency, where self-loops are held once
  // and kept out of its neighbours, so the partitions must split a clique to balance them.
  TempDir dir;
  GraphData g;
  g.node_types.push_back(NodeTypeData{"node", 80});
  EdgeTypeData e{"node", "to", "node"};
  for (int base : {0, 20}) {
    for (int u = base; u < base + 20; ++u) {
      for (int v = u + 1; v < base + 20; ++v) {
        e.src.push_back(u);
        e.dst.push_back(v);
      }
      for (int k = 0; base == 0 && k < 10; ++k) {
        e.src.push_back(u);
        e.dst.push_back(u);
      }
    }
  }
  g.edge_types.push_back(e);
  REQUIRE(ValidateGraph(g).ok());
  for (bool spill : {false, true}) {
    INFO((spill ? "spilled" : "held"));
    StreamOptions o;
    o.num_partitions = 2;
    o.coarse_nodes = 80;
    if (spill) {
      o.memory_bytes = 1;
      o.tmp_dir = dir.path();
    }
    auto a = StreamAssignment(g, true, o);
    REQUIRE(a.ok());
    const PartitionReport r = EvaluateAssignment(g, *a, 2, true);
    INFO(r.ToString());
    CHECK(r.edge_imbalance() <= 1.05);
    CHECK(r.node_imbalance() <= 1.05);
    CHECK(r.cut_edges > 0);
  }
}

TEST_CASE("the streaming method gives the same assignment with its adjacency spilled to disk",
          "[partitioner][stream]") {
  TempDir dir;
  const GraphData g = Cora();
  StreamOptions o;
  o.num_partitions = 4;
  o.coarse_nodes = 500;
  auto held = StreamAssignment(g, true, o);
  REQUIRE(held.ok());
  o.memory_bytes = 1;  // every chunk spills
  o.tmp_dir = dir.path();
  auto spilled = StreamAssignment(g, true, o);
  REQUIRE(spilled.ok());
  CHECK(*held == *spilled);
  // A bounded run of the command streams too.
  REQUIRE(RunCommand(kPartition + " --edges=" + SharedDataPath("cora/cora.cites") +
                     " --swap_columns --partitions=2 --method=stream --bounded=always --memory_mb=20 --tmp_dir=" +
                     dir.path() + " --out=" + dir / "out >" + dir / "out.txt 2>&1") == 0);
  const std::string out = ReadFile(dir / "out.txt");
  CHECK_THAT(out, Catch::Contains("method stream"));
  CHECK_THAT(out, Catch::Contains("partitioning (stream): refining, pass 3 of 3"));
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("edge cut: (\\d+) of 5429 edges")));
  CHECK(std::stoi(m[1]) < 5429 / 8);  // random would cut about half
}

}  // namespace
}  // namespace graphstore
