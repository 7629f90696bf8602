#include "client/own_nodes.h"

#include "absl/strings/str_cat.h"

namespace graphstore::client {

namespace {

absl::Status Malformed(const std::string& what, const char* why) {
  return absl::DataLossError(absl::StrCat("malformed sampled message: ", what, ": ", why));
}

}  // namespace

absl::Status MaskFromOwners(const DecodedNodes& n, int sender, std::vector<uint8_t>* mask, const std::string& what) {
  if (!n.OwnersMatchIds()) return Malformed(what, "owners do not match ids");
  mask->resize(n.n_id.bytes / 8);
  for (size_t i = 0; i < mask->size(); ++i) (*mask)[i] = n.OwnerAt(i) != sender;
  return absl::OkStatus();
}

absl::Status OwnLabels::Add(const DecodedNodes& n, int sender, wire::WireTensor& t, const std::string& what) {
  if (t.dtype != v1::DTYPE_INT64 || t.shape[0] < 0 || static_cast<size_t>(t.shape[0]) > n.n_id.bytes / 8) {
    return Malformed(what, "neither one per node nor one per node the sender owns");
  }
  if (sender < 0) return Malformed(what, "the sender's own alone, and the sender's partition is not known");
  if (!active_) labels_.resize(static_cast<size_t>(t.shape[0]));
  active_ = true;
  const size_t length = t.length();
  if (t.shape[0] != static_cast<int64_t>(labels_.size()) ||
      !wire::CopyPiece(t, reinterpret_cast<char*>(labels_.data()), labels_.size() * 8)) {
    return Malformed(what, "parts disagree");
  }
  received_ += length;
  return absl::OkStatus();
}

absl::Status OwnLabels::Place(const DecodedNodes& n, int sender, DecodedTensor* y, const std::string& what) const {
  if (received_ != labels_.size() * 8) return Malformed(what, "labels incomplete");
  if (!n.OwnersMatchIds()) return Malformed(what, "owners do not match ids");
  const size_t count = n.n_id.bytes / 8;
  if (y->bytes != count * 8) return Malformed(what, "labels do not match ids");
  auto* out = reinterpret_cast<int64_t*>(y->data);
  size_t k = 0;
  for (size_t i = 0; i < count; ++i) {
    if (n.OwnerAt(i) != sender) {
      out[i] = -1;
    } else if (k < labels_.size()) {
      out[i] = labels_[k++];
    } else {
      return Malformed(what, "fewer labels than nodes the sender owns");
    }
  }
  if (k != labels_.size()) return Malformed(what, "more labels than nodes the sender owns");
  return absl::OkStatus();
}

}  // namespace graphstore::client
