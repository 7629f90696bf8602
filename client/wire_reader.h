#ifndef GRAPHSTORE_CLIENT_WIRE_READER_H_
#define GRAPHSTORE_CLIENT_WIRE_READER_H_

// Protobuf wire format read straight from received pieces (client/wire_decoder.h's Span): field
// by field, within a limit, copying bytes out only where asked. The decoder's reading half; no
// protobuf message is built.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "client/wire_decoder.h"

namespace graphstore::client::wire {

constexpr uint32_t kVarintType = 0;
constexpr uint32_t kFixed64Type = 1;
constexpr uint32_t kLengthType = 2;
constexpr uint32_t kFixed32Type = 5;


// Reads protobuf wire format from received pieces, within a limit.
class Reader {
 public:
  // A reader of nothing (to be assigned) when `spans` is null.
  explicit Reader(const std::vector<Span>* spans) : spans_(spans) {
    if (spans == nullptr) return;
    for (const Span& s : *spans) left_ += s.size;
    Normalize();
  }

  size_t left() const { return left_; }

  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (left_ == 0) return false;
      const uint8_t b = static_cast<uint8_t>((*spans_)[index_].data[offset_]);
      Advance(1);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }

  bool Skip(size_t n) {
    if (n > left_) return false;
    while (n > 0) {
      const size_t k = std::min(n, (*spans_)[index_].size - offset_);
      Advance(k);
      n -= k;
    }
    return true;
  }

  bool Copy(char* dst, size_t n) {
    if (n > left_) return false;
    while (n > 0) {
      const size_t k = std::min(n, (*spans_)[index_].size - offset_);
      std::memcpy(dst, (*spans_)[index_].data + offset_, k);
      Advance(k);
      dst += k;
      n -= k;
    }
    return true;
  }

  // The next n bytes as one contiguous run: in place when they are in one piece, else copied
  // into `scratch` (room for n). Null when fewer are left.
  const char* Contiguous(size_t n, char* scratch) {
    if (n > left_) return nullptr;
    if (n == 0) return scratch;
    const Span& s = (*spans_)[index_];
    if (s.size - offset_ >= n) {
      const char* p = s.data + offset_;
      Advance(n);
      return p;
    }
    Copy(scratch, n);
    return scratch;
  }

  // A reader of the next n bytes; this one moves past them.
  bool Sub(size_t n, Reader* sub) {
    if (n > left_) return false;
    *sub = *this;
    sub->left_ = n;
    return Skip(n);
  }

  bool SkipField(uint32_t type) {
    uint64_t v;
    switch (type) {
      case kVarintType: return Varint(&v);
      case kFixed64Type: return Skip(8);
      case kLengthType: return Varint(&v) && Skip(v);
      case kFixed32Type: return Skip(4);
      default: return false;
    }
  }

 private:
  void Advance(size_t n) {
    offset_ += n;
    left_ -= n;
    Normalize();
  }
  void Normalize() {
    while (left_ > 0 && index_ < spans_->size() && offset_ == (*spans_)[index_].size) {
      ++index_;
      offset_ = 0;
    }
  }

  const std::vector<Span>* spans_;
  size_t index_ = 0;
  size_t offset_ = 0;
  size_t left_ = 0;
};

// Calls `field(number, type, reader)` for every field of a message; `field` consumes the value
// (or returns kSkip to have it skipped).
enum class Handled { kDone, kSkip, kError };
template <typename F>
bool ForEachField(Reader r, F field) {
  while (r.left() > 0) {
    uint64_t tag;
    if (!r.Varint(&tag)) return false;
    const int number = static_cast<int>(tag >> 3);
    const uint32_t type = static_cast<uint32_t>(tag & 7);
    switch (field(number, type, r)) {
      case Handled::kDone: break;
      case Handled::kSkip:
        if (!r.SkipField(type)) return false;
        break;
      case Handled::kError: return false;
    }
  }
  return true;
}

// A length-delimited field's reader.
inline bool LengthDelimited(uint32_t type, Reader& r, Reader* sub) {
  uint64_t n;
  return type == kLengthType && r.Varint(&n) && r.Sub(n, sub);
}

