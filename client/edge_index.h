#ifndef GRAPHSTORE_CLIENT_EDGE_INDEX_H_
#define GRAPHSTORE_CLIENT_EDGE_INDEX_H_

// A sampled edge type's local indices as they arrive (EdgeTensors.rows / cols: int32, int64 from
// older servers) widened into one line of the int64 [2, m] edge_index. Part of the wire decoder
// (client/wire_decoder.h).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "client/wire_reader.h"

namespace graphstore::client {

/// Writes the piece `t` of an [m] index tensor (int32 or int64, checked by the caller) at its
/// offset into `line` (m int64 values). DATA_LOSS naming `what` for bytes that are not whole
/// indices within [m].
absl::Status WidenIndices(wire::WireTensor& t, int64_t* line, const std::string& what);

}  // namespace graphstore::client

#endif  // GRAPHSTORE_CLIENT_EDGE_INDEX_H_
