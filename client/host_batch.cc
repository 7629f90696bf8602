#include "client/host_batch.h"

#include "client/feature_rows.h"

namespace graphstore::client {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const HostNodes* HostBatch::first_nodes() const {
  auto it = nodes.find(first_node_type);
  return it == nodes.end() ? nullptr : &it->second;
}

const HostEdges* HostBatch::first_edges() const {
  auto it = edges.find(first_edge_type);
  return it == edges.end() ? nullptr : &it->second;
}

size_t HostDtypeSize(v1::DType dtype) { return DtypeSize(dtype); }

}  // namespace graphstore::client
