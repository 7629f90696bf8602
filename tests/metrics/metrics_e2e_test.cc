// The Prometheus endpoint of a real daemon, scraped over HTTP during and after an epoch: the
// text parses as the exposition format, and the counters moved by exactly what the client did.

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/daemon.h"
#include "tests/e2e/e2e_util.h"
#include "tests/test_util.h"

namespace graphstore {
namespace {

using testing::Daemon;

// GET /metrics on 127.0.0.1:port; the body.
std::string Scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) response.append(buf, n);
  ::close(fd);
  REQUIRE(response.rfind("HTTP/1.", 0) == 0);
  REQUIRE(response.find(" 200 ") != std::string::npos);
  const size_t body = response.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  return response.substr(body + 4);
}

// The samples of an exposition text by "name{labels}", checking its syntax on the way: every
// line is a HELP, a TYPE or a sample of a declared family with a numeric value.
std::map<std::string, double> Parse(const std::string& text) {
  static const std::regex kHelp(R"(# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*)");
  static const std::regex kType(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped))");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*",?)*\})? (\S+)( -?[0-9]+)?)");
  std::map<std::string, double> samples;
  std::set<std::string> families;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    INFO(line);
    if (line.empty() || std::regex_match(line, kHelp)) continue;
    std::smatch m;
    if (std::regex_match(line, m, kType)) {
      families.insert(m[1]);
      continue;
    }
    REQUIRE(std::regex_match(line, m, kSample));
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s(suffix);
      if (!families.count(family) && family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0) {
        family = family.substr(0, family.size() - s.size());
      }
    }
    CHECK(families.count(family) == 1);
    const std::string value = m[m.size() - 2];
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    CHECK((*end == '\0' || value == "Nan"));
    const size_t space = line.find(' ', line.find('}') == std::string::npos ? 0 : line.find('}'));
    samples[line.substr(0, space)] = v;
  }
  return samples;
}

double Get(const std::map<std::string, double>& samples, const std::string& key) {
  auto it = samples.find(key);
  INFO(key);
  REQUIRE(it != samples.end());
  return it->second;
}

