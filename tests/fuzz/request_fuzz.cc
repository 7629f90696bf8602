// Every request's validation: any bytes, read as the request message of any method (what the
// server does with a request body), are answered by the service core over a generated
// partition with a status. A crash, a sanitizer report, or INTERNAL / UNKNOWN is a finding.
//
// Input: byte 0 picks the method, the rest is the request body. channel_id 1 and backend_id 1
// name a live channel and backend, so the fuzzer reaches past the id lookups.

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "server/graph/partition.h"
#include "server/service/core.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace v1 = graphstore::v1;
using graphstore::Core;

struct Fixture {
  std::unique_ptr<Core> core;
  uint64_t backend = 0;
  uint64_t channel = 0;
};

v1::SamplingConfig Config() {
  v1::SamplingConfig c;
  c.set_batch_size(8);
  c.add_num_neighbors(3);
  c.add_num_neighbors(2);
  c.set_with_node_features(true);
  c.set_with_labels(true);
  return c;
}

// The live backend and channel that ids 1 stand for (registered again if a request ended them).
// A fuzzed request may have made the fixture's backend first, with a short lease (reaped between
// joining and registering: join again) or another config (take another key).
void Refresh(Fixture* f) {
  v1::DescribeChannelRequest d;
  d.set_channel_id(f->channel);
  v1::ChannelStats s;
  if (f->channel != 0 && f->core->DescribeChannel(d, &s).ok() && s.state() != "destroyed") return;
  absl::Status registered;
  static int key_suffix = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    v1::InitSamplingBackendRequest init;
    init.set_backend_key("fuzz-fixture-" + std::to_string(key_suffix));
    *init.mutable_config() = Config();
    init.set_lease_ms(3600 * 1000);
    v1::InitSamplingBackendResponse ir;
    absl::Status st;
    f->core->InitSamplingBackend(init, &ir, [&](absl::Status s) { st = s; });
    if (absl::IsFailedPrecondition(st)) {  // a fuzzed request took the key with another config
      ++key_suffix;
      continue;
    }
    if (!st.ok()) {
      std::fprintf(stderr, "the fixture's backend failed: %s\n", st.ToString().c_str());
      std::abort();
    }
    f->backend = ir.backend_id();
    v1::RegisterSamplingInputRequest reg;
    reg.set_backend_id(f->backend);
    reg.mutable_split()->set_split("train");
    reg.set_lease_ms(3600 * 1000);
    v1::RegisterSamplingInputResponse rr;
    registered = f->core->RegisterSamplingInput(reg, &rr);
    if (registered.ok()) {
      f->channel = rr.channel_id();
      return;
    }
    if (!absl::IsNotFound(registered)) break;  // reaped between the two calls: join again
  }
  std::fprintf(stderr, "the fixture's registration failed: %s\n", registered.ToString().c_str());
  std::abort();
}

Fixture& TheFixture() {
  static Fixture* f = [] {
    auto p = graphstore::Partition::Load(graphstore::fuzz::SeedDataset());
    if (!p.ok()) std::abort();
    graphstore::CoreOptions o;
    o.max_response_bytes = 32 << 20;  // what a fuzzed request may make the core build
    o.max_ids_per_request = 1 << 20;
    o.max_backends = 8;
    o.max_channels = 64;
    o.max_worker_threads = 24;
    o.default_num_workers = 1;
    o.default_lease_ms = 50;  // channels and backends the fuzzer makes go soon
    o.default_backend_lease_ms = 50;
    o.lease_check_interval_ms = 10;
    o.state_log_interval_s = 0;
    auto* fx = new Fixture;
    fx->core = std::make_unique<Core>(*std::move(p), o);
    return fx;
  }();
  return *f;
}

// Parses `body` as Req and calls `fn(request, &response)`; an unparseable body is answered
// INVALID_ARGUMENT before the core sees it, so it stops here.
template <typename Req, typename Resp, typename Fn>
absl::Status Call(const std::string& body, Fn fn) {
  Req r;
  Resp out;
  if (!r.ParseFromString(body)) return absl::OkStatus();
  return fn(r, &out);
}

