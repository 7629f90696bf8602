#include "client/channel_progress.h"

#include "absl/strings/str_cat.h"

namespace graphstore::client {

void ChannelProgress::Begin(int64_t num_batches, int stripes) {
  absl::MutexLock lock(&mu_);
  delivered_.assign(static_cast<size_t>(num_batches), 0);
  first_missing_ = 0;
  stripes_ = stripes;
}

absl::Status ChannelProgress::Mark(int64_t j, int k, int64_t batch_index, bool* resent) {
  absl::MutexLock lock(&mu_);
  const int64_t n = static_cast<int64_t>(delivered_.size());
  if (j < 0 || j >= n || j % stripes_ != k) {
    return absl::DataLossError(absl::StrCat("batch_index ", batch_index, " is not one of this stream's batches (j < ",
                                            n, ", j mod ", stripes_, " = ", k, ")"));
  }
  *resent = delivered_[static_cast<size_t>(j)] != 0;
  delivered_[static_cast<size_t>(j)] = 1;
  while (first_missing_ < n && delivered_[static_cast<size_t>(first_missing_)]) ++first_missing_;
  return absl::OkStatus();
}

int64_t ChannelProgress::first_missing() const {
  absl::MutexLock lock(&mu_);
  return first_missing_;
}

int64_t ChannelProgress::StripeMissing(int k) const {
  absl::MutexLock lock(&mu_);
  for (int64_t j = first_missing_; j < static_cast<int64_t>(delivered_.size()); ++j) {
    if (j % stripes_ == k && !delivered_[static_cast<size_t>(j)]) return j;
  }
  return -1;
}

}  // namespace graphstore::client
