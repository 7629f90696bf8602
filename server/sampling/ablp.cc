#include "server/sampling/ablp.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "proto/type_names.h"
#include "server/sampling/draw.h"
#include "server/util/field.h"

namespace graphstore {
namespace {

// The rows of an int64 [k, 2] label file whose first column is `anchor`: [begin, end).
std::pair<int64_t, int64_t> AnchorRows(const MappedNpy& f, int64_t anchor) {
  const int64_t* v = f.data<int64_t>();
  const int64_t k = f.shape()[0];
  int64_t lo = 0, hi = k;
  while (lo < hi) {  // first row with src >= anchor
    const int64_t mid = lo + (hi - lo) / 2;
    if (v[2 * mid] < anchor) lo = mid + 1; else hi = mid;
  }
  int64_t end = lo;
  while (end < k && v[2 * end] == anchor) ++end;
  return {lo, end};
}

// Appends the label nodes of `anchor` in `f` to `out`.
void AppendLabels(const MappedNpy& f, int64_t anchor, std::vector<int64_t>* out) {
  const auto [b, e] = AnchorRows(f, anchor);
  const int64_t* v = f.data<int64_t>();
  for (int64_t r = b; r < e; ++r) out->push_back(v[2 * r + 1]);
}

std::string Splits(const EdgeTypeStore& e) {
  std::string out;
  for (const auto& [name, f] : e.label_splits) absl::StrAppend(&out, out.empty() ? "" : ", ", name);
  return out.empty() ? "none" : out;
}

}  // namespace

int64_t AblpInput::IndexOf(int64_t anchor) const {
  auto it = std::lower_bound(anchors.begin(), anchors.end(), anchor);
  return it != anchors.end() && *it == anchor ? it - anchors.begin() : -1;
}

int ReverseEdgeType(const Partition& partition, int edge_type) {
  const std::string name = ReverseEdgeTypeName(partition.edge_type(edge_type).name);
  for (int i = 0; i < static_cast<int>(partition.edge_types().size()); ++i) {
    if (partition.edge_type(i).name == name) return i;
  }
  return -1;
}

absl::StatusOr<AblpInput> LoadAblpInput(const Partition& partition, const AblpRequest& req) {
  AblpInput in;
  auto anchor_type = partition.FindNodeType(req.node_type);
  if (!anchor_type.ok()) return InField(anchor_type.status(), "node_type");
  in.anchor_type = *anchor_type;
  auto sup = partition.FindEdgeType(req.supervision_edge_type);
  if (!sup.ok()) return InField(sup.status(), "supervision_edge_type");
  in.supervision_edge_type = *sup;
  const EdgeTypeStore& s = partition.edge_type(*sup);
  const NodeTypeStore& anchors = partition.node_type(in.anchor_type);
  if (s.src_type != in.anchor_type) {
    return InvalidField("supervision_edge_type", absl::StrCat(" '", s.name, "' starts at '",
                                partition.node_type(s.src_type).name, "', not at the anchor type '", anchors.name,
                                "'"));
  }
  in.label_type = s.dst_type;
  if (req.split.empty()) return InvalidField("split", " is required (a label split of the supervision edge type)");
  auto labels = s.label_splits.find(req.split);
  if (labels == s.label_splits.end()) {
    return InvalidField("split", absl::StrCat(" '", req.split, "' has no label edges in supervision_edge_type '", s.name,
                                "' (label splits: ", Splits(s), ")"));
  }
  const MappedNpy* negatives = nullptr;
  if (!req.negative_edge_type.empty()) {
    auto neg = partition.FindEdgeType(req.negative_edge_type);
    if (!neg.ok()) return InField(neg.status(), "negative_edge_type");
    const EdgeTypeStore& n = partition.edge_type(*neg);
    if (n.src_type != s.src_type || n.dst_type != s.dst_type) {
      return InvalidField("negative_edge_type", absl::StrCat(" '", n.name, "' does not join the same node types as '",
                                  s.name, "'"));
    }
    auto it = n.label_splits.find(req.split);
    if (it == n.label_splits.end()) {
      return InvalidField("split", absl::StrCat(" '", req.split, "' has no label edges in negative_edge_type '", n.name,
                                  "' (label splits: ", Splits(n), ")"));
    }
    in.negative_edge_type = *neg;
    negatives = &it->second;
  }
  if (auto bad = CheckSlice(req.rank, req.world_size); !bad.ok()) return bad;

  // Anchors: the distinct sources of the split's label edges (the file is sorted).
  const MappedNpy& f = labels->second;
  const int64_t* v = f.data<int64_t>();
  std::vector<int64_t> all;
  for (int64_t r = 0; r < f.shape()[0]; ++r) {
    if (all.empty() || all.back() != v[2 * r]) all.push_back(v[2 * r]);
  }
  const auto [begin, end] = SliceRange(static_cast<int64_t>(all.size()), req.rank, req.world_size);
  in.anchors.assign(all.begin() + begin, all.begin() + end);
  for (int64_t a : in.anchors) {
    AppendLabels(f, a, &in.positives);
    in.pos_offsets.push_back(static_cast<int64_t>(in.positives.size()));
    if (negatives != nullptr) AppendLabels(*negatives, a, &in.negatives);
    in.neg_offsets.push_back(static_cast<int64_t>(in.negatives.size()));
    const size_t from = in.known.size();
    for (const auto& [name, split] : s.label_splits) AppendLabels(split, a, &in.known);
    std::sort(in.known.begin() + from, in.known.end());
    in.known.erase(std::unique(in.known.begin() + from, in.known.end()), in.known.end());
    in.known_offsets.push_back(static_cast<int64_t>(in.known.size()));
  }
  return in;
}

absl::StatusOr<std::shared_ptr<const AblpLabeler>> AblpLabeler::Create(const Partition* partition, AblpInput input,
                                                                       NegativeOptions negatives, PeerSampling* peers) {
  std::shared_ptr<AblpLabeler> l(new AblpLabeler(partition, std::move(input), negatives, peers));
  l->reverse_edge_type_ = ReverseEdgeType(*partition, l->input_.supervision_edge_type);
  if (negatives.kind == NegativeOptions::Kind::kDegree && negatives.num > 0) {
    const EdgeTypeStore& e = partition->edge_type(l->input_.supervision_edge_type);
    if (!e.dst_degree.is_open()) {
      return absl::FailedPreconditionError(absl::StrCat("edge type '", e.name, "' stores no destination degrees"));
    }
    const int parts = DegreeIndex::Ranges(e.dst_degree.num_elements(), partition->num_partitions(),
                                          partition->partition_id(), negatives.whole_degree_index_bytes)
                          .first;
    if (parts > 1 && peers == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "degree negatives on partition ", partition->partition_id(), " of ", partition->num_partitions(),
          " need the cluster (--cluster): each server holds the degree sums of one range of destination ids"));
    }
    l->degrees_ = &partition->DegreeSums(e, negatives.whole_degree_index_bytes);
  }
  return std::shared_ptr<const AblpLabeler>(std::move(l));
}

