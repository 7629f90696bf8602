#ifndef GRAPHSTORE_SERVER_GRAPH_MANIFEST_H_
#define GRAPHSTORE_SERVER_GRAPH_MANIFEST_H_

// Reading, writing and checking a partition's manifest.json (graphstore.v1.PartitionManifest
// in protobuf's JSON mapping). The directory layout is in docs/format.md.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graphstore/v1/manifest.pb.h"

namespace graphstore {

/// The on-disk format version this build reads and writes.
inline constexpr int kFormatVersion = 1;
/// File name of the manifest inside a partition directory.
inline constexpr char kManifestFile[] = "manifest.json";

/// "src__rel__dst".
std::string EdgeTypeName(const v1::ManifestEdgeType& type);

/// Reads `dir`/manifest.json and checks it (see ValidateManifest). Errors name the file.
absl::StatusOr<v1::PartitionManifest> ReadManifest(const std::string& dir);

/// Writes `dir`/manifest.json, pretty-printed.
absl::Status WriteManifest(const std::string& dir, const v1::PartitionManifest& manifest);

/// Checks internal consistency: version, partition numbers, edge direction, type names unique
/// and well formed, edge types naming known node types, non-negative counts, feature dtypes.
/// `file` prefixes every message.
absl::Status ValidateManifest(const v1::PartitionManifest& manifest, const std::string& file);

/// Whether `name` is usable as a node type or relation name: [A-Za-z0-9_-]+ without "__".
bool IsValidTypeName(const std::string& name);

/// Most nodes of a type and edges of a type (2^40): far above any real graph, and low enough
/// that no size derived from them overflows.
inline constexpr int64_t kMaxCount = int64_t{1} << 40;
/// Most splits of a node type.
inline constexpr int kMaxSplits = 64;
/// Widest feature row.
inline constexpr int64_t kMaxFeatureDim = int64_t{1} << 20;

/// Whether `split` would be stored under the name of a file the format already puts in a node
/// type's directory (ids, features, labels, ...).
bool IsReservedNodeFile(const std::string& split);

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_GRAPH_MANIFEST_H_
