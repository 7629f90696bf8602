#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "server/graph/npy.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::TempDir;
using testing::WriteFile;

// The exact bytes numpy 1.x writes for np.save(f, np.array([[1.5, 2.5], [3.5, 4.5]], np.float32)).
std::string NumpyFloatMatrix() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size()));
  out.push_back('\0');
  out += header;
  const float values[] = {1.5f, 2.5f, 3.5f, 4.5f};
  out.append(reinterpret_cast<const char*>(values), sizeof(values));
  return out;
}

TEST_CASE("MappedNpy reads a file written by numpy", "[npy]") {
  TempDir dir;
  WriteFile(dir / "m.npy", NumpyFloatMatrix());
  auto f = MappedNpy::Open(dir / "m.npy");
  REQUIRE(f.ok());
  CHECK(f->dtype() == NpyDtype::kFloat32);
  CHECK(f->shape() == std::vector<int64_t>{2, 2});
  CHECK(f->row_width() == 2);
  CHECK(f->data<float>()[3] == 4.5f);
  CHECK(reinterpret_cast<uintptr_t>(f->raw()) % 64 == 0);
}

TEST_CASE("NpyWriter round-trips rows appended in pieces", "[npy]") {
  TempDir dir;
  auto w = NpyWriter::Create(dir / "a.npy", NpyDtype::kInt64, {3});
  REQUIRE(w.ok());
  const int64_t first[] = {1, 2, 3, 4, 5, 6};
  const int64_t second[] = {7, 8, 9};
  REQUIRE((*w)->Append(first, 2).ok());
  REQUIRE((*w)->Append(second, 1).ok());
  REQUIRE((*w)->Finish().ok());
  auto f = MappedNpy::Open(dir / "a.npy");
  REQUIRE(f.ok());
  CHECK(f->shape() == std::vector<int64_t>{3, 3});
  CHECK(f->data<int64_t>()[8] == 9);
  CHECK(f->Expect(NpyDtype::kInt64, {-1, 3}).ok());
}

TEST_CASE("a large array is mapped from a 2 MiB boundary, whole", "[npy]") {
  // Huge pages can back the mapping only when the file's start sits on a 2 MiB boundary.
  TempDir dir;
  auto w = NpyWriter::Create(dir / "big.npy", NpyDtype::kInt64);
  REQUIRE(w.ok());
  std::vector<int64_t> values((size_t{3} << 20) / 8 + 17);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i * 7);
  REQUIRE((*w)->Append(values.data(), static_cast<int64_t>(values.size())).ok());
  REQUIRE((*w)->Finish().ok());
  auto f = MappedNpy::Open(dir / "big.npy");
  REQUIRE(f.ok());
  const uintptr_t data_offset = 128;  // NpyWriter's header
  CHECK((reinterpret_cast<uintptr_t>(f->raw()) - data_offset) % (size_t{2} << 20) == 0);
  REQUIRE(f->num_elements() == static_cast<int64_t>(values.size()));
  CHECK(std::memcmp(f->data<int64_t>(), values.data(), values.size() * 8) == 0);
}

TEST_CASE("an empty array is a valid file", "[npy]") {
  TempDir dir;
  REQUIRE(WriteNpyVector(dir / "e.npy", std::vector<int64_t>{}).ok());
  auto f = MappedNpy::Open(dir / "e.npy");
  REQUIRE(f.ok());
  CHECK(f->num_elements() == 0);
}

TEST_CASE("a missing file is NotFound and names the file", "[npy]") {
  TempDir dir;
  auto f = MappedNpy::Open(dir / "nope.npy");
  REQUIRE(!f.ok());
  CHECK(absl::IsNotFound(f.status()));
  CHECK_THAT(std::string(f.status().message()), Catch::Contains("nope.npy"));
}

TEST_CASE("malformed .npy files are rejected with the file and the problem", "[npy]") {
  TempDir dir;
  const std::string good = NumpyFloatMatrix();
  struct Case {
    std::string name;
    std::string bytes;
    std::string expect;
  };
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  std::string object = good;
  object.replace(object.find("<f4"), 3, "|O8");
  std::string bad_shape = good;
  bad_shape.replace(bad_shape.find("(2, 2)"), 6, "(2, x)");
  // The same header text with one edit, padded back to its length.
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string out = good;
    out.replace(out.find(from), from.size(), to);
    const size_t newline = out.find('\n');
    if (to.size() < from.size()) out.insert(newline, from.size() - to.size(), ' ');
    if (to.size() > from.size()) out.erase(newline - (to.size() - from.size()), to.size() - from.size());
    return out;
  };
  const std::vector<Case> cases = {
      {"empty.npy", "", "empty"},
      {"magic.npy", "PK\x03\x04 not numpy at all", "magic"},
      {"truncated.npy", good.substr(0, good.size() - 5), "truncated"},
      {"trailing.npy", good + "xx", "trailing"},
      {"header.npy", good.substr(0, 20), "header truncated"},
      {"fortran.npy", fortran, "Fortran"},
      {"bigendian.npy", big_endian, "dtype descriptor '>f4'"},
      {"object.npy", object, "dtype descriptor"},
      {"shape.npy", bad_shape, "integer in 'shape'"},
      {"after.npy", edited("), }", "), }x"), "unexpected bytes after the header dict"},
      {"unclosed.npy", edited("), }", "),  "), "expected a quoted key"},
      {"extra_key.npy", edited("), }", "), 'x': 1}"), "unexpected key 'x'"},
      {"twice.npy", edited("'shape': (2, 2), }", "'shape': (2, 2), 'shape': (2, 2)}"), "'shape' appears twice"},
      {"huge.npy", edited("(2, 2)", "(99999999999, 99999999999)"), "more elements than int64"},
      {"not_tuple.npy", edited("(2, 2)", "(4)"), "must be a tuple"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    WriteFile(dir / c.name, c.bytes);
    auto f = MappedNpy::Open(dir / c.name);
    REQUIRE(!f.ok());
    CHECK(f.status().code() == absl::StatusCode::kDataLoss);
    CHECK_THAT(std::string(f.status().message()), Catch::Contains(c.name));
    CHECK_THAT(std::string(f.status().message()), Catch::Contains(c.expect));
  }
}

TEST_CASE("Expect names the file, the actual and the wanted dtype or shape", "[npy]") {
  TempDir dir;
  WriteFile(dir / "m.npy", NumpyFloatMatrix());
  auto f = MappedNpy::Open(dir / "m.npy");
  REQUIRE(f.ok());
  auto dtype = f->Expect(NpyDtype::kInt64, {2, 2});
  CHECK_THAT(std::string(dtype.message()), Catch::Contains("m.npy: dtype is float32, expected int64"));
  auto shape = f->Expect(NpyDtype::kFloat32, {2, 3});
  CHECK_THAT(std::string(shape.message()), Catch::Contains("shape is (2, 2), expected (2, 3)"));
}

}  // namespace
}  // namespace graphstore