absl::Status AblpLabeler::MakeBatch(const int64_t* anchors, size_t n, uint64_t seed, int64_t epoch, int64_t batch,
                                    AblpBatch* out) const {
  const AblpInput& in = input_;
  out->anchor_type = in.anchor_type;
  out->label_type = in.label_type;
  out->supervision_edge_type = in.supervision_edge_type;
  out->pos_offsets.assign(1, 0);
  out->neg_offsets.assign(1, 0);
  out->positives.clear();
  out->negatives.clear();
  // Reused batch after batch: the lists keep their memory.
  out->excluded.resize(partition_->edge_types().size());
  for (auto& pairs : out->excluded) pairs.clear();

  const bool rows_are_sources = partition_->rows_are_sources();
  const bool same_type = in.anchor_type == in.label_type;
  const uint64_t key = HashCombine(HopKey(seed, epoch, batch, -1, HashString("negatives")),
                                   HashString(partition_->edge_type(in.supervision_edge_type).name));
  // A stored edge src -> dst of edge type `e` as the (row, column) pair its CSR holds.
  auto exclude = [&](int e, int64_t src, int64_t dst) {
    if (e < 0) return;
    out->excluded[e].emplace_back(rows_are_sources ? src : dst, rows_are_sources ? dst : src);
  };
  std::vector<int64_t> drawn;
  std::vector<size_t> drawn_at;
  if (auto s = DrawNegatives(anchors, n, key, &drawn, &drawn_at); !s.ok()) return s;
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = anchors[i];
    const int64_t idx = in.IndexOf(a);
    if (idx < 0) return absl::InternalError(absl::StrCat("node ", a, " is not an anchor of this channel"));
    for (int64_t k = in.pos_offsets[idx]; k < in.pos_offsets[idx + 1]; ++k) {
      const int64_t p = in.positives[k];
      out->positives.push_back(p);
      exclude(in.supervision_edge_type, a, p);
      exclude(reverse_edge_type_, p, a);
      if (same_type) {
        exclude(in.supervision_edge_type, p, a);
        exclude(reverse_edge_type_, a, p);
      }
    }
    out->pos_offsets.push_back(static_cast<int64_t>(out->positives.size()));
    for (int64_t k = in.neg_offsets[idx]; k < in.neg_offsets[idx + 1]; ++k) out->negatives.push_back(in.negatives[k]);
    out->negatives.insert(out->negatives.end(), drawn.begin() + drawn_at[i], drawn.begin() + drawn_at[i + 1]);
    out->neg_offsets.push_back(static_cast<int64_t>(out->negatives.size()));
  }
  for (auto& pairs : out->excluded) {
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  }
  return absl::OkStatus();
}

