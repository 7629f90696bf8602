#ifndef GRAPHSTORE_CLIENT_OWN_NODES_H_
#define GRAPHSTORE_CLIENT_OWN_NODES_H_

// What a server sends of its own nodes alone when the others' rows and labels are left to their
// owners (NodeTensors.owners, rows_from_owners over a socket): which rows are absent, from the
// owners alone when no mask comes, and the labels of the sender's nodes, [k] for the batch's n,
// put in node order. Part of the wire decoder (client/wire_decoder.h).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/decoded_batch.h"
#include "client/wire_reader.h"

namespace graphstore::client {

/// Sizes `mask` to the nodes of `n` and sets it to 1 where `owners` names a partition other
/// than `sender`'s: the rows the message leaves out. DATA_LOSS naming `what` when the owners do
/// not match the ids.
absl::Status MaskFromOwners(const DecodedNodes& n, int sender, std::vector<uint8_t>* mask, const std::string& what);

/// The labels of the sender's nodes alone (NodeTensors.labels of [k], k the nodes `owners` gives
/// to the sender), staged as their pieces arrive and put in place once the batch is whole.
class OwnLabels {
 public:
  /// Whether labels tensor `t` of nodes `n` is in this form: with owners, [k] for k != n.
  static bool IsForm(const DecodedNodes& n, const wire::WireTensor& t) {
    return n.owners.defined() && t.shape.size() == 1 && static_cast<size_t>(t.shape[0]) != n.n_id.bytes / 8;
  }
  /// Whether the labels came in this form.
  bool active() const { return active_; }
  /// A piece of the [k] labels tensor `t` of nodes `n`, sent by partition `sender` (-1: not
  /// known), its bytes read from t.data; DATA_LOSS naming `what` for a tensor not int64 [k] with
  /// k at most the nodes, an unknown sender, or a piece that disagrees with the earlier ones.
  absl::Status Add(const DecodedNodes& n, int sender, wire::WireTensor& t, const std::string& what);
  /// Writes a label for every node of `n` into `y` (int64, one per node): the sender's nodes'
  /// as they came, in node order, -1 at the others' (their owners send those). DATA_LOSS when
  /// the labels are not whole or their count is not the sender's nodes'.
  absl::Status Place(const DecodedNodes& n, int sender, DecodedTensor* y, const std::string& what) const;

 private:
  bool active_ = false;
  std::vector<int64_t> labels_;
  size_t received_ = 0;  // bytes
};

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_OWN_NODES_H_
