// graphstore.Loader's option table and checks (python/loader_schema.h), without Python.

#include "python/loader_schema.h"

#include <set>

#include "catch2/catch.hpp"

namespace graphstore::python {
namespace {

std::map<std::string, Value> Base() {
  std::map<std::string, Value> v;
  Value servers;
  servers.type = Value::Type::kList;
  servers.list.push_back(Value::Str("127.0.0.1:1"));
  v["servers"] = servers;
  v["num_neighbors"] = Value::Ints({5, 3});
  return v;
}

bool IsTypeError(const absl::Status& s) { return s.GetPayload(kTypeErrorPayload).has_value(); }

TEST_CASE("every option is declared once, documented, PyG's positional ones first", "[schema]") {
  std::set<std::string> names;
  bool keyword_seen = false;
  for (const OptionSpec& o : LoaderOptionSpecs()) {
    CHECK(names.insert(o.name).second);
    CHECK(o.doc.size() > 10);
    if (o.place == Place::kKeyword) keyword_seen = true;
    CHECK_FALSE((keyword_seen && o.place == Place::kPositional));
  }
  for (const char* pyg : {"servers", "num_neighbors", "input_nodes", "batch_size", "shuffle", "drop_last", "replace"}) {
    CHECK(names.count(pyg) == 1);
  }
}

TEST_CASE("defaults build the options a NeighborLoader would get", "[schema]") {
  auto o = BuildLoaderOptions(Base());
  REQUIRE(o.ok());
  CHECK(o->servers == std::vector<std::string>{"127.0.0.1:1"});
  CHECK(o->config.batch_size() == 1);
  CHECK(o->config.num_neighbors_size() == 2);
  CHECK(o->config.with_node_features());
  CHECK(o->split == "train");
  CHECK(o->prefetch == 4);
  CHECK(o->deadline == std::chrono::milliseconds(30000));
  CHECK(o->backend_key.empty());  // the client core names one backend per batch shape
  CHECK(client::DefaultBackendKey(o->config, o->sampler_options).rfind("auto/", 0) == 0);
}

TEST_CASE("the default backend key depends on the batch shape only", "[schema]") {
  auto a = Base(), b = Base(), c = Base();
  b["seed"] = Value::Int(9);  // not a property of the backend
  c["batch_size"] = Value::Int(64);
  auto key = [](const std::map<std::string, Value>& values) {
    auto o = BuildLoaderOptions(values);
    REQUIRE(o.ok());
    return client::DefaultBackendKey(o->config, o->sampler_options);
  };
  const std::string ka = key(a);
  CHECK(key(b) == ka);
  CHECK(key(c) != ka);
}

TEST_CASE("a value of the wrong type is a type error naming the option", "[schema]") {
  for (const auto& [name, value] : std::vector<std::pair<std::string, Value>>{
           {"batch_size", Value::Str("8")}, {"shuffle", Value::Int(1)}, {"deadline", Value::Str("1")},
           {"num_neighbors", Value::Int(3)}, {"feature_encoding", Value::Int(8)}}) {
    auto v = Base();
    v[name] = value;
    auto o = BuildLoaderOptions(v);
    INFO(name);
    REQUIRE_FALSE(o.ok());
    CHECK(IsTypeError(o.status()));
    CHECK_THAT(std::string(o.status().message()), Catch::Contains(name));
  }
}

TEST_CASE("a value out of range is a value error naming the option", "[schema]") {
  for (const auto& [name, value, words] : std::vector<std::tuple<std::string, Value, std::string>>{
           {"batch_size", Value::Int(0), "batch_size must be >= 1"},
           {"num_neighbors", Value::Ints({2, -5}), "num_neighbors[1]"},
           {"feature_encoding", Value::Str("int3"), "feature_encoding"},
           {"rank", Value::Int(1), "rank must be < world_size"},
           {"sampler", Value::Str("walk"), "sampler must be one of"},
           {"deadline", Value::Float(0), "deadline"},
           {"keepalive_timeout", Value::Int(0), "keepalive_timeout"},
           {"device", Value::Str("gpu"), "device"},
           {"time_attr", Value::Str("timestamp"), "time_attr"},
           {"prefetch", Value::Int(0), "prefetch"}}) {
    auto v = Base();
    v[name] = value;
    auto o = BuildLoaderOptions(v);
    INFO(name);
    REQUIRE_FALSE(o.ok());
    CHECK_FALSE(IsTypeError(o.status()));
    CHECK_THAT(std::string(o.status().message()), Catch::Contains(words));
  }
}

TEST_CASE("checks across options", "[schema]") {
  auto v = Base();
  v["input_nodes"] = Value::Ints({1, 2});
  v["input_time"] = Value::Ints({5});
  v["time_attr"] = Value::Str("time");
  CHECK_THAT(std::string(BuildLoaderOptions(v).status().message()), Catch::Contains("input_time has 1 times for 2"));
  v.erase("time_attr");
  CHECK_THAT(std::string(BuildLoaderOptions(v).status().message()), Catch::Contains("input_time needs time_attr"));
  auto w = Base();
  w["weight_attr"] = Value::Str("weight");
  w["weighted"] = Value::Bool(true);
  CHECK_THAT(std::string(BuildLoaderOptions(w).status().message()), Catch::Contains("weight_attr or weighted"));
  auto u = Base();
  u["no_such_option"] = Value::Int(1);
  CHECK(IsTypeError(BuildLoaderOptions(u).status()));
  auto p = Base();
  p.erase("num_neighbors");
  CHECK_THAT(std::string(BuildLoaderOptions(p).status().message()), Catch::Contains("num_neighbors is required"));
  p["sampler"] = Value::Str("ppr");
  auto ppr = BuildLoaderOptions(p);
  REQUIRE(ppr.ok());
  CHECK(ppr->config.ppr().max_nodes_per_seed() == 32);
}

}  // namespace
}  // namespace graphstore::python
