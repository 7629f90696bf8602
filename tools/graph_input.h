#ifndef GRAPHSTORE_TOOLS_GRAPH_INPUT_H_
#define GRAPHSTORE_TOOLS_GRAPH_INPUT_H_

// Reads a graph from the files a user has: edge lists (SNAP-style text or two .npy id arrays),
// node features and labels (.npy) and split id lists, with arbitrary integer node ids. Raw ids
// are remapped per node type to contiguous global ids 0 .. N-1 in ascending raw-id order, and
// the mapping is kept in NodeTypeData::raw_ids.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/dataset/writer.h"

namespace graphstore {

/// The node type of a homogeneous graph (an --edges file without a type).
inline constexpr char kHomogeneousNodeType[] = "node";

/// A file for one node or edge type. An empty type means the graph's only type.
struct TypedFile {
  std::string type;
  std::string path;
};

/// Parses "TYPE=PATH" or "PATH".
TypedFile ParseTypedFile(const std::string& spec);

/// Everything graphstore-partition reads.
struct GraphInputSpec {
  std::string name = "graph";
  /// Edge lists: PATH (text) or "SRC.npy,DST.npy"; type "src__rel__dst", or empty for a
  /// homogeneous graph (node type "node", edge type "node__to__node").
  std::vector<TypedFile> edges;
  /// Text edge lists are "dst src" (e.g. Cora's "cited citing"), not "src dst".
  bool swap_columns = false;
  /// Raw id of each feature/label row (.npy or text); without it, row i is raw id i.
  std::vector<TypedFile> node_ids;
  /// Feature matrices (.npy float32/float64, [rows, dim]).
  std::vector<TypedFile> features;
  /// Label vectors (.npy int64/int32, [rows]).
  std::vector<TypedFile> labels;
  /// Split name ("train", "val", "test") -> files of raw ids.
  std::map<std::string, std::vector<TypedFile>> splits;
  /// Edge weights, one per edge of the type's edge list in its order (.npy float32/float64
  /// 1-D, or text with one number per line); type as in `edges`.
  std::vector<TypedFile> edge_weights;
  /// Node times (.npy int64/int32 or text, one per row; rows as for --labels), for temporal
  /// sampling. Every node of the type needs one.
  std::vector<TypedFile> node_times;
  /// Edge times, one per edge of the type's edge list in its order (.npy int64/int32 or text).
  std::vector<TypedFile> edge_times;
};

/// Reads an edge list: a text file of "a b" pairs (whitespace or comma separated, extra
/// columns ignored, '#' and '%' comment lines skipped), or "SRC.npy,DST.npy". Errors name the
/// file and line.
absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ReadEdgeList(
    const std::string& path, bool swap_columns);

/// Reads a list of ids: .npy (int64 or int32, 1-D) or text, one id per line.
absl::StatusOr<std::vector<int64_t>> ReadIdList(const std::string& path);

/// Reads a float matrix .npy (float32 or float64; 1-D is one column). Returns data and dim.
absl::StatusOr<std::pair<std::vector<float>, int64_t>> ReadFloatMatrix(const std::string& path);

/// The node types and relation of --edges file `f` of `spec` ("src__rel__dst"; none: the
/// homogeneous graph's "node", "to", "node"), into `meta`. InvalidArgument for a malformed type,
/// or one left out where several files are given.
absl::Status EdgeFileType(const GraphInputSpec& spec, const TypedFile& f, EdgeTypeData* meta);

/// Reads and remaps everything into a GraphData (splits from files only).
absl::StatusOr<GraphData> BuildGraph(const GraphInputSpec& spec);

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_GRAPH_INPUT_H_
