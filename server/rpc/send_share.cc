#include "server/rpc/send_share.h"

#include <algorithm>
#include <utility>

namespace graphstore {

namespace {

// The stream whose wake this thread is running (0: none): its own Leave from inside the wake
// must not wait for the wake to return.
thread_local uint64_t waking = 0;

// The server's sending rate is measured over windows of this length (long against one write
// of a batch: a few MB at tens of MB/s), smoothed with this weight.
constexpr std::chrono::milliseconds kRateWindow{1000};
constexpr double kRateAlpha = 0.3;
// While streams are held, at most every kProbeEvery (once the rate is known, and again only when
// it has fallen kWasted below the last probe's) the share holds no one for kProbeFor and
// compares what the server then sends with what it sent holding: more than kWasted times as
// much, and the holds were wasting the link on slow readers.
constexpr std::chrono::seconds kProbeEvery{10};
constexpr std::chrono::seconds kProbeFor{2};
constexpr double kWasted = 1.3;
// While streams are held and a probe is due but not started, the timer looks again this often.
constexpr std::chrono::milliseconds kHeldRecheck{100};

}  // namespace

SendShare::SendShare(Options options, std::function<Clock::time_point()> now)
    : options_(options), now_(std::move(now)) {
  if (options_.timer_thread) timer_ = std::thread([this] { TimerLoop(); });
}

SendShare::~SendShare() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (timer_.joinable()) timer_.join();
}

uint64_t SendShare::Join(std::function<void()> wake, std::string peer) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  streams_[id].wake = std::move(wake);
  streams_[id].peer = std::move(peer);
  return id;
}

template <typename Change>
void SendShare::ChangeAndRelease(Change change) {
  std::vector<std::function<void()>> wakes;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const Clock::time_point now = now_();
    if (!change(lock, now)) return;
    Release(now, &wakes);
  }
  for (auto& w : wakes) w();
}

void SendShare::Leave(uint64_t id) {
  ChangeAndRelease([&](std::unique_lock<std::mutex>& lock, Clock::time_point) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return false;
    it->second.leaving = true;
    // No wake of this stream runs after Leave returns (unless Leave is called from it). The
    // stream is found again after the wait: a Join meanwhile may have moved the map's nodes.
    if (waking != id) changed_.wait(lock, [&] { return streams_.at(id).waking == 0; });
    streams_.erase(id);
    return true;
  });
}

bool SendShare::MayWrite(uint64_t id, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return true;
  Stream& s = it->second;
  const Clock::time_point now = now_();
  int64_t least = 0;
  if (s.idle) {
    // Back from having nothing to send (or new): no claim on the time it was away, so it
    // starts level with the least-served stream's written bytes.
    s.idle = false;
    if (LeastSent(now, id, &least, /*written_only=*/true)) s.sent = std::max(s.sent, least);
  }
  const bool others = LeastSent(now, id, &least);
  if (others && s.sent - least > options_.quantum_bytes && !Probing(now)) {
    if (!s.held) s.held_since = now;
    s.held = true;
    changed_.notify_all();
    return false;
  }
  s.held = false;
  s.writing = true;
  s.write_bytes = bytes;
  s.write_start = now;
  s.sent += bytes;
  changed_.notify_all();  // a new stall deadline for the timer
  return true;
}

void SendShare::WriteDone(uint64_t id) {
  ChangeAndRelease([&](std::unique_lock<std::mutex>&, Clock::time_point now) {
    auto it = streams_.find(id);
    if (it == streams_.end() || !it->second.writing) return false;
    Stream& s = it->second;
    const bool stalled = now - s.write_start >= StallLimit(s.write_bytes);
    s.writing = false;
    CountSent(now, s.write_bytes);
    int64_t least = 0;
    // A reader that stalled the write does not then pace the others by its lag.
    if (stalled && LeastSent(now, id, &least, /*written_only=*/true)) s.sent = std::max(s.sent, least);
    return true;
  });
}

