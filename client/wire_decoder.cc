#include "client/wire_decoder.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "absl/strings/str_cat.h"
#include "client/cached_rows.h"
#include "client/edge_index.h"
#include "client/own_nodes.h"
#include "client/wire_reader.h"

namespace graphstore::client {

namespace {

using wire::CopyPiece;
using wire::ForEachField;
using wire::Handled;
using wire::kLengthType;
using wire::LengthDelimited;
using wire::ParseTensor;
using wire::Reader;
using wire::StringField;
using wire::WireTensor;

absl::Status Malformed(const std::string& what) {
  return absl::DataLossError(absl::StrCat("malformed sampled message: ", what));
}

}  // namespace

// The batch being assembled.
class BatchDecoder::State {
 public:
  explicit State(const DecodeOptions* options) : options_(options) {}

  // Decodes one message of the batch.
  absl::Status Add(const std::vector<Span>& message, bool* complete) {
    wire::Header h;
    if (!wire::ReadHeader(message, &h)) return Malformed("unreadable header fields");
    const uint32_t parts = std::max<uint32_t>(h.num_parts, 1);
    if (batch_ == nullptr) {
      if (h.part != 0) return Malformed(absl::StrCat("batch ", h.batch_index, " starts with part ", h.part));
      batch_ = std::make_shared<DecodedBatch>();
      batch_->channel_id = h.channel_id;
      batch_->epoch = h.epoch;
      batch_->batch_index = h.batch_index;
      batch_->num_batches = h.num_batches;
      num_parts_ = parts;
      next_part_ = 0;
    }
    if (h.part != next_part_ || h.epoch != batch_->epoch || h.batch_index != batch_->batch_index ||
        parts != num_parts_) {
      return Malformed(absl::StrCat("expected part ", next_part_, " of batch ", batch_->batch_index, ", got part ",
                                    h.part, " of batch ", h.batch_index));
    }
    ++next_part_;
    for (const Span& s : message) batch_->wire_bytes += s.size;
    if (auto st = ReadEntries(message); !st.ok()) return st;
    if (options_->owners_known) AnnounceOwners();
    *complete = next_part_ == num_parts_;
    return *complete ? Finish() : absl::OkStatus();
  }

  std::shared_ptr<DecodedBatch> Take() {
    // The per-type working memory serves the next batch: fresh pages cost more than the work.
    for (auto& [type, n] : nodes_) {
      n.cached.clear();
      n.sent_rows.clear();
      n.staged.clear();
      spare_.push_back({std::move(n.cached), std::move(n.sent_rows), std::move(n.staged)});
    }
    nodes_.clear();
    edges_.clear();
    ppr_.clear();
    received_.clear();
    return std::move(batch_);
  }

 private:
  // Per node type: what decoding its features needs across parts.
  // Outputs live here (stable addresses) until the batch is whole, then move into it in order
  // of first appearance.
  struct NodeState {
    size_t order = 0;
    DecodedNodes out;
    std::vector<uint8_t> cached;
    size_t cached_received = 0;
    std::vector<int64_t> sent_rows;  // node of each transmitted row, once `cached` is whole
    std::vector<float> scale, offset;
    v1::DType wire = v1::DTYPE_UNSPECIFIED;
    int64_t rows = 0, dim = 0;
    size_t nodes = 0;  // rows of the output feature matrix, once allocated
    size_t wire_row_bytes = 0, out_row_bytes = 0;
    std::vector<char> staged;  // rows that arrived before their mapping could be known
    std::vector<std::pair<size_t, size_t>> staged_rows;  // (first row, rows) of each staged piece
    bool owners_announced = false;
    bool mask_from_owners = false;  // no mask sent: the owners say which rows were (own_nodes.h)
    OwnLabels own_labels;           // labels of the sender's nodes alone (own_nodes.h)
  };
  struct EdgeState {
    size_t order = 0;
    DecodedEdges out;
  };
  struct Spare {
    std::vector<uint8_t> cached;
    std::vector<int64_t> sent_rows;
    std::vector<char> staged;
  };

