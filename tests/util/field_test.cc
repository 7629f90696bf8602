// How errors name their field: a check's own path, nested paths joined, plain messages prefixed.

#include "server/util/field.h"

#include <catch2/catch.hpp>

#include <string>

namespace graphstore {
namespace {

TEST_CASE("a field error starts with its field and keeps its code", "[field]") {
  const absl::Status s = InvalidField("slice.rank", " 5 is outside [0, 2)");
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) == "slice.rank 5 is outside [0, 2)");
  CHECK(FieldOf(s) == "slice.rank");
}

TEST_CASE("nesting joins the paths, twice over", "[field]") {
  const absl::Status inner = FieldError(absl::StatusCode::kResourceExhausted, "ids[3]", "=9 is not a node");
  const absl::Status once = InField(inner, "input");
  CHECK(once.code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(once.message()) == "input.ids[3]=9 is not a node");
  const absl::Status twice = InField(once, "ablp");
  CHECK(std::string(twice.message()) == "ablp.input.ids[3]=9 is not a node");
  CHECK(FieldOf(twice) == "ablp.input.ids[3]");
}

TEST_CASE("a message that names no field is prefixed, and then nests like one", "[field]") {
  const absl::Status plain = absl::NotFoundError("no node type 'x'");
  CHECK(FieldOf(plain).empty());
  const absl::Status named = InField(plain, "node_type");
  CHECK(std::string(named.message()) == "node_type: no node type 'x'");
  CHECK(named.code() == absl::StatusCode::kNotFound);
  CHECK(std::string(InField(named, "split").message()) == "split.node_type: no node type 'x'");
  CHECK(InField(absl::OkStatus(), "split").ok());
}

TEST_CASE("a slice is checked with its fields named", "[field]") {
  CHECK(CheckSlice(0, 0).ok());
  CHECK(CheckSlice(1, 2).ok());
  CHECK(FieldOf(CheckSlice(0, -1)) == "slice.world_size");
  CHECK(std::string(CheckSlice(2, 2).message()) == "slice.rank 2 is outside [0, 2)");
  CHECK(std::string(CheckSlice(1, 1).message()) == "slice.rank 1 needs slice.world_size > 1");
}

}  // namespace
}  // namespace graphstore