void SendShare::Idle(uint64_t id) {
  ChangeAndRelease([&](std::unique_lock<std::mutex>&, Clock::time_point) {
    auto it = streams_.find(id);
    // A write on its way still counts (a batch became ready again before this call).
    if (it == streams_.end() || it->second.writing) return false;
    it->second.idle = true;
    it->second.held = false;
    return true;
  });
}

void SendShare::Tick() {
  ChangeAndRelease([](std::unique_lock<std::mutex>&, Clock::time_point) { return true; });
}

SendShare::Clock::time_point SendShare::next_check() const {
  std::lock_guard<std::mutex> lock(mu_);
  return NextDeadline(now_());
}

int SendShare::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [id, s] : streams_) n += s.held ? 1 : 0;
  return n;
}

bool SendShare::Contends(const Stream& s, Clock::time_point now) const {
  if (s.idle || s.leaving || now < s.slow_until) return false;
  return !s.writing || now - s.write_start < StallLimit(s.write_bytes);
}

void SendShare::CountSent(Clock::time_point now, int64_t bytes, bool stream) {
  if (window_start_ == Clock::time_point{}) window_start_ = now;
  if (stream) window_bytes_ += bytes;
  link_window_bytes_ += bytes;
  if (Probing(now)) probe_bytes_ += bytes;
  const auto span = now - window_start_;
  if (span < kRateWindow) return;
  const double seconds = std::chrono::duration<double>(span).count();
  auto smooth = [](double* rate, double now_rate) {
    *rate = *rate == 0.0 ? now_rate : *rate + kRateAlpha * (now_rate - *rate);
  };
  smooth(&bytes_per_s_, static_cast<double>(window_bytes_) / seconds);
  smooth(&link_bytes_per_s_, static_cast<double>(link_window_bytes_) / seconds);
  window_start_ = now;
  window_bytes_ = 0;
  link_window_bytes_ = 0;
}

void SendShare::CountOther(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  CountSent(now_(), bytes, /*stream=*/false);
}

void SendShare::CountAnswer(const std::string& peer, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  CountSent(now_(), bytes, /*stream=*/false);
  if (peer.empty()) return;
  Stream* least = nullptr;
  for (auto& [id, s] : streams_) {
    if (s.peer == peer && !s.leaving && (least == nullptr || s.sent < least->sent)) least = &s;
  }
  if (least != nullptr) least->sent += bytes;
}

SendShare::Clock::duration SendShare::FairTime(int64_t bytes, double rate) const {
  // The time a write of `bytes` takes when `rate` is split evenly between the streams that
  // have something to send (completions, not the wire: the socket's buffer hides single
  // writes' times, not the rate). Zero without a rate.
  if (rate == 0.0) return Clock::duration::zero();
  int active = 0;
  for (const auto& [id, s] : streams_) active += s.idle || s.leaving ? 0 : 1;
  const auto fair = std::chrono::duration<double>(std::max(active, 1) * static_cast<double>(bytes) / rate);
  return std::chrono::duration_cast<Clock::duration>(fair);
}

SendShare::Clock::duration SendShare::StallLimit(int64_t bytes) const {
  if (bytes_per_s_ == 0.0) return options_.min_stall;
  const auto limit = FairTime(bytes, bytes_per_s_) * options_.stall_factor;
  return std::max<Clock::duration>(std::chrono::duration_cast<Clock::duration>(limit), options_.min_stall);
}

bool SendShare::LeastSent(Clock::time_point now, uint64_t except, int64_t* least, bool written_only) const {
  bool any = false;
  for (const auto& [id, s] : streams_) {
    if (id == except || !Contends(s, now)) continue;
    const int64_t sent = written_only && s.writing ? s.sent - s.write_bytes : s.sent;
    *least = any ? std::min(*least, sent) : sent;
    any = true;
  }
  return any;
}