  absl::Status ReadEntries(const std::vector<Span>& message) {
    absl::Status status;
    const bool ok = ForEachField(Reader(&message), [&](int number, uint32_t type, Reader& in) {
      if (number == v1::SampledMessage::kSharedBufferFieldNumber) {
        status = Malformed("a shared-memory message reached the socket decoder");
        return Handled::kError;
      }
      if (number != v1::SampledMessage::kNodesFieldNumber && number != v1::SampledMessage::kEdgesFieldNumber &&
          number != v1::SampledMessage::kAblpFieldNumber && number != v1::SampledMessage::kPprFieldNumber) {
        return Handled::kSkip;
      }
      Reader entry{nullptr};
      if (!LengthDelimited(type, in, &entry)) return Handled::kError;
      status = Entry(number, entry);
      return status.ok() ? Handled::kDone : Handled::kError;
    });
    if (!status.ok()) return status;
    return ok ? absl::OkStatus() : Malformed("truncated fields");
  }

  // One entry: its names first (a first pass), then its tensors.
  absl::Status Entry(int number, const Reader& entry) {
    // The string fields: field 1 of nodes, edges and ablp; fields 4 and 5 of PPR weights.
    const bool ppr = number == v1::SampledMessage::kPprFieldNumber;
    auto is_name = [ppr](int field) {
      return ppr ? field == v1::PprWeights::kSeedTypeFieldNumber || field == v1::PprWeights::kNodeTypeFieldNumber
                 : field == v1::NodeTensors::kNodeTypeFieldNumber;
    };
    std::map<int, std::string> names;
    const bool ok = ForEachField(entry, [&](int field, uint32_t type, Reader& in) {
      if (type != kLengthType || !is_name(field)) return Handled::kSkip;
      return StringField(type, in, &names[field]) ? Handled::kDone : Handled::kError;
    });
    if (!ok) return Malformed("an entry's names");
    absl::Status status;
    const bool tensors_ok = ForEachField(entry, [&](int field, uint32_t type, Reader& in) {
      if (type != kLengthType || is_name(field)) return Handled::kSkip;
      Reader sub{nullptr};
      WireTensor t;
      if (!LengthDelimited(type, in, &sub) || !ParseTensor(sub, &t)) {
        status = Malformed("a tensor");
        return Handled::kError;
      }
      if (t.shared) {
        status = Malformed("a shared-memory tensor reached the socket decoder");
        return Handled::kError;
      }
      status = Tensor(number, names, field, t);
      return status.ok() ? Handled::kDone : Handled::kError;
    });
    if (!status.ok()) return status;
    return tensors_ok ? absl::OkStatus() : Malformed("an entry's tensors");
  }

  absl::Status Tensor(int entry, const std::map<int, std::string>& names, int field, WireTensor& t) {
    auto name = [&](int f) {
      auto it = names.find(f);
      return it == names.end() ? std::string() : it->second;
    };
    switch (entry) {
      case v1::SampledMessage::kNodesFieldNumber: return NodeTensor(name(v1::NodeTensors::kNodeTypeFieldNumber), field, t);
      case v1::SampledMessage::kEdgesFieldNumber: return EdgeTensor(name(v1::EdgeTensors::kEdgeTypeFieldNumber), field, t);
      case v1::SampledMessage::kAblpFieldNumber: {
        if (!batch_->ablp) batch_->ablp.emplace();
        DecodedAblp& a = *batch_->ablp;
        a.supervision_edge_type = name(v1::AblpLabels::kSupervisionEdgeTypeFieldNumber);
        DecodedTensor* out = a.Field(field);
        return out != nullptr ? Plain(out, t, "ablp") : absl::OkStatus();
      }
      default: {
        // PPR: a new entry starts with its seed_index.
        if (field == v1::PprWeights::kSeedIndexFieldNumber || ppr_.empty()) ppr_.emplace_back();
        DecodedPpr& p = ppr_.back();
        p.seed_type = name(v1::PprWeights::kSeedTypeFieldNumber);
        p.node_type = name(v1::PprWeights::kNodeTypeFieldNumber);
        return Plain(p.Field(field), t, "ppr");
      }
    }
  }

  // A tensor copied as it is: allocated (full shape) on its first piece, then each piece's
  // bytes at their offset.
  absl::Status Plain(DecodedTensor* out, WireTensor& t, const std::string& what) {
    if (auto st = Allocate(out, t.dtype, t.shape, what); !st.ok()) return st;
    const size_t n = t.length();
    if (!CopyPiece(t, out->data, out->bytes)) return Malformed(absl::StrCat(what, ": bytes past the tensor's end"));
    received_[out] += n;
    return absl::OkStatus();
  }

