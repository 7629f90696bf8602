#include "server/service/wire_encoder.h"

#include <algorithm>

namespace graphstore {
namespace {

constexpr uint32_t kVarintType = 0;
constexpr uint32_t kLengthType = 2;

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Field numbers of every message here are below 16: a tag is one byte.
size_t LengthFieldSize(size_t length) { return 1 + VarintSize(length) + length; }
size_t VarintFieldSize(uint64_t v) { return v == 0 ? 0 : 1 + VarintSize(v); }

// The bytes of tensor `t` one message carries: [offset, offset + length).
struct TensorSlice {
  const TensorField* tensor = nullptr;
  size_t offset = 0;
  size_t length = 0;
};

size_t PackedShapeSize(const TensorField& t) {
  size_t n = 0;
  for (int64_t d : t.shape) n += VarintSize(static_cast<uint64_t>(d));
  return n;
}

size_t TensorSize(const TensorSlice& s) {
  const TensorField& t = *s.tensor;
  size_t n = VarintFieldSize(static_cast<uint64_t>(t.dtype));
  if (!t.shape.empty()) n += LengthFieldSize(PackedShapeSize(t));
  n += VarintFieldSize(s.offset);
  if (s.length > 0) n += LengthFieldSize(s.length);
  return n;
}

// One entry message as a part carries it: its strings and some of its tensors' bytes.
struct EntrySlice {
  const MessageEntry* entry = nullptr;
  std::vector<TensorSlice> tensors;
};

size_t EntrySize(const EntrySlice& e) {
  size_t n = 0;
  for (const auto& [number, value] : e.entry->strings) n += value.empty() ? 0 : LengthFieldSize(value.size());
  for (const TensorSlice& t : e.tensors) n += LengthFieldSize(TensorSize(t));
  return n;
}

// Appends encoded bytes to a part: small fields to the arena (consecutive ones merge into one
// segment), large tensor bytes as references.
class Writer {
 public:
  Writer(EncodedMessage* out, size_t copy_below) : out_(out), copy_below_(copy_below) {}

  void StartPart() { pieces_.emplace_back(); }

  void Varint(uint64_t v) {
    char buf[10];
    size_t n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    Arena(buf, n);
  }
  void Tag(int field, uint32_t type) { Varint((static_cast<uint64_t>(field) << 3) | type); }
  void VarintField(int field, uint64_t v) {
    if (v == 0) return;
    Tag(field, kVarintType);
    Varint(v);
  }
  // Bytes written as they are, copied.
  void Raw(const std::string& s) { Arena(s.data(), s.size()); }
  // A length-delimited field whose bytes are referenced (or copied below copy_below).
  void BytesField(int field, const char* data, size_t n) {
    Tag(field, kLengthType);
    Varint(n);
    Bytes(data, n);
  }
  void StringField(int field, const std::string& s) {
    if (s.empty()) return;
    Tag(field, kLengthType);
    Varint(s.size());
    Arena(s.data(), s.size());
  }

  void Tensor(int field, const TensorSlice& s) {
    const TensorField& t = *s.tensor;
    Tag(field, kLengthType);
    Varint(TensorSize(s));
    VarintField(v1::Tensor::kDtypeFieldNumber, static_cast<uint64_t>(t.dtype));
    if (!t.shape.empty()) {
      Tag(v1::Tensor::kShapeFieldNumber, kLengthType);
      Varint(PackedShapeSize(t));
      for (int64_t d : t.shape) Varint(static_cast<uint64_t>(d));
    }
    VarintField(v1::Tensor::kByteOffsetFieldNumber, s.offset);
    if (s.length > 0) {
      Tag(v1::Tensor::kDataFieldNumber, kLengthType);
      Varint(s.length);
      Bytes(t.data + s.offset, s.length);
    }
  }

  void Entry(const EntrySlice& e) {
    Tag(e.entry->number, kLengthType);
    Varint(EntrySize(e));
    for (const auto& [number, value] : e.entry->strings) StringField(number, value);
    for (const TensorSlice& t : e.tensors) Tensor(t.tensor->number, t);
  }

  // Resolves the arena offsets into pointers; the arena does not change after this.
  void Finish() {
    for (auto& part : pieces_) {
      std::vector<EncodedMessage::Segment>& segments = out_->parts.emplace_back();
      for (const Piece& p : part) {
        segments.push_back({p.in_arena ? out_->arena.data() + p.offset : p.ptr, p.size});
        out_->bytes += p.size;
      }
    }
  }

 private:
  struct Piece {
    bool in_arena = false;
    size_t offset = 0;
    const char* ptr = nullptr;
    size_t size = 0;
  };

  void Arena(const void* data, size_t n) {
    const size_t offset = out_->arena.size();
    out_->arena.append(static_cast<const char*>(data), n);
    std::vector<Piece>& part = pieces_.back();
    if (!part.empty() && part.back().in_arena && part.back().offset + part.back().size == offset) {
      part.back().size += n;
      return;
    }
    part.push_back({true, offset, nullptr, n});
  }
  void Bytes(const char* data, size_t n) {
    if (n < copy_below_) return Arena(data, n);
    pieces_.back().push_back({false, 0, data, n});
  }

