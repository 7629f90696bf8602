#ifndef GRAPHSTORE_SERVER_UTIL_FIELD_H_
#define GRAPHSTORE_SERVER_UTIL_FIELD_H_

// How an error names the request field it concerns, in one way everywhere a request is checked.
// A check states the field relative to the message it checks (`FieldError("slice.rank", " 5 is
// outside [0, 2)")`); whoever nests that message names the outer field (`InField(s, "split")`),
// and the two join into one path: "split.slice.rank 5 is outside [0, 2)". A status that names no
// field yet (a lookup's own error) is prefixed: "split.node_type: no node type 'x'". The path
// travels with the status as a payload, so it can be nested again.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graphstore {

/// The payload key under which a status carries the field path its message starts with.
inline constexpr char kFieldPayload[] = "graphstore/field";

/// An error of `code` about `field`; its message is `field` followed by `detail` (which begins
/// with " " or ": ").
inline absl::Status FieldError(absl::StatusCode code, absl::string_view field, absl::string_view detail) {
  absl::Status s(code, absl::StrCat(field, detail));
  s.SetPayload(kFieldPayload, absl::Cord(field));
  return s;
}

/// An INVALID_ARGUMENT about `field`.
inline absl::Status InvalidField(absl::string_view field, absl::string_view detail) {
  return FieldError(absl::StatusCode::kInvalidArgument, field, detail);
}

/// The field path `s`'s message starts with; empty when it names none.
inline std::string FieldOf(const absl::Status& s) {
  auto p = s.GetPayload(kFieldPayload);
  return p ? std::string(*p) : std::string();
}

/// `s` as an error of the enclosing field `outer`: the paths join ("outer.inner ...") when `s`
/// names a field, and the message is prefixed ("outer: ...") when it does not. OK stays OK.
inline absl::Status InField(const absl::Status& s, absl::string_view outer) {
  if (s.ok()) return s;
  const std::string inner = FieldOf(s);
  if (inner.empty()) return FieldError(s.code(), outer, absl::StrCat(": ", s.message()));
  const absl::string_view rest = s.message().substr(inner.size());
  return FieldError(s.code(), absl::StrCat(outer, ".", inner), rest);
}

/// The checks of a (rank, world_size) slice, naming slice.rank and slice.world_size.
inline absl::Status CheckSlice(int64_t rank, int64_t world_size) {
  if (world_size < 0) return InvalidField("slice.world_size", " must be >= 0");
  if (world_size > 1 && (rank < 0 || rank >= world_size)) {
    return InvalidField("slice.rank", absl::StrCat(" ", rank, " is outside [0, ", world_size, ")"));
  }
  if (world_size <= 1 && rank != 0) return InvalidField("slice.rank", absl::StrCat(" ", rank, " needs slice.world_size > 1"));
  return absl::OkStatus();
}

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_UTIL_FIELD_H_
