// UninitializedBytes: resize leaves the bytes as they were instead of clearing them, and every
// other way of filling the vector still writes what it is given.

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "server/util/uninitialized.h"

namespace graphstore {
namespace {

TEST_CASE("resizing within the capacity leaves the bytes unwritten", "[util]") {
  UninitializedBytes v;
  v.reserve(1 << 20);
  const char* data = v.data();
  v.resize(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>(i * 7 + 1);
  // What a pooled sampled subgraph does between batches: cleared, then sized again.
  v.clear();
  v.resize(1 << 20);
  REQUIRE(v.data() == data);
  size_t kept = 0;
  for (size_t i = 0; i < v.size(); ++i) kept += v[i] == static_cast<char>(i * 7 + 1);
  CHECK(kept == v.size());  // a std::vector<char> would have zeroed all of them
}

TEST_CASE("values given to the vector are written", "[util]") {
  UninitializedBytes filled(64, 'x');
  CHECK(std::string(filled.begin(), filled.end()) == std::string(64, 'x'));
  const std::string text = "graphstore";
  UninitializedBytes v(text.begin(), text.end());
  v.push_back('!');
  v.insert(v.end(), text.begin(), text.begin() + 5);
  v.resize(v.size() + 3, 'z');
  CHECK(std::string(v.begin(), v.end()) == "graphstore!graphzzz");
  v.assign(5, 'a');
  CHECK(std::string(v.begin(), v.end()) == "aaaaa");
}

}  // namespace
}  // namespace graphstore
