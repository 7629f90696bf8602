#include "client/edge_index.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace graphstore::client {

absl::Status WidenIndices(wire::WireTensor& t, int64_t* line, const std::string& what) {
  const size_t element = DtypeSize(t.dtype);
  const size_t m = static_cast<size_t>(t.shape[0]);
  const size_t n = t.length();
  auto malformed = [&](const char* why) {
    return absl::DataLossError(absl::StrCat("malformed sampled message: ", what, why));
  };
  if (t.byte_offset % element != 0 || n % element != 0 || t.byte_offset + n > m * element) {
    return malformed(": bytes are not whole indices");
  }
  int64_t* dst = line + t.byte_offset / element;
  if (element == 8) return t.data.Copy(reinterpret_cast<char*>(dst), n) ? absl::OkStatus() : malformed("");
  constexpr size_t kChunk = 4096;
  int32_t chunk[kChunk];
  for (size_t done = 0; done < n / 4;) {
    const size_t k = std::min(kChunk, n / 4 - done);
    if (!t.data.Copy(reinterpret_cast<char*>(chunk), k * 4)) return malformed("");
    for (size_t j = 0; j < k; ++j) dst[done + j] = chunk[j];
    done += k;
  }
  return absl::OkStatus();
}

}  // namespace graphstore::client
