#include "tools/dataset/graph_data.h"

#include "absl/strings/str_cat.h"

namespace graphstore {

int FindType(const GraphData& g, const std::string& name) {
  for (int i = 0; i < static_cast<int>(g.node_types.size()); ++i) {
    if (g.node_types[i].name == name) return i;
  }
  return -1;
}

std::string EdgeName(const EdgeTypeData& e) {
  return absl::StrCat(e.src_type, "__", e.relation, "__", e.dst_type);
}

}  // namespace graphstore