absl::Status AblpLabeler::Resolve(const std::vector<int64_t>& positions, std::vector<int64_t>* nodes) const {
  nodes->resize(positions.size());
  std::vector<PeerSampling::DegreeNodesCall> calls;
  std::vector<int> call_of(static_cast<size_t>(degrees_->parts()), -1);
  struct Asked {
    size_t position;  // index in `positions`
    int call;
    size_t at;  // index in the call's positions
  };
  std::vector<Asked> asked;
  for (size_t j = 0; j < positions.size(); ++j) {
    const int r = degrees_->RangeOf(positions[j]);
    if (r == degrees_->self()) {
      (*nodes)[j] = degrees_->NodeAt(positions[j]);
      continue;
    }
    if (call_of[r] < 0) {
      call_of[r] = static_cast<int>(calls.size());
      calls.emplace_back().partition = r;
    }
    auto& c = calls[call_of[r]];
    asked.push_back({j, call_of[r], c.positions.size()});
    c.positions.push_back(positions[j]);
  }
  if (calls.empty()) return absl::OkStatus();
  if (auto s = peers_->FindDegreeNodes(partition_->edge_type(input_.supervision_edge_type).name, &calls)->Wait();
      !s.ok()) {
    return s;
  }
  for (const Asked& a : asked) (*nodes)[a.position] = calls[a.call].nodes[a.at];
  return absl::OkStatus();
}

absl::Status AblpLabeler::DrawNegatives(const int64_t* anchors, size_t n, uint64_t key, std::vector<int64_t>* drawn,
                                        std::vector<size_t>* offsets) const {
  const AblpInput& in = input_;
  const int64_t num_labels = partition_->node_type(in.label_type).num_nodes;
  const int num = negatives_.kind == NegativeOptions::Kind::kNone || num_labels <= 0 ? 0 : negatives_.num;
  const int max_tries = 20 * num + 100;
  const int64_t total = degrees_ == nullptr ? 0 : degrees_->total();
  const bool by_degree = negatives_.kind == NegativeOptions::Kind::kDegree && total > 0;
  const bool same_type = in.anchor_type == in.label_type;
  // Each anchor draws from a stream of its own and takes a candidate unless it is a known
  // positive, the anchor itself on a homogeneous graph, or taken already, within a bounded
  // number of tries. Candidates come in rounds of what each anchor still needs (and a quarter
  // more), so that degree draws outside this server's range cost one call per range and round;
  // an anchor meets its candidates in its stream's order, whichever server draws them. Anchor
  // i's negatives go to (*drawn)[i * num, i * num + taken).
  struct Anchor {
    DrawStream rng;
    int64_t idx = 0;  // in the input
    int taken = 0;
    int tries = 0;
    size_t first = 0, count = 0;  // its candidates in this round
  };
  std::vector<Anchor> state;
  state.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t idx = in.IndexOf(anchors[i]);
    if (idx < 0) return absl::InternalError(absl::StrCat("node ", anchors[i], " is not an anchor of this channel"));
    state.push_back({DrawStream(HashCombine(key, static_cast<uint64_t>(anchors[i]))), idx});
  }
  drawn->resize(n * static_cast<size_t>(num));
  std::vector<int64_t> candidates, nodes;
  auto open = [&](const Anchor& s) { return s.taken < num && s.tries < max_tries; };
  for (bool any = num > 0; any;) {
    candidates.clear();
    for (Anchor& s : state) {
      s.first = candidates.size();
      s.count = 0;
      if (!open(s)) continue;
      const int need = num - s.taken;
      s.count = static_cast<size_t>(std::min(need + need / 4 + 1, max_tries - s.tries));
      for (size_t j = 0; j < s.count; ++j) {
        candidates.push_back(static_cast<int64_t>(s.rng.Below(static_cast<uint64_t>(by_degree ? total : num_labels))));
      }
    }
    if (by_degree) {
      if (auto st = Resolve(candidates, &nodes); !st.ok()) return st;
      candidates.swap(nodes);
    }
    any = false;
    for (size_t i = 0; i < n; ++i) {
      Anchor& s = state[i];
      const int64_t* known = in.known.data() + in.known_offsets[s.idx];
      const int64_t* known_end = in.known.data() + in.known_offsets[s.idx + 1];
      int64_t* taken = drawn->data() + i * static_cast<size_t>(num);
      for (size_t j = 0; j < s.count && open(s); ++j) {
        const int64_t c = candidates[s.first + j];
        ++s.tries;
        if (std::binary_search(known, known_end, c)) continue;
        if (same_type && c == anchors[i]) continue;
        if (std::find(taken, taken + s.taken, c) != taken + s.taken) continue;
        taken[s.taken++] = c;
      }
      any = any || open(s);
    }
  }
  // Each anchor's negatives moved up behind the previous anchor's.
  offsets->assign(1, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto from = drawn->begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(num));
    std::copy(from, from + state[i].taken, drawn->begin() + static_cast<std::ptrdiff_t>(offsets->back()));
    offsets->push_back(offsets->back() + static_cast<size_t>(state[i].taken));
  }
  drawn->resize(offsets->back());
  return absl::OkStatus();
}

}  // namespace graphstore