inline bool StringField(uint32_t type, Reader& r, std::string* out) {
  Reader sub{nullptr};
  if (!LengthDelimited(type, r, &sub)) return false;
  out->resize(sub.left());
  return sub.Copy(out->data(), out->size());
}

// One Tensor message as received: where its bytes go and where they are.
struct WireTensor {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  uint64_t byte_offset = 0;
  bool has_data = false;
  Reader data{nullptr};
  bool shared = false;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t bytes() const { return static_cast<size_t>(numel()) * DtypeSize(dtype); }
  size_t length() const { return has_data ? data.left() : 0; }
};

// Copies piece `t` of a tensor of `size` bytes to its offset in `out`; false when it does not fit
// or its bytes are short.
inline bool CopyPiece(WireTensor& t, char* out, size_t size) {
  const size_t length = t.length();  // before the copy moves the reader past the bytes
  return t.byte_offset + length <= size && (length == 0 || t.data.Copy(out + t.byte_offset, length));
}

inline bool ParseTensor(Reader r, WireTensor* t) {
  return ForEachField(r, [t](int number, uint32_t type, Reader& in) {
    uint64_t v;
    switch (number) {
      case v1::Tensor::kDtypeFieldNumber:
        if (type != kVarintType || !in.Varint(&v)) return Handled::kError;
        t->dtype = static_cast<v1::DType>(v);
        return Handled::kDone;
      case v1::Tensor::kShapeFieldNumber:
        if (type == kVarintType) {
          if (!in.Varint(&v)) return Handled::kError;
          t->shape.push_back(static_cast<int64_t>(v));
          return Handled::kDone;
        } else {
          Reader packed{nullptr};
          if (!LengthDelimited(type, in, &packed)) return Handled::kError;
          while (packed.left() > 0) {
            if (!packed.Varint(&v)) return Handled::kError;
            t->shape.push_back(static_cast<int64_t>(v));
          }
          return Handled::kDone;
        }
      case v1::Tensor::kDataFieldNumber:
        if (!LengthDelimited(type, in, &t->data)) return Handled::kError;
        t->has_data = true;
        return Handled::kDone;
      case v1::Tensor::kSharedFieldNumber:
        t->shared = true;
        return Handled::kSkip;
      case v1::Tensor::kByteOffsetFieldNumber:
        if (type != kVarintType || !in.Varint(&t->byte_offset)) return Handled::kError;
        return Handled::kDone;
      default:
        return Handled::kSkip;
    }
  });
}

// A SampledMessage's coordinates, read before its entries.
struct Header {
  uint64_t channel_id = 0;
  int64_t epoch = 0, batch_index = 0, num_batches = 0;
  uint32_t part = 0, num_parts = 0;
};

inline bool ReadHeader(const std::vector<Span>& message, Header* h) {
  return ForEachField(Reader(&message), [h](int number, uint32_t type, Reader& in) {
    uint64_t v;
    switch (number) {
      case v1::SampledMessage::kChannelIdFieldNumber:
      case v1::SampledMessage::kEpochFieldNumber:
      case v1::SampledMessage::kBatchIndexFieldNumber:
      case v1::SampledMessage::kNumBatchesFieldNumber:
      case v1::SampledMessage::kPartFieldNumber:
      case v1::SampledMessage::kNumPartsFieldNumber:
        if (type != kVarintType || !in.Varint(&v)) return Handled::kError;
        if (number == v1::SampledMessage::kChannelIdFieldNumber) h->channel_id = v;
        if (number == v1::SampledMessage::kEpochFieldNumber) h->epoch = static_cast<int64_t>(v);
        if (number == v1::SampledMessage::kBatchIndexFieldNumber) h->batch_index = static_cast<int64_t>(v);
        if (number == v1::SampledMessage::kNumBatchesFieldNumber) h->num_batches = static_cast<int64_t>(v);
        if (number == v1::SampledMessage::kPartFieldNumber) h->part = static_cast<uint32_t>(v);
        if (number == v1::SampledMessage::kNumPartsFieldNumber) h->num_parts = static_cast<uint32_t>(v);
        return Handled::kDone;
      default:
        return Handled::kSkip;
    }
  });
}

}  // namespace graphstore::client::wire

#endif  // GRAPHSTORE_CLIENT_WIRE_READER_H_