  absl::Status Allocate(DecodedTensor* out, v1::DType dtype, const std::vector<int64_t>& shape,
                        const std::string& what) {
    if (out->defined()) {
      if (out->dtype != dtype || out->shape != shape) return Malformed(absl::StrCat(what, ": parts disagree on shape"));
      return absl::OkStatus();
    }
    if (DtypeSize(dtype) == 0) return Malformed(absl::StrCat(what, ": dtype ", static_cast<int>(dtype), " is unknown"));
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0 || d > (int64_t{1} << 40)) return Malformed(absl::StrCat(what, ": shape"));
      numel *= d;
    }
    out->dtype = dtype;
    out->shape = shape;
    out->bytes = static_cast<size_t>(numel) * DtypeSize(dtype);
    if (out->bytes > 0) {
      out->buffer = options_->pool->Acquire(out->bytes);
      out->data = out->buffer->data();
    }
    received_[out] = 0;
    return absl::OkStatus();
  }

  NodeState& Node(const std::string& type) {
    auto [it, inserted] = nodes_.emplace(type, NodeState());
    if (inserted) {
      it->second.order = nodes_.size() - 1;
      it->second.out.node_type = type;
      if (!spare_.empty()) {
        it->second.cached = std::move(spare_.back().cached);
        it->second.sent_rows = std::move(spare_.back().sent_rows);
        it->second.staged = std::move(spare_.back().staged);
        spare_.pop_back();
      }
    }
    return it->second;
  }

  absl::Status NodeTensor(const std::string& type, int field, WireTensor& t) {
    NodeState& s = Node(type);
    DecodedNodes& n = s.out;
    const std::string what = absl::StrCat("node type '", type, "'");
    switch (field) {
      case v1::NodeTensors::kNumSampledNodesFieldNumber: return Plain(&n.num_sampled_nodes, t, what);
      case v1::NodeTensors::kOwnersFieldNumber: {
        if (auto st = Plain(&n.owners, t, what + " owners"); !st.ok()) return st;
        const bool whole = received_[&n.owners] == n.owners.bytes;
        return s.mask_from_owners && whole ? OwnersWhole(&s, n, what) : absl::OkStatus();
      }
      case v1::NodeTensors::kFeatureScaleFieldNumber:
      case v1::NodeTensors::kFeatureOffsetFieldNumber: {
        std::vector<float>& v = field == v1::NodeTensors::kFeatureScaleFieldNumber ? s.scale : s.offset;
        if (t.dtype != v1::DTYPE_FLOAT32 || t.shape.size() != 1 || t.byte_offset != 0 || t.length() != t.bytes()) {
          return Malformed(what + ": feature scale or offset");
        }
        v.resize(t.shape[0]);
        t.data.Copy(reinterpret_cast<char*>(v.data()), t.length());
        if (!options_->decode_features) {
          DecodedTensor* out = field == v1::NodeTensors::kFeatureScaleFieldNumber ? &n.x_scale : &n.x_offset;
          if (auto st = Allocate(out, t.dtype, t.shape, what); !st.ok()) return st;
          std::memcpy(out->data, v.data(), out->bytes);
          received_[out] = out->bytes;
        }
        return absl::OkStatus();
      }
      case v1::NodeTensors::kCachedFieldNumber: {
        if (t.dtype != v1::DTYPE_BOOL || t.shape.size() != 1 || t.shape[0] < 0) return Malformed(what + ": cached mask");
        if (s.mask_from_owners) return Malformed(what + ": a cached mask after the rows it places");
        const size_t nodes = static_cast<size_t>(t.shape[0]);
        if ((s.cached_received > 0 && s.cached.size() != nodes) || (s.wire != v1::DTYPE_UNSPECIFIED && s.nodes != nodes)) {
          return Malformed(what + ": the cached mask disagrees with the batch's nodes");
        }
        s.cached.resize(nodes);
        const size_t length = t.length();
        if (!CopyPiece(t, reinterpret_cast<char*>(s.cached.data()), nodes)) return Malformed(what + ": cached mask");
        s.cached_received += length;
        if (s.cached_received == s.cached.size()) Map(&s);
        return absl::OkStatus();
      }
      case v1::NodeTensors::kFeaturesFieldNumber: return Features(&s, n, t, what);
      case v1::NodeTensors::kLabelsFieldNumber: {
        // One per node, or with owners one per node the sender owns (put in place in Finish).
        if (!OwnLabels::IsForm(n, t)) return Plain(&n.y, t, what + " labels");
        if (auto st = s.own_labels.Add(n, options_->sender, t, what + " labels"); !st.ok()) return st;
        return Allocate(&n.y, v1::DTYPE_INT64, {static_cast<int64_t>(n.n_id.bytes / 8)}, what + " labels");
      }
      default: break;
    }
    // The tensors that travel as they are (batch_tensors.h); fields this client does not know
    // are skipped.
    for (const auto& f : kNodeFields<DecodedTensor>) {
      if (f.wire == field && f.form == WireForm::kPlain) return Plain(&(n.*f.member), t, absl::StrCat(what, " ", f.name));
    }
    return absl::OkStatus();
  }

  // Node types whose ids and owners just became whole (every tensor was named in part 0).
  void AnnounceOwners() {
    auto whole = [this](const DecodedTensor& t) { return t.defined() && received_.count(&t) && received_[&t] == t.bytes; };
    for (auto& [type, s] : nodes_) {
      if (s.owners_announced || !whole(s.out.n_id) || !whole(s.out.owners)) continue;
      s.owners_announced = true;
      options_->owners_known(s.out);
    }
  }

  // Rows with owners and no cached mask (the trainer caches no rows) are those of the nodes the
  // sender owns: the mask is theirs, known once the owners are whole (rows before then wait).
  absl::Status StartMaskFromOwners(NodeState* s, const DecodedNodes& n, const std::string& what) {
    if (options_->sender < 0) return Malformed(what + ": rows left to owners, and the sender's partition is not known");
    s->mask_from_owners = true;
    s->cached.assign(n.n_id.bytes / 8, 0);  // the ids, named in the first part, say how many
    return received_[&n.owners] == n.owners.bytes ? OwnersWhole(s, n, what) : absl::OkStatus();
  }
  absl::Status OwnersWhole(NodeState* s, const DecodedNodes& n, const std::string& what) {
    if (auto st = MaskFromOwners(n, options_->sender, &s->cached, what); !st.ok()) return st;
    s->cached_received = s->cached.size();
    Map(s);
    return absl::OkStatus();
  }

  // The node of each transmitted row, once the cached mask is whole.
  void Map(NodeState* s) {
    s->sent_rows.clear();
    for (size_t i = 0; i < s->cached.size(); ++i) {
      if (!s->cached[i]) s->sent_rows.push_back(static_cast<int64_t>(i));
    }
  }

  absl::Status Features(NodeState* s, DecodedNodes& n, WireTensor& t, const std::string& what) {
    if (t.shape.size() != 2) return Malformed(what + ": features are not [rows, dim]");
    if (s->wire == v1::DTYPE_UNSPECIFIED) {
      if (s->cached.empty() && s->cached_received == 0 && n.owners.defined()) {
        if (auto st = StartMaskFromOwners(s, n, what); !st.ok()) return st;
      }
      s->wire = t.dtype;
      s->rows = t.shape[0];
      s->dim = t.shape[1];
      s->wire_row_bytes = RowBytes(t.dtype, s->dim);
      if (s->wire_row_bytes == 0 && s->dim > 0) return Malformed(what + ": features of an unknown dtype");
      const bool cache = !s->cached.empty() || s->cached_received > 0;
      const int64_t nodes = cache ? static_cast<int64_t>(s->cached.size()) : s->rows;
      const v1::DType out = OutputType(*s);
      // Codes handed on as they came: packed ones as a byte matrix of their rows.
      const int64_t columns = PackedBits(s->wire) > 0 && out == v1::DTYPE_UINT8
                                  ? static_cast<int64_t>(s->wire_row_bytes)
                                  : s->dim;
      if (auto st = Allocate(&n.x, out, {nodes, columns}, what + " features"); !st.ok()) return st;
      s->nodes = static_cast<size_t>(nodes);
      s->out_row_bytes = static_cast<size_t>(columns) * DtypeSize(out);
      if (!options_->decode_features && Codes(*s)) n.feature_bits = CodeBits(s->wire);
    } else if (t.dtype != s->wire || t.shape[0] != s->rows || t.shape[1] != s->dim) {
      return Malformed(what + ": feature parts disagree");
    }
    const size_t n_bytes = t.length();
    if (s->wire_row_bytes == 0 || t.byte_offset % s->wire_row_bytes != 0 || n_bytes % s->wire_row_bytes != 0 ||
        t.byte_offset + n_bytes > static_cast<size_t>(s->rows) * s->wire_row_bytes) {
      return Malformed(absl::StrCat(what, ": feature bytes [", t.byte_offset, ", ", t.byte_offset + n_bytes, ") of part ",
                                    next_part_ - 1, " are not whole ", s->wire_row_bytes, "-byte rows of ", s->rows));
    }
    received_[&n.x] += n_bytes / s->wire_row_bytes * s->out_row_bytes;
    const bool cache = !s->cached.empty();
    const bool mapped = !cache || s->cached_received == s->cached.size();
    const bool transform = OutputType(*s) != s->wire || Codes(*s);
    if (!cache && !transform) return t.data.Copy(n.x.data + t.byte_offset, n_bytes) ? absl::OkStatus() : Malformed(what);
    const bool codes_first = (s->wire == v1::DTYPE_UINT8 || PackedBits(s->wire) > 0) && s->scale.empty();
    if (!mapped || (options_->decode_features && codes_first)) {
      // Rows whose place (or scale) is not known yet wait until the batch is whole.
      if (n_bytes == 0) return absl::OkStatus();
      if (s->staged_rows.empty()) s->staged.resize(static_cast<size_t>(s->rows) * s->wire_row_bytes);
      s->staged_rows.emplace_back(t.byte_offset / s->wire_row_bytes, n_bytes / s->wire_row_bytes);
      batch_->staged_bytes += n_bytes;
      return t.data.Copy(s->staged.data() + t.byte_offset, n_bytes) ? absl::OkStatus() : Malformed(what);
    }
    return DecodeRows(s, n, t.data, t.byte_offset / s->wire_row_bytes, n_bytes / s->wire_row_bytes, what);
  }

  static bool Codes(const NodeState& s) { return IsCodes(s.wire, !s.scale.empty()); }
  v1::DType OutputType(const NodeState& s) const {
    return OutputDtype(s.wire, !s.scale.empty(), options_->decode_features);
  }

  // Decodes transmitted rows [first, first + count) into their nodes' rows of the output.
  absl::Status DecodeRows(NodeState* s, DecodedNodes& n, Reader& in, size_t first, size_t count,
                          const std::string& what) {
    std::vector<char> scratch(s->wire_row_bytes);
    const size_t dim = static_cast<size_t>(s->dim);
    const bool decode = OutputType(*s) != s->wire && options_->decode_features;
    const bool quantised = decode && s->wire != v1::DTYPE_FLOAT16 && s->wire != v1::DTYPE_BFLOAT16;
    if (quantised && count > 0 && (s->scale.size() != dim || s->offset.size() != dim)) {
      return Malformed(what + ": scale and offset");
    }
    for (size_t r = 0; r < count; ++r) {
      const char* src = in.Contiguous(s->wire_row_bytes, scratch.data());
      if (src == nullptr) return Malformed(what + ": feature rows");
      const size_t row = first + r;
      if (!s->cached.empty() && row >= s->sent_rows.size()) return Malformed(what + ": rows beyond the cached mask");
      const size_t node = s->cached.empty() ? row : static_cast<size_t>(s->sent_rows[row]);
      if (node >= s->nodes) return Malformed(what + ": feature rows beyond the batch's nodes");
      char* dst = n.x.data + node * s->out_row_bytes;
      if (decode) {
        DecodeFeatureRows(s->wire, src, 1, dim, s->scale.data(), s->offset.data(), reinterpret_cast<float*>(dst));
      } else {
        CopyRowUncached(dst, src, s->wire_row_bytes);
      }
    }
    FinishRowCopies();
    return absl::OkStatus();
  }

  absl::Status EdgeTensor(const std::string& type, int field, WireTensor& t) {
    auto [it, inserted] = edges_.emplace(type, EdgeState());
    if (inserted) {
      it->second.order = edges_.size() - 1;
      it->second.out.edge_type = type;
    }
    DecodedEdges& e = it->second.out;
    const std::string what = absl::StrCat("edge type '", type, "'");
    switch (field) {
      case v1::EdgeTensors::kRowsFieldNumber:
      case v1::EdgeTensors::kColsFieldNumber: {
        // Messages flow from the sampled neighbour to the node that sampled it: with CSR rows
        // as sources the rows are the samplers, else the neighbours.
        const bool rows = field == v1::EdgeTensors::kRowsFieldNumber;
        const int line = rows == options_->rows_are_sources ? 1 : 0;
        return Widen(&e.edge_index, line, t, what + (rows ? " rows" : " cols"));
      }
      case v1::EdgeTensors::kNumSampledEdgesFieldNumber: return Plain(&e.num_sampled_edges, t, what);
      default: break;
    }
    for (const auto& f : kEdgeFields<DecodedTensor>) {
      if (f.wire == field && f.form == WireForm::kPlain) return Plain(&(e.*f.member), t, absl::StrCat(what, " ", f.name));
    }
    return absl::OkStatus();
  }

  // Local indices (int32, or int64 from older servers) into line `line` of int64 [2, m].
  absl::Status Widen(DecodedTensor* out, int line, WireTensor& t, const std::string& what) {
    if ((t.dtype != v1::DTYPE_INT32 && t.dtype != v1::DTYPE_INT64) || t.shape.size() != 1) {
      return Malformed(what + ": expected int32 or int64 [m]");
    }
    const int64_t m = t.shape[0];
    if (auto st = Allocate(out, v1::DTYPE_INT64, {2, m}, what); !st.ok()) return st;
    const size_t written = t.length() / DtypeSize(t.dtype) * 8;
    if (auto st = WidenIndices(t, reinterpret_cast<int64_t*>(out->data) + line * m, what); !st.ok()) return st;
    received_[out] += written;
    return absl::OkStatus();
  }

  // The batch's last part is in: staged rows, cached rows, and a check that every tensor is whole.
  absl::Status Finish() {
    for (auto& [type, s] : nodes_) {
      DecodedNodes& n = s.out;
      const std::string what = absl::StrCat("node type '", type, "'");
      if (!s.staged_rows.empty() && !s.cached.empty()) Map(&s);
      for (const auto& [first, rows] : s.staged_rows) {
        std::vector<Span> staged = {{s.staged.data() + first * s.wire_row_bytes, rows * s.wire_row_bytes}};
        Reader in(&staged);
        if (auto st = DecodeRows(&s, n, in, first, rows, what); !st.ok()) return st;
      }
      if (!s.cached.empty() && n.x.defined()) {
        if (auto st = FillCached(s, n, what); !st.ok()) return st;
      }
      if (s.own_labels.active()) {
        if (auto st = s.own_labels.Place(n, options_->sender, &n.y, what + " labels"); !st.ok()) return st;
        received_[&n.y] = n.y.bytes;
      }
      if (n.y.defined() && n.y.bytes != n.n_id.bytes) return Malformed(what + ": labels do not match ids");
    }
    for (const auto& [tensor, bytes] : received_) {
      if (bytes != tensor->bytes) return Malformed("the batch ended with a tensor incomplete");
    }
    batch_->nodes.resize(nodes_.size());
    for (auto& [type, s] : nodes_) batch_->nodes[s.order] = std::move(s.out);
    batch_->edges.resize(edges_.size());
    for (auto& [type, e] : edges_) batch_->edges[e.order] = std::move(e.out);
    for (DecodedPpr& p : ppr_) batch_->ppr.push_back(std::move(p));
    return absl::OkStatus();
  }

  absl::Status FillCached(const NodeState& s, DecodedNodes& n, const std::string& what) {
    if (s.cached.size() != s.nodes) return Malformed(what + ": the cached mask disagrees with the feature matrix");
    received_[&n.x] += static_cast<size_t>(std::count(s.cached.begin(), s.cached.end(), 1)) * s.out_row_bytes;
    const FeatureCache::Type* cache = options_->cache != nullptr ? options_->cache->Find(n.node_type) : nullptr;
    return FillCachedRows(cache, s.cached, s.out_row_bytes, &n, what);
  }

  const DecodeOptions* options_;
  std::shared_ptr<DecodedBatch> batch_;
  uint32_t num_parts_ = 0;
  uint32_t next_part_ = 0;
  std::map<std::string, NodeState> nodes_;
  std::vector<Spare> spare_;  // working memory of earlier batches
  std::map<std::string, EdgeState> edges_;
  std::deque<DecodedPpr> ppr_;
  std::map<const DecodedTensor*, size_t> received_;  // bytes written per output tensor
};

BatchDecoder::BatchDecoder(DecodeOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>(&options_)) {
  if (options_.pool == nullptr) options_.pool = BufferPool::Create();
}

BatchDecoder::~BatchDecoder() = default;

absl::StatusOr<std::shared_ptr<DecodedBatch>> BatchDecoder::Add(const std::vector<Span>& message) {
  bool complete = false;
  absl::Status status = state_->Add(message, &complete);
  if (!status.ok()) {
    state_->Take();  // a broken batch is dropped; the stream ends with the error anyway
    return status;
  }
  if (!complete) return std::shared_ptr<DecodedBatch>();
  return state_->Take();
}

}  // namespace graphstore::client
