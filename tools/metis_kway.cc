#include "tools/metis_kway.h"

#include "absl/strings/str_cat.h"

namespace graphstore {

absl::StatusOr<std::vector<idx_t>> KwayPartition(KwayGraph* g, int num_partitions, uint64_t seed) {
  idx_t nvtxs = static_cast<idx_t>(g->xadj.size()) - 1, ncon = g->ncon, nparts = num_partitions, cut = 0;
  if (g->adjncy.empty()) g->adjncy.push_back(0);  // METIS wants a valid pointer even without edges
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> part(static_cast<size_t>(nvtxs), 0);
  auto or_null = [](auto& v) { return v.empty() ? nullptr : v.data(); };
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon, g->xadj.data(), g->adjncy.data(), or_null(g->vwgt), nullptr,
                                     or_null(g->adjwgt), &nparts, nullptr, or_null(g->ubvec), options, &cut,
                                     part.data());
  if (rc != METIS_OK) {
    return absl::InternalError(absl::StrCat("METIS_PartGraphKway failed with code ", rc,
                                            rc == METIS_ERROR_MEMORY ? " (out of memory)" : ""));
  }
  return part;
}

}  // namespace graphstore
