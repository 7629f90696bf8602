#ifndef GRAPHSTORE_SERVER_RPC_SEND_SHARE_H_
#define GRAPHSTORE_SERVER_RPC_SEND_SHARE_H_

// Shares a server's sending between its streams by bytes, as the backend's fair queue shares
// sampling between channels. Without it the split of a link is TCP's: streams to trainers that
// share one FIFO queue (a server's uplink) get what their congestion windows win, and measured
// 0.46 of each other's rate with four trainers; the fair queue then refills whichever channel
// drains first, so sampling follows the unfairness.
//
// Each stream counts the bytes it has written (`sent`). A stream may start a write while its
// `sent` is at most `quantum_bytes` above the least `sent` of the streams that contend (those
// with something to write: waiting, between writes, or with a write on its way); otherwise it
// is held and woken once the others catch up. Two things keep a slow reader from pacing the
// rest: a write on its way for longer than `stall_factor` times what a write of its size takes
// at an even split of the server's recent sending rate no longer contends, and a stream whose
// write stalled so
// forfeits the lag it built (its `sent` is lifted to the others' least), as does one that had
// nothing to send (a stream that starts or comes back from idle does not claim the past). And
// holding must not waste the link on a reader slower than its share: while streams are held
// (first after 10 s, then whenever the rate has fallen 1.3 times below what the last probe
// found, at most every 10 s) the share holds no one for 2 s, and if the server then sends over
// 1.3 times what it sent holding, the streams the held ones waited for are slow readers and stop
// holding anyone for a while (`slow_reader_hold`). What the server sends counts its unary
// answers too (`CountOther`: rows a trainer asks of their owner, peers' hops): a link they keep
// full while streams are held is not wasted, and a stream they outpace is no slow reader. The
// rows a trainer asks of this server as their owner also count in that trainer's share
// (`CountAnswer`, by the connection they came on, which its stream shares): on a cluster they
// are most of what a trainer receives, and a trainer they favour would otherwise be fed ahead,
// since its batches come sooner and so do its next asks.
//
// Thread-safe. Wake callbacks run without the lock held, on the caller's thread or on the
// timer thread (which re-checks when a write on its way crosses its stall limit).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace graphstore {

class SendShare {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    /// How far (bytes) a stream may run ahead of the least-served contending stream.
    int64_t quantum_bytes = 1 << 20;
    /// A write on its way longer than this many times what its size takes at an even split of
    /// the server's sending rate is a stalled reader's, and holds no one back.
    double stall_factor = 4.0;
    /// The stall limit is never below this (small writes, an idle server).
    std::chrono::microseconds min_stall{50000};
    /// A stream found to read slowly (see above) holds no one back for this long (single
    /// writes say nothing: the socket's buffer finishes some of a slow reader's at once).
    std::chrono::microseconds slow_reader_hold{60000000};
    /// Run the timer thread (tests drive Tick themselves with their own clock).
    bool timer_thread = true;
  };

  explicit SendShare(Options options, std::function<Clock::time_point()> now = Clock::now);
  ~SendShare();
  SendShare(const SendShare&) = delete;
  SendShare& operator=(const SendShare&) = delete;

  /// A new stream; `wake` is called when a held write of it may be asked for again. `peer`
  /// names its connection (grpc's peer string), so that answers on it count in its share.
  uint64_t Join(std::function<void()> wake, std::string peer = "");
  /// The stream ended; streams it held back are woken.
  void Leave(uint64_t id);
  /// Whether stream `id` may start writing `bytes` now. false: it is held, and `wake` runs
  /// (once) when it may ask again. Runs no wake itself (callers hold their own locks): streams
  /// a new write frees are woken by the timer thread, or by the next Tick.
  bool MayWrite(uint64_t id, int64_t bytes);
  /// The write that MayWrite allowed has finished (written or failed).
  void WriteDone(uint64_t id);
  /// The stream has nothing to send for now (it no longer contends).
  void Idle(uint64_t id);
  /// The server sent `bytes` outside the streams (a unary answer): counted in the link's rate
  /// that the probes compare, not in any stream's share.
  void CountOther(int64_t bytes);
  /// An answer of `bytes` sent to the client on connection `peer`: counted as CountOther, and in
  /// the share of the least-served stream on that connection, if one is there.
  void CountAnswer(const std::string& peer, int64_t bytes);
  /// Re-checks stall limits at the clock's time; wakes whom that frees.
  void Tick();

  /// Streams held back now (for tests and the stats).
  int held() const;
  /// When the timer thread re-checks next if nothing changes before (for tests); max() when
  /// nothing is held. Never in the past: a timer that waited for a time gone would spin.
  Clock::time_point next_check() const;

 private:
  struct Stream {
    std::function<void()> wake;
    std::string peer;
    int64_t sent = 0;
    bool idle = true;
    bool held = false;
    bool writing = false;
    int64_t write_bytes = 0;
    Clock::time_point write_start{};
    bool leaving = false;
    int waking = 0;  // wakes of this stream collected and not yet returned
    Clock::time_point held_since{};  // while held
    Clock::time_point slow_until{};  // a slow reader until then: holds no one back
  };

  bool Contends(const Stream& s, Clock::time_point now) const;
  Clock::duration FairTime(int64_t bytes, double rate) const;
  Clock::duration StallLimit(int64_t bytes) const;
  // Starts and ends the probes that tell slow readers from streams TCP starves, marking the
  // slow ones.
  void FindSlowReaders(Clock::time_point now);
  bool Probing(Clock::time_point now) const;
  // Bytes the server sent: a stream's write (`stream`, the streams' rate that sets stall
  // limits) or an answer; both count in the link's rate.
  void CountSent(Clock::time_point now, int64_t bytes, bool stream = true);
  // The least `sent` of the contending streams other than `except` (0: none), counting writes
  // on their way unless `written_only`; false if none contends.
  bool LeastSent(Clock::time_point now, uint64_t except, int64_t* least, bool written_only = false) const;
  // Releases held streams within the quantum of the least; their wakes go to `out`.
  void Release(Clock::time_point now, std::vector<std::function<void()>>* out);
  // Runs `change(lock, now)` under the lock; when it returns true, releases whom that frees
  // and runs their wakes after the lock is let go.
  template <typename Change>
  void ChangeAndRelease(Change change);
  Clock::time_point NextDeadline(Clock::time_point now) const;
  void TimerLoop();

  const Options options_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::unordered_map<uint64_t, Stream> streams_;
  uint64_t next_id_ = 1;
  // The streams' rate of finished writes (bytes a second, smoothed; 0 until the first window),
  // and the link's (the streams' and the answers').
  double bytes_per_s_ = 0.0;
  double link_bytes_per_s_ = 0.0;
  // The probe of slow readers (FindSlowReaders): while probe_end_ is set, no one is held.
  Clock::time_point probe_start_{};
  Clock::time_point probe_end_{};
  Clock::time_point last_probe_{};
  int64_t probe_bytes_ = 0;
  double held_bytes_per_s_ = 0.0;  // the rate when the probe began
  double free_bytes_per_s_ = 0.0;  // the last probe's rate
  std::vector<uint64_t> suspects_;
  Clock::time_point window_start_{};
  int64_t window_bytes_ = 0;
  int64_t link_window_bytes_ = 0;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace graphstore

#endif  // GRAPHSTORE_SERVER_RPC_SEND_SHARE_H_
