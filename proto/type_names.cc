#include "proto/type_names.h"

#include "absl/strings/str_cat.h"

namespace graphstore {

std::string ReverseRelation(const std::string& relation) {
  return relation.rfind("rev_", 0) == 0 ? relation.substr(4) : absl::StrCat("rev_", relation);
}

std::string ReverseEdgeTypeName(const std::string& edge_type) {
  const size_t a = edge_type.find("__");
  const size_t z = edge_type.rfind("__");
  if (a == std::string::npos || a == z) return edge_type;
  return absl::StrCat(edge_type.substr(z + 2), "__", ReverseRelation(edge_type.substr(a + 2, z - a - 2)), "__",
                      edge_type.substr(0, a));
}

}  // namespace graphstore