TEST_CASE("metrics: scraped during and after an epoch, the counters moved by what the client did", "[metrics]") {
  const int port = testing::FreeLoopbackPorts(1).front();
  Daemon d(testing::Dataset(), {absl::StrCat("--metrics_port=", port), "--shared_memory_dir=",
                                "--sample_ahead_batches=0", "--state_log_interval_s=0", "--metrics_per_channel=true"});
  CHECK_THAT(d.Log(), Catch::Contains(absl::StrCat("metrics on http://127.0.0.1:", port, "/metrics")));
  auto before = Parse(Scrape(port));
  CHECK(Get(before, "graphstore_batches_sent_total{transport=\"socket\"}") == 0);
  CHECK(Get(before, "graphstore_backends{state=\"serving\"}") == 0);
  CHECK(Get(before, "graphstore_sampling_index_bytes") == 0);  // (GetServerStats counts them; see core_test)

  // A small flow-control window and buffer hold the server back, so the epoch is still running
  // after the first batch is read.
  auto c = testing::Connect(d, /*window_bytes=*/64 << 10);
  const uint64_t backend = testing::InitBackend(*c, "metrics", /*batch_size=*/100);
  const uint64_t channel = testing::RegisterSplit(*c, backend, "train", /*max_messages=*/2);
  v1::DescribeChannelRequest unknown;
  unknown.set_channel_id(987654);
  CHECK(c->DescribeChannel(unknown).status().code() == absl::StatusCode::kNotFound);
  REQUIRE(testing::Start(*c, channel, 0) == v1::StartEpochResponse::STARTED);

  // Mid-epoch: one stream open, one running channel, a serving backend.
  auto stream = testing::Open(*c, channel, 0);
  int64_t batches = 0;
  int64_t bytes = 0;
  auto first = stream->Next();
  REQUIRE(first.ok());
  REQUIRE(*first != nullptr);
  ++batches;
  bytes += static_cast<int64_t>((*first)->ByteSizeLong());
  auto during = Parse(Scrape(port));
  CHECK(Get(during, "graphstore_streams_open") == 1);
  CHECK(Get(during, "graphstore_channels{state=\"running\"}") == 1);
  CHECK(Get(during, "graphstore_backends{state=\"serving\"}") == 1);
  CHECK(Get(during, "graphstore_workers") >= 1);
  CHECK(Get(during, "graphstore_requests_total{code=\"OK\",method=\"StreamSampledMessages\"}") == 1);
  // The open stream's own series (per channel and stripe), counted once its writes complete.
  const std::string stream_key = absl::StrCat("{channel=\"", channel, "\",stripe=\"0\"}");
  REQUIRE(testing::PollUntil([&] {
    auto now = Parse(Scrape(port));
    auto it = now.find("graphstore_channel_stream_batches_sent_total" + stream_key);
    return it != now.end() && it->second >= 1;
  }));
  CHECK(Get(Parse(Scrape(port)), "graphstore_channel_stream_bytes_sent_total" + stream_key) > 0);

  for (;;) {
    auto m = stream->Next();
    REQUIRE(m.ok());
    if (*m == nullptr) break;
    ++batches;
    bytes += static_cast<int64_t>((*m)->ByteSizeLong());
  }
  const int64_t expected_batches = (static_cast<int64_t>(testing::SplitIds("train").size()) + 99) / 100;
  REQUIRE(batches == expected_batches);

  auto after = Parse(Scrape(port));
  // The stream's series goes with it.
  CHECK(testing::PollUntil(
      [&] { return Parse(Scrape(port)).count("graphstore_channel_stream_bytes_sent_total" + stream_key) == 0; }));
  CHECK(Get(after, "graphstore_batches_sent_total{transport=\"socket\"}") == batches);
  CHECK(Get(after, "graphstore_batches_sent_total{transport=\"shared_memory\"}") == 0);
  CHECK(Get(after, "graphstore_stream_bytes_sent_total{transport=\"socket\"}") == bytes);
  CHECK(Get(after, "graphstore_batches_sampled_total") == batches);  // nothing sampled ahead
  CHECK(Get(after, "graphstore_sampling_duration_seconds_count{kind=\"neighbor\"}") == batches);
  CHECK(Get(after, "graphstore_sampling_duration_seconds_bucket{kind=\"neighbor\",le=\"+Inf\"}") == batches);
  CHECK(Get(after, "graphstore_worker_busy_seconds_total") > 0);
  CHECK(Get(after, "graphstore_requests_total{code=\"OK\",method=\"InitSamplingBackend\"}") == 1);
  CHECK(Get(after, "graphstore_requests_total{code=\"OK\",method=\"RegisterSamplingInput\"}") == 1);
  CHECK(Get(after, "graphstore_requests_total{code=\"OK\",method=\"StartEpoch\"}") == 1);
  CHECK(Get(after, "graphstore_requests_total{code=\"NOT_FOUND\",method=\"DescribeChannel\"}") == 1);
  CHECK(Get(after, "graphstore_request_duration_seconds_count{method=\"StartEpoch\"}") == 1);
  // Buckets from 50 µs; the OK series of a method never called is there at 0.
  CHECK(Get(after, "graphstore_request_duration_seconds_bucket{method=\"StartEpoch\",le=\"5e-05\"}") >= 0);
  CHECK(Get(after, "graphstore_requests_total{code=\"OK\",method=\"GetAblpInput\"}") == 0);
  CHECK(Get(after, "graphstore_request_duration_seconds_count{method=\"GetAblpInput\"}") == 0);
  CHECK(Get(after, "graphstore_channels{state=\"epoch_done\"}") == 1);
  CHECK(Get(after, "graphstore_backend_buffered_messages{backend=\"metrics\"}") == 0);
  CHECK(Get(after, "graphstore_channel_lease_expirations_total") == 0);

  // A destroyed channel leaves the serving backends.
  v1::DestroySamplingInputRequest destroy;
  destroy.set_channel_id(channel);
  REQUIRE(c->DestroySamplingInput(destroy).ok());
  auto destroyed = Parse(Scrape(port));
  CHECK(Get(destroyed, "graphstore_backends{state=\"serving\"}") == 0);
  CHECK(Get(destroyed, "graphstore_channels{state=\"epoch_done\"}") == 0);
  CHECK(Get(destroyed, "graphstore_requests_total{code=\"OK\",method=\"DestroySamplingInput\"}") == 1);
}

TEST_CASE("metrics: a port that cannot be bound stops the daemon with a clear error", "[metrics]") {
  const int port = testing::FreeLoopbackPorts(1).front();
  Daemon first(testing::Dataset(), {absl::StrCat("--metrics_port=", port), "--shared_memory_dir="});
  Daemon second(testing::Dataset(), {absl::StrCat("--metrics_port=", port), "--shared_memory_dir="}, 0,
                /*wait=*/false);
  CHECK(second.WaitExit(30) == 2);
  CHECK_THAT(second.Log(), Catch::Contains(absl::StrCat("cannot serve metrics on 127.0.0.1:", port)));
}

}  // namespace
}  // namespace graphstore
