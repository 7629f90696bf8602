#ifndef GRAPHSTORE_PROTO_TYPE_NAMES_H_
#define GRAPHSTORE_PROTO_TYPE_NAMES_H_

// Names of edge types and their reverses, shared by the storage, the tools that write datasets
// and the client that presents batches: one rule, so a reverse type means the same everywhere.

#include <string>

namespace graphstore {

/// The reverse relation of `relation`: "rev_<relation>", or `relation` without its "rev_"
/// prefix when it has one (the names PyG's ToUndirected gives).
std::string ReverseRelation(const std::string& relation);

/// The reverse of edge type "src__rel__dst": "dst__<ReverseRelation(rel)>__src"; a name that is
/// not of that form is returned as it is.
std::string ReverseEdgeTypeName(const std::string& edge_type);

}  // namespace graphstore

#endif  // GRAPHSTORE_PROTO_TYPE_NAMES_H_