bool SendShare::Probing(Clock::time_point now) const { return probe_end_ != Clock::time_point{} && now < probe_end_; }

void SendShare::FindSlowReaders(Clock::time_point now) {
  // Holding back is free while the link stays full (the waited-for streams take what the held
  // ones leave). Whether it does cannot be seen while holding, so now and then the share holds
  // no one for a while: if the server then sends much more, the holds were wasting the link,
  // and the streams they waited for read slowly (TCP was not what held them back).
  if (probe_end_ != Clock::time_point{} && now >= probe_end_) {
    const double span = std::chrono::duration<double>(now - probe_start_).count();
    free_bytes_per_s_ = span > 0 ? static_cast<double>(probe_bytes_) / span : 0.0;
    if (free_bytes_per_s_ > kWasted * held_bytes_per_s_) {
      for (uint64_t id : suspects_) {
        auto it = streams_.find(id);
        if (it != streams_.end()) it->second.slow_until = now + options_.slow_reader_hold;
      }
    }
    probe_end_ = Clock::time_point{};
    suspects_.clear();
    last_probe_ = now;
    return;
  }
  if (Probing(now) || bytes_per_s_ == 0.0 || now - last_probe_ < kProbeEvery) return;
  // A link as full as the last probe found it free: nothing is wasted, nothing to probe.
  if (free_bytes_per_s_ > 0.0 && link_bytes_per_s_ * kWasted >= free_bytes_per_s_) return;
  // The streams waited for now: those the held ones are more than a quantum ahead of.
  for (const auto& [hid, h] : streams_) {
    if (!h.held || h.leaving) continue;
    for (const auto& [id, s] : streams_) {
      if (id != hid && Contends(s, now) && h.sent - s.sent > options_.quantum_bytes) suspects_.push_back(id);
    }
  }
  if (suspects_.empty()) return;
  held_bytes_per_s_ = link_bytes_per_s_;
  probe_bytes_ = 0;
  probe_start_ = now;
  probe_end_ = now + kProbeFor;
}

void SendShare::Release(Clock::time_point now, std::vector<std::function<void()>>* out) {
  FindSlowReaders(now);
  int64_t least = 0;
  const bool any = LeastSent(now, 0, &least) && !Probing(now);
  for (auto& [id, s] : streams_) {
    if (!s.held || s.leaving) continue;
    if (any && s.sent - least > options_.quantum_bytes) continue;
    s.held = false;
    ++s.waking;
    out->push_back([this, id, wake = s.wake] {
      const uint64_t outer = waking;  // a wake may run others' (its stream's end releases them)
      waking = id;
      wake();
      waking = outer;
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(id);
      if (it != streams_.end()) --it->second.waking;
      changed_.notify_all();
    });
  }
}

SendShare::Clock::time_point SendShare::NextDeadline(Clock::time_point now) const {
  Clock::time_point next = Clock::time_point::max();
  bool held = false;
  for (const auto& [id, s] : streams_) {
    held = held || s.held;
    if (s.writing && Contends(s, now)) next = std::min(next, s.write_start + StallLimit(s.write_bytes));
    if (now < s.slow_until) next = std::min(next, s.slow_until);
  }
  if (probe_end_ != Clock::time_point{}) next = std::min(next, probe_end_);
  // The next probe may be due; once due and not started (the link is as full as the last probe
  // found it), it is looked at again every kHeldRecheck rather than at a time already past.
  if (held) next = std::min(next, std::max(last_probe_ + kProbeEvery, now + kHeldRecheck));
  return held ? next : Clock::time_point::max();
}

void SendShare::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::time_point next = NextDeadline(now_());
    if (next == Clock::time_point::max()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, next);
    }
    if (stopping_) break;
    std::vector<std::function<void()>> wakes;
    Release(now_(), &wakes);
    if (wakes.empty()) continue;
    lock.unlock();
    for (auto& w : wakes) w();
    lock.lock();
  }
}

}  // namespace graphstore