// Id 1 stands for the live channel (or backend).
template <typename Req>
void FixChannel(Req* r, uint64_t live) {
  if (r->channel_id() == 1) r->set_channel_id(live);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  namespace fz = graphstore::fuzz;
  const std::string seeds = fz::SeedsDir();
  if (seeds.empty()) return 0;
  // One well-formed request of each method.
  std::vector<std::string> bodies(20);
  v1::LookupPartitionsRequest lp;
  lp.add_ids(3);
  bodies[1] = lp.SerializeAsString();
  v1::GetNodeIdsRequest ni;
  ni.set_split("train");
  bodies[2] = ni.SerializeAsString();
  v1::GetNodeFeaturesRequest nf;
  nf.add_ids(1);
  nf.add_ids(7);
  nf.set_with_labels(true);
  bodies[3] = nf.SerializeAsString();
  v1::GetNodeLabelsRequest nl;
  nl.add_ids(2);
  bodies[4] = nl.SerializeAsString();
  v1::SampleNeighborsRequest sn;
  sn.add_ids(5);
  bodies[6] = sn.SerializeAsString();
  v1::InitSamplingBackendRequest init;
  init.set_backend_key("seed");
  *init.mutable_config() = Config();
  bodies[8] = init.SerializeAsString();
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(1);
  reg.mutable_split()->set_split("val");
  bodies[9] = reg.SerializeAsString();
  v1::StartEpochRequest se;
  se.set_channel_id(1);
  se.set_epoch(2);
  bodies[10] = se.SerializeAsString();
  v1::StreamSampledMessagesRequest ss;
  ss.set_channel_id(1);
  ss.set_epoch(2);
  bodies[11] = ss.SerializeAsString();
  v1::RenewLeaseRequest rl;
  rl.set_channel_id(1);
  bodies[13] = rl.SerializeAsString();
  v1::DescribeChannelRequest dc;
  dc.set_channel_id(1);
  bodies[15] = dc.SerializeAsString();
  v1::DescribeBackendRequest db;
  db.set_backend_id(1);
  bodies[16] = db.SerializeAsString();
  v1::GetNodeTimesRequest nt;
  nt.add_ids(3);
  bodies[18] = nt.SerializeAsString();
  v1::FindDegreeNodesRequest fd;
  fd.add_positions(0);
  fd.add_positions(2);
  bodies[19] = fd.SerializeAsString();
  for (size_t m = 0; m < bodies.size(); ++m) {
    fz::WriteFile(seeds + "/" + std::to_string(m), std::string(1, static_cast<char>(m)) + bodies[m]);
  }
  // Weighted and temporal draws, as a peer and as a backend ask for them.
  v1::SampleNeighborsRequest tn;
  tn.add_ids(5);
  tn.add_ids(9);
  tn.add_times(400000);
  tn.add_times(900000);
  tn.set_fanout(3);
  tn.set_weighted(true);
  tn.set_temporal_strategy(v1::TEMPORAL_STRATEGY_UNIFORM);
  fz::WriteFile(seeds + "/6-temporal", std::string(1, '\x06') + tn.SerializeAsString());
  init.mutable_config()->set_temporal_strategy(v1::TEMPORAL_STRATEGY_LAST);
  fz::WriteFile(seeds + "/8-temporal", std::string(1, '\x08') + init.SerializeAsString());
  reg.clear_split();
  for (int64_t id : {4, 8, 15}) {
    reg.mutable_nodes()->add_ids(id);
    reg.mutable_nodes()->add_times(id * 50000);
  }
  fz::WriteFile(seeds + "/9-temporal", std::string(1, '\x09') + reg.SerializeAsString());
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Fixture& f = TheFixture();
  Refresh(&f);
  Core& core = *f.core;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  absl::Status status;
  bool parsed = true;
  switch (data[0] % 20) {
    case 0:
      status = Call<v1::GetDatasetMetaRequest, v1::DatasetMeta>(
          body, [&](auto& r, auto* out) { return core.GetDatasetMeta(r, out); });
      break;
    case 1:
      status = Call<v1::LookupPartitionsRequest, v1::LookupPartitionsResponse>(
          body, [&](auto& r, auto* out) { return core.queries().LookupPartitions(r, out); });
      break;
    case 2:
      status = Call<v1::GetNodeIdsRequest, v1::GetNodeIdsResponse>(
          body, [&](auto& r, auto* out) { return core.queries().GetNodeIds(r, out); });
      break;
    case 3:
      status = Call<v1::GetNodeFeaturesRequest, v1::GetNodeFeaturesResponse>(
          body, [&](auto& r, auto* out) { return core.queries().GetNodeFeatures(r, out); });
      break;
    case 4:
      status = Call<v1::GetNodeLabelsRequest, v1::GetNodeLabelsResponse>(
          body, [&](auto& r, auto* out) { return core.queries().GetNodeLabels(r, out); });
      break;
    case 5:
      status = Call<v1::GetEdgeFeaturesRequest, v1::GetEdgeFeaturesResponse>(
          body, [&](auto& r, auto* out) { return core.queries().GetEdgeFeatures(r, out); });
      break;
    case 6:
      status = Call<v1::SampleNeighborsRequest, v1::SampleNeighborsResponse>(
          body, [&](auto& r, auto* out) { return core.queries().SampleNeighbors(r, out); });
      break;
    case 7:
      status = Call<v1::GetAblpInputRequest, v1::GetAblpInputResponse>(
          body, [&](auto& r, auto* out) { return core.queries().GetAblpInput(r, out); });
      break;
    case 8:
      status = Call<v1::InitSamplingBackendRequest, v1::InitSamplingBackendResponse>(body, [&](auto& r, auto* out) {
        absl::Status answer;
        bool done = false;
        core.InitSamplingBackend(r, out, [&](absl::Status s) {
          answer = s;
          done = true;
        });
        if (!done) std::abort();  // one caller: the answer comes before the call returns
        return answer;
      });
      break;
    case 9:
      status = Call<v1::RegisterSamplingInputRequest, v1::RegisterSamplingInputResponse>(body, [&](auto& r, auto* out) {
        if (r.backend_id() == 1) r.set_backend_id(f.backend);
        return core.RegisterSamplingInput(r, out);
      });
      break;
    case 10:
      status = Call<v1::StartEpochRequest, v1::StartEpochResponse>(body, [&](auto& r, auto* out) {
        FixChannel(&r, f.channel);
        return core.StartEpoch(r, out);
      });
      break;
    case 11:
      status = Call<v1::StreamSampledMessagesRequest, v1::StreamSampledMessagesRequest>(body, [&](auto& r, auto*) {
        FixChannel(&r, f.channel);
        auto a = core.AttachStream(r);
        if (a.ok()) core.DetachStream(*a, /*cancelled=*/true);
        return a.status();
      });
      break;
    case 12:
      status = Call<v1::ReleaseSharedBuffersRequest, v1::ReleaseSharedBuffersResponse>(body, [&](auto& r, auto* out) {
        FixChannel(&r, f.channel);
        return core.ReleaseSharedBuffers(r, out);
      });
      break;
    case 13:
      status = Call<v1::RenewLeaseRequest, v1::RenewLeaseResponse>(body, [&](auto& r, auto* out) {
        FixChannel(&r, f.channel);
        return core.RenewLease(r, out);
      });
      break;
    case 14:
      status = Call<v1::DestroySamplingInputRequest, v1::DestroySamplingInputResponse>(body, [&](auto& r, auto* out) {
        FixChannel(&r, f.channel);
        return core.DestroySamplingInput(r, out);
      });
      break;
    case 15:
      status = Call<v1::DescribeChannelRequest, v1::ChannelStats>(body, [&](auto& r, auto* out) {
        FixChannel(&r, f.channel);
        return core.DescribeChannel(r, out);
      });
      break;
    case 16:
      status = Call<v1::DescribeBackendRequest, v1::BackendStats>(body, [&](auto& r, auto* out) {
        if (r.backend_id() == 1) r.set_backend_id(f.backend);
        return core.DescribeBackend(r, out);
      });
      break;
    case 18:
      status = Call<v1::GetNodeTimesRequest, v1::GetNodeTimesResponse>(
          body, [&](auto& r, auto* out) { return core.queries().GetNodeTimes(r, out); });
      break;
    case 19:
      status = Call<v1::FindDegreeNodesRequest, v1::FindDegreeNodesResponse>(
          body, [&](auto& r, auto* out) { return core.queries().FindDegreeNodes(r, out); });
      break;
    default:
      status = Call<v1::GetServerStatsRequest, v1::ServerStats>(
          body, [&](auto& r, auto* out) { return core.GetServerStats(r, out); });
      break;
  }
  if (status.code() == absl::StatusCode::kInternal || status.code() == absl::StatusCode::kUnknown) {
    std::fprintf(stderr, "method %d answered %s\n", data[0] % 20, status.ToString().c_str());
    std::abort();
  }
  return 0;
}
