#ifndef GRAPHSTORE_TESTS_CLIENT_UNUSED_CLIENT_H_
#define GRAPHSTORE_TESTS_CLIENT_UNUSED_CLIENT_H_

// A client::Client whose every call answers UNIMPLEMENTED ("not used by this test"): a unit
// test's fake derives from it and overrides only the calls the class under test makes.

#include <memory>
#include <string>
#include <utility>

#include "client/client.h"

namespace graphstore::testing {

class UnusedClient : public client::Client {
 public:
  explicit UnusedClient(std::string address) : address_(std::move(address)) {}

  const std::string& address() const override { return address_; }
  absl::StatusOr<v1::DatasetMeta> GetDatasetMeta(const v1::GetDatasetMetaRequest&) override { return Unused(); }
  absl::StatusOr<v1::LookupPartitionsResponse> LookupPartitions(const v1::LookupPartitionsRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::GetNodeIdsResponse> GetNodeIds(const v1::GetNodeIdsRequest&) override { return Unused(); }
  absl::StatusOr<v1::GetNodeFeaturesResponse> GetNodeFeatures(const v1::GetNodeFeaturesRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::GetNodeLabelsResponse> GetNodeLabels(const v1::GetNodeLabelsRequest&) override { return Unused(); }
  absl::StatusOr<v1::GetEdgeFeaturesResponse> GetEdgeFeatures(const v1::GetEdgeFeaturesRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::GetAblpInputResponse> GetAblpInput(const v1::GetAblpInputRequest&) override { return Unused(); }
  absl::StatusOr<v1::InitSamplingBackendResponse> InitSamplingBackend(const v1::InitSamplingBackendRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::RegisterSamplingInputResponse> RegisterSamplingInput(
      const v1::RegisterSamplingInputRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::StartEpochResponse> StartEpoch(const v1::StartEpochRequest&) override { return Unused(); }
  absl::StatusOr<v1::RenewLeaseResponse> RenewLease(const v1::RenewLeaseRequest&) override { return Unused(); }
  absl::StatusOr<v1::DestroySamplingInputResponse> DestroySamplingInput(
      const v1::DestroySamplingInputRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::ReleaseSharedBuffersResponse> ReleaseSharedBuffers(const v1::ReleaseSharedBuffersRequest&) override {
    return Unused();
  }
  absl::StatusOr<v1::ChannelStats> DescribeChannel(const v1::DescribeChannelRequest&) override { return Unused(); }
  absl::StatusOr<v1::BackendStats> DescribeBackend(const v1::DescribeBackendRequest&) override { return Unused(); }
  absl::StatusOr<v1::ServerStats> GetServerStats() override { return Unused(); }
  absl::StatusOr<v1::ExitResponse> Exit() override { return Unused(); }
  std::unique_ptr<client::MessageStream> Stream(const v1::StreamSampledMessagesRequest&) override { return nullptr; }
  std::unique_ptr<client::BatchStream> StreamBatches(const v1::StreamSampledMessagesRequest&,
                                                     client::DecodeOptions) override {
    return nullptr;
  }

 protected:
  static absl::Status Unused() { return absl::UnimplementedError("not used by this test"); }

 private:
  const std::string address_;
};

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_CLIENT_UNUSED_CLIENT_H_
