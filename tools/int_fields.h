#ifndef GRAPHSTORE_TOOLS_INT_FIELDS_H_
#define GRAPHSTORE_TOOLS_INT_FIELDS_H_

// One line of a text id file (edge lists, id lists): integers separated by whitespace or
// commas, extra columns ignored, '#' and '%' lines comments. Shared by the readers that hold a
// whole file and the one that streams it.

#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace graphstore {

enum class LineKind { kBlank, kValues, kBad };

/// Parses the first `columns` integers of the line [p, e) into `out`. kBlank for an empty or
/// comment line; kBad when a field is missing or not an integer.
inline LineKind ParseIntFields(const char* p, const char* e, int columns, int64_t* out) {
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
  if (p == e || *p == '#' || *p == '%') return LineKind::kBlank;
  for (int c = 0; c < columns; ++c) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r')) ++p;
    char* stop = nullptr;
    errno = 0;
    const long long v = std::strtoll(p, &stop, 10);
    const bool ends_ok =
        stop <= e && (stop == e || *stop == ' ' || *stop == '\t' || *stop == ',' || *stop == '\r');
    if (stop == p || errno != 0 || !ends_ok) return LineKind::kBad;
    out[c] = v;
    p = stop;
  }
  return LineKind::kValues;
}

}  // namespace graphstore

#endif  // GRAPHSTORE_TOOLS_INT_FIELDS_H_
