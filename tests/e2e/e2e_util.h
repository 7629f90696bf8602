#ifndef GRAPHSTORE_TESTS_E2E_E2E_UTIL_H_
#define GRAPHSTORE_TESTS_E2E_E2E_UTIL_H_

// Helpers of the end-to-end tests over a real graphstored: a shared generated dataset, the
// client calls every test makes (backend, channel, epoch, stream), and reading an epoch.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/daemon.h"

namespace graphstore::testing {

/// One generated dataset (3000 nodes, 16 features, 8 classes) shared by a test binary.
const std::string& Dataset();

/// A connection to the daemon; `window_bytes` bounds each stream's flow-control window (0:
/// gRPC's self-tuning one).
std::unique_ptr<client::Client> Connect(const Daemon& d, int window_bytes = 0);

/// A backend with fanouts [5, 3], node features and labels.
uint64_t InitBackend(client::Client& c, const std::string& key, int batch_size = 64, bool shuffle = true);

/// A channel of a split of the dataset on `backend` (seed 17).
uint64_t RegisterSplit(client::Client& c, uint64_t backend, const std::string& split, int max_messages = 0);

/// Starts an epoch; returns StartEpoch's outcome.
v1::StartEpochResponse::Outcome Start(client::Client& c, uint64_t channel, int64_t epoch);

/// The values of an int64 tensor.
std::vector<int64_t> Int64s(const v1::Tensor& t);

/// Opens the stream of one epoch of a channel.
std::unique_ptr<client::MessageStream> Open(client::Client& c, uint64_t channel, int64_t epoch);

/// Reads a whole epoch; returns its seeds in delivery order and checks the stream ends OK.
std::vector<int64_t> ReadEpoch(client::Client& c, uint64_t channel, int64_t epoch, int64_t* batches = nullptr);

/// Shows that the backend gives a stopped channel no work: another channel's whole epoch (the
/// "val" split) runs through the same workers, which serve every runnable channel a batch per
/// round; the witness channel is destroyed afterwards. Compare the stopped channel's
/// batches_sampled before and after (no fixed sleep, so it holds on a slow machine).
void RunWitnessEpoch(client::Client& c, uint64_t backend);

/// The stored ids of a split of the dataset.
std::vector<int64_t> SplitIds(const std::string& split);

}  // namespace graphstore::testing

#endif  // GRAPHSTORE_TESTS_E2E_E2E_UTIL_H_