  EncodedMessage* const out_;
  const size_t copy_below_;
  std::vector<std::vector<Piece>> pieces_;
};

void WriteHeader(Writer& w, const WireHeader& h, uint32_t part, uint32_t num_parts) {
  w.VarintField(v1::SampledMessage::kChannelIdFieldNumber, h.channel_id);
  w.VarintField(v1::SampledMessage::kEpochFieldNumber, static_cast<uint64_t>(h.epoch));
  w.VarintField(v1::SampledMessage::kBatchIndexFieldNumber, static_cast<uint64_t>(h.batch_index));
  w.VarintField(v1::SampledMessage::kNumBatchesFieldNumber, static_cast<uint64_t>(h.num_batches));
  if (num_parts > 1) {
    w.VarintField(v1::SampledMessage::kPartFieldNumber, part);
    w.VarintField(v1::SampledMessage::kNumPartsFieldNumber, num_parts);
  }
}

// Node and edge tensors may continue in later parts; link-prediction and PPR tensors are small
// and always whole in part 0.
bool Splittable(const MessageEntry& e) {
  return e.number == v1::SampledMessage::kNodesFieldNumber || e.number == v1::SampledMessage::kEdgesFieldNumber;
}

}  // namespace

std::unique_ptr<EncodedMessage> EncodeParts(const WireHeader& header, const std::vector<MessageEntry>& entries,
                                            size_t part_bytes, size_t copy_below, std::shared_ptr<const void> owner) {
  auto out = std::make_unique<EncodedMessage>();
  out->owner = std::move(owner);
  const size_t budget = part_bytes > 0 ? part_bytes : SIZE_MAX;

  // Part 0 takes each tensor's leading bytes while the budget lasts; the rest of every tensor
  // that did not fit goes to later parts in chunks of at most the budget.
  std::vector<EntrySlice> first;
  std::vector<EntrySlice> chunks;
  size_t remaining = budget;
  for (const MessageEntry& e : entries) {
    EntrySlice& slice = first.emplace_back();
    slice.entry = &e;
    for (const TensorField& t : e.tensors) {
      // Pieces hold whole rows (whole elements of a vector), so a decoder can place each row
      // as it arrives.
      const size_t unit = !t.shape.empty() && t.shape[0] > 0 ? t.bytes / static_cast<size_t>(t.shape[0]) : 1;
      const size_t chunk = budget == SIZE_MAX ? SIZE_MAX : std::max(unit, budget / std::max<size_t>(unit, 1) * unit);
      const size_t head = Splittable(e) && !t.whole && unit > 0 ? std::min(t.bytes, remaining / unit * unit) : t.bytes;
      remaining -= std::min(remaining, head);
      slice.tensors.push_back({&t, 0, head});
      for (size_t offset = head; offset < t.bytes; offset += std::min(chunk, t.bytes - offset)) {
        chunks.push_back({&e, {{&t, offset, std::min(chunk, t.bytes - offset)}}});
      }
    }
  }
  // Later parts: consecutive chunks while they fit.
  std::vector<std::vector<const EntrySlice*>> later;
  size_t used = budget;
  for (const EntrySlice& c : chunks) {
    const size_t size = c.tensors[0].length;
    if (later.empty() || used + size > budget) {
      later.emplace_back();
      used = 0;
    }
    later.back().push_back(&c);
    used += size;
  }

  const uint32_t num_parts = static_cast<uint32_t>(1 + later.size());
  Writer w(out.get(), copy_below);
  w.StartPart();
  WriteHeader(w, header, 0, num_parts);
  for (const EntrySlice& e : first) w.Entry(e);
  for (size_t k = 0; k < later.size(); ++k) {
    w.StartPart();
    WriteHeader(w, header, static_cast<uint32_t>(k + 1), num_parts);
    for (const EntrySlice* e : later[k]) w.Entry(*e);
  }
  w.Finish();
  return out;
}

std::unique_ptr<EncodedMessage> EncodeWithTensorData(const std::string& head,
                                                     const std::vector<std::pair<int, std::string_view>>& tensor_data,
                                                     size_t copy_below, std::shared_ptr<const void> owner) {
  auto out = std::make_unique<EncodedMessage>();
  out->owner = std::move(owner);
  Writer w(out.get(), copy_below);
  w.StartPart();
  w.Raw(head);
  for (const auto& [field, data] : tensor_data) {
    w.Tag(field, kLengthType);
    w.Varint(LengthFieldSize(data.size()));
    w.BytesField(v1::Tensor::kDataFieldNumber, data.data(), data.size());
  }
  w.Finish();
  return out;
}

std::unique_ptr<EncodedMessage> EncodeWhole(const v1::SampledMessage& message) {
  auto out = std::make_unique<EncodedMessage>();
  message.SerializeToString(&out->arena);
  out->parts.push_back({{out->arena.data(), out->arena.size()}});
  out->bytes = out->arena.size();
  return out;
}

}  // namespace graphstore
