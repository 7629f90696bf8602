// graphstore-generate: writes a seeded synthetic dataset that graphstored can serve directly.

#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "tools/generator.h"

namespace graphstore {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "graphstore-generate: %s\n", std::string(s.message()).c_str());
  return 2;
}

void DefineFlags(Flags* flags) {
  GeneratorOptions d;
  flags->Define("nodes", absl::StrCat(d.num_nodes), "number of nodes");
  flags->Define("avg_degree", absl::StrCat(d.avg_degree), "mean out-degree before de-duplication");
  flags->Define("degree_exponent", absl::StrCat(d.degree_exponent), "power-law tail exponent of out-degrees");
  flags->Define("max_degree", absl::StrCat(d.max_degree), "largest out-degree");
  flags->Define("classes", absl::StrCat(d.num_classes), "planted communities = label classes");
  flags->Define("homophily", absl::StrCat(d.homophily), "fraction of edges inside a community");
  flags->Define("feature_dim", absl::StrCat(d.feature_dim), "feature columns (0: none)");
  flags->Define("feature_signal", absl::StrCat(d.feature_signal), "centroid std relative to unit noise");
  flags->Define("split", "0.6,0.2,0.2", "train,val,test fractions");
  flags->Define("seed", "0", "seed of everything");
  flags->Define("edge_weights", "false",
               "also write a sampling weight per edge (0 for about one edge in ten, else 1..8)");
  flags->Define("times", "false",
               "also write node and edge times for temporal sampling (nodes in [0, 1e6), each edge at the later "
               "of its endpoints' times)");
  flags->Define("partitions", "1", "partitions (1: DIR is a partition directory; N: DIR/part-K)");
  flags->Define("edge_dir", "out", "\"out\" or \"in\"");
  flags->Define("method", d.method, "assignment of nodes to partitions: \"random\" or \"metis\"");
  flags->Define("name", d.name, "dataset name");
  flags->Define("preset", "", "\"products\": 2.45M nodes, ~124M edges, 100 features, 47 classes");
  flags->Define("format", "partitions",
                "partitions (directories graphstored serves) or npy (the files graphstore-partition reads: "
                "src.npy, dst.npy, features.npy, labels.npy, train/val/test.npy)");
  flags->Define("out", "", "output directory");
}

// The options the flags ask for: a preset, then each flag given (or, without a preset, its default).
absl::StatusOr<GeneratorOptions> ParseOptions(const Flags& flags) {
  GeneratorOptions o;
  if (flags.Get("preset") == "products") {
    o.num_nodes = 2449029;
    o.avg_degree = 52;
    o.num_classes = 47;
    o.feature_dim = 100;
    o.name = "synthetic-products";
  } else if (!flags.Get("preset").empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown --preset=", flags.Get("preset")));
  }
  auto set_int = [&](const char* name, auto* field) -> absl::Status {
    if (!flags.IsSet(name) && !flags.Get("preset").empty()) return absl::OkStatus();
    auto v = flags.GetInt(name);
    if (!v.ok()) return v.status();
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(*v);
    return absl::OkStatus();
  };
  auto set_double = [&](const char* name, double* field) -> absl::Status {
    if (!flags.IsSet(name) && !flags.Get("preset").empty()) return absl::OkStatus();
    auto v = flags.GetDouble(name);
    if (!v.ok()) return v.status();
    *field = *v;
    return absl::OkStatus();
  };
  for (auto s : {set_int("nodes", &o.num_nodes), set_double("avg_degree", &o.avg_degree),
                 set_double("degree_exponent", &o.degree_exponent), set_int("max_degree", &o.max_degree),
                 set_int("classes", &o.num_classes), set_double("homophily", &o.homophily),
                 set_int("feature_dim", &o.feature_dim), set_double("feature_signal", &o.feature_signal),
                 set_int("partitions", &o.num_partitions)}) {
    if (!s.ok()) return s;
  }
  auto seed = flags.GetInt("seed");
  if (!seed.ok()) return seed.status();
  o.seed = static_cast<uint64_t>(*seed);
  auto weights = flags.GetBool("edge_weights");
  if (!weights.ok()) return weights.status();
  o.edge_weights = *weights;
  auto times = flags.GetBool("times");
  if (!times.ok()) return times.status();
  o.times = *times;
  o.edge_dir = flags.Get("edge_dir");
  o.method = flags.Get("method");
  if (flags.IsSet("name") || flags.Get("preset").empty()) o.name = flags.Get("name");
  const auto fr = SplitList(flags.Get("split"), ',');
  if (fr.size() != 3) return absl::InvalidArgumentError("--split needs three fractions: train,val,test");
  double* f[3] = {&o.train_fraction, &o.val_fraction, &o.test_fraction};
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    *f[i] = std::strtod(fr[i].c_str(), &end);
    if (*end != '\0') return absl::InvalidArgumentError(absl::StrCat("--split: '", fr[i], "' is not a number"));
  }
  return o;
}

int Run(int argc, char** argv) {
  Flags flags;
  DefineFlags(&flags);
  if (auto exit = flags.ParseCommandLine(argc, argv, "graphstore-generate", "Writes a synthetic graphstore dataset.")) {
    return *exit;
  }
  if (flags.Get("out").empty()) return Fail(absl::InvalidArgumentError("--out is required"));
  auto options = ParseOptions(flags);
  if (!options.ok()) return Fail(options.status());
  const GeneratorOptions& o = *options;
  const auto t0 = std::chrono::steady_clock::now();
  if (flags.Get("format") == "npy") {
    if (auto s = WriteInputFiles(o, flags.Get("out")); !s.ok()) return Fail(s);
  } else if (flags.Get("format") == "partitions") {
    if (auto s = GenerateDataset(o, flags.Get("out")); !s.ok()) return Fail(s);
  } else {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--format=", flags.Get("format"), " is not partitions or npy")));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("generated %lld nodes into %s in %.1f s\n", static_cast<long long>(o.num_nodes),
              flags.Get("out").c_str(), secs);
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Run(argc, argv); }
