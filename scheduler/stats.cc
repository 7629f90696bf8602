#include "scheduler/stats.h"

namespace graphstore::scheduler {

const char* ChannelStateName(ChannelState state) {
  switch (state) {
    case ChannelState::kIdle: return "idle";
    case ChannelState::kRunning: return "running";
    case ChannelState::kEpochDone: return "epoch_done";
    case ChannelState::kFailed: return "failed";
    case ChannelState::kCancelled: return "cancelled";
  }
  return "unknown";
}

}  // namespace graphstore::scheduler
