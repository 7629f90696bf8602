// Soak: N client processes run M register / stream / end cycles each against one graphstored
// while this process kills some of them with SIGKILL at random; it samples the daemon's
// resident memory, open file descriptors, threads and shared-memory bytes every second and
// reports whether they stay flat after warm-up. Not a test: run it with bench/soak.sh.
//
// A cycle picks at random (seeded): socket or shared memory, one of four backends, a split;
// registers, starts an epoch, reads a random number of batches, then ends in one of five ways:
// cancels the stream, destroys the channel, reads to the end and destroys, walks away (the
// lease reaps it), or (shared memory) keeps its buffers unfreed and destroys.

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/shared_memory.h"
#include "common/flags.h"

namespace graphstore {
namespace {

struct Shared {
  std::atomic<int64_t> cycles_done{0};
  std::atomic<int64_t> cycles_started{0};
  std::atomic<int64_t> errors{0};
};

struct Options {
  std::string server;
  int clients = 8;
  int64_t cycles = 100;  // per client slot
  double kill_every_s = 2.0;
  std::string shm_dir;
  uint64_t seed = 1;
};

uint64_t Backend(client::Client& c, int k) {
  v1::InitSamplingBackendRequest req;
  req.set_backend_key("soak-" + std::to_string(k));
  auto* config = req.mutable_config();
  config->set_batch_size(64);
  config->set_shuffle(true);
  config->add_num_neighbors(10);
  config->add_num_neighbors(5);
  config->set_with_node_features(true);
  config->set_with_labels(true);
  auto r = c.InitSamplingBackend(req);
  return r.ok() ? r->backend_id() : 0;
}

// One cycle; false on an unexpected error (counted, not fatal).
bool Cycle(client::Client& c, const std::string& shm_dir, std::mt19937_64& rng) {
  const bool shm = !shm_dir.empty() && rng() % 2 == 0;
  const uint64_t backend = Backend(c, static_cast<int>(rng() % 4));
  if (backend == 0) return false;
  v1::RegisterSamplingInputRequest reg;
  reg.set_backend_id(backend);
  reg.mutable_split()->set_split(rng() % 3 == 0 ? "val" : "train");
  reg.set_seed(rng());
  reg.set_shared_memory(shm);
  reg.set_lease_ms(2000);
  reg.set_worker_key("soak");
  auto r = c.RegisterSamplingInput(reg);
  if (!r.ok()) return r.status().code() == absl::StatusCode::kResourceExhausted;  // a budget said no
  const uint64_t channel = r->channel_id();
  v1::StartEpochRequest start;
  start.set_channel_id(channel);
  start.set_epoch(0);
  if (!c.StartEpoch(start).ok()) return false;
  v1::StreamSampledMessagesRequest sreq;
  sreq.set_channel_id(channel);
  sreq.set_epoch(0);
  const int ending = static_cast<int>(rng() % (shm ? 5 : 4));
  const int64_t read = ending == 2 ? INT64_MAX : static_cast<int64_t>(rng() % 12);
  bool ok = true;
  if (shm) {
    client::SharedMappings mappings(shm_dir);  // this channel's files, unmapped with it
    auto stream = c.Stream(sreq);
    for (int64_t i = 0; i < read; ++i) {
      auto m = stream->Next();
      if (!m.ok()) {
        ok = m.status().code() == absl::StatusCode::kResourceExhausted;
        break;
      }
      if (*m == nullptr) break;
      if (!(*m)->has_shared_buffer()) continue;
      if (!mappings.Map((*m)->shared_buffer()).ok()) ok = false;
      v1::ReleaseSharedBuffersRequest rel;
      rel.set_channel_id(channel);
      rel.add_received_ids((*m)->shared_buffer().id());
      if (ending != 4) rel.add_freed_ids((*m)->shared_buffer().id());
      (void)c.ReleaseSharedBuffers(rel);
    }
    if (ending == 0) stream->Cancel();
  } else {
    client::DecodeOptions decode;
    auto stream = c.StreamBatches(sreq, decode);
    for (int64_t i = 0; i < read; ++i) {
      auto b = stream->Next();
      if (!b.ok()) {
        ok = false;
        break;
      }
      if (*b == nullptr) break;
    }
    if (ending == 0) stream->Cancel();
  }
  if (ending != 3) {
    v1::DestroySamplingInputRequest d;
    d.set_channel_id(channel);
    (void)c.DestroySamplingInput(d);
  }
  return ok;
}

[[noreturn]] void RunClient(const Options& o, Shared* shared, uint64_t seed) {
  std::mt19937_64 rng(seed);
  client::ClientOptions co;
  co.address = o.server;
  co.deadline = std::chrono::seconds(30);
  auto c = client::Client::Connect(co);
  if (!c.ok()) _exit(2);
  while (shared->cycles_started.fetch_add(1) < o.cycles * o.clients) {
    if (!Cycle(**c, o.shm_dir, rng)) shared->errors.fetch_add(1);
    shared->cycles_done.fetch_add(1);
  }
  _exit(0);
}

struct Sample {
  double t = 0;
  int64_t cycles = 0;
  double rss_mb = 0;
  int fds = 0;
  int threads = 0;
  double shm_mb = 0;
};

Sample Measure(pid_t daemon, const std::string& shm_dir, double t, int64_t cycles) {
  Sample s;
  s.t = t;
  s.cycles = cycles;
  std::ifstream status("/proc/" + std::to_string(daemon) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_mb = std::stod(line.substr(6)) / 1024.0;
    if (line.rfind("Threads:", 0) == 0) s.threads = std::stoi(line.substr(8));
  }
  if (DIR* d = opendir(("/proc/" + std::to_string(daemon) + "/fd").c_str())) {
    while (dirent* e = readdir(d)) s.fds += e->d_name[0] != '.';
    closedir(d);
  }
  if (DIR* d = opendir(shm_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      struct stat st;
      if (e->d_name[0] != '.' && stat((shm_dir + "/" + e->d_name).c_str(), &st) == 0) {
        s.shm_mb += static_cast<double>(st.st_blocks) * 512 / (1 << 20);
      }
    }
    closedir(d);
  }
  return s;
}

// The run's totals, and each gauge's mean over its last fifth against its second fifth (after
// warm-up) and its value once idle.
void PrintSummary(const std::vector<Sample>& samples, const Sample& idle, int clients, int64_t kills,
                  const Shared& shared_state) {
  const Shared* shared = &shared_state;
  // Flat: the last fifth of the run against the second fifth (after warm-up).
  const size_t n = samples.size();
  auto mean = [&](size_t from, size_t to, auto field) {
    double sum = 0;
    for (size_t i = from; i < to; ++i) sum += field(samples[i]);
    return to > from ? sum / static_cast<double>(to - from) : 0;
  };
  std::printf("\n%lld cycles by %d client slots, %lld clients killed, %lld cycles with an unexpected error\n",
              static_cast<long long>(shared->cycles_done.load()), clients, static_cast<long long>(kills),
              static_cast<long long>(shared->errors.load()));
  if (n >= 10) {
    const size_t a = n / 5, b = 2 * n / 5, c = 4 * n / 5;
    auto row = [&](const char* name, auto field, double idle_value) {
      const double warm = mean(a, b, field), last = mean(c, n, field);
      std::printf("%-8s after warm-up %9.1f   last fifth %9.1f   ratio %5.2f   idle after %9.1f\n", name, warm, last,
                  warm > 0 ? last / warm : 0.0, idle_value);
    };
    row("rss_mb", [](const Sample& s) { return s.rss_mb; }, idle.rss_mb);
    row("fds", [](const Sample& s) { return static_cast<double>(s.fds); }, idle.fds);
    row("threads", [](const Sample& s) { return static_cast<double>(s.threads); }, idle.threads);
    row("shm_mb", [](const Sample& s) { return s.shm_mb; }, idle.shm_mb);
  }
}

int Main(int argc, char** argv) {
  Flags flags;
  flags.Define("server", "", "host:port of the graphstored under test");
  flags.Define("pid", "0", "its process id (for /proc)");
  flags.Define("shared_memory_dir", "", "its --shared_memory_dir (empty: socket clients only)");
  flags.Define("clients", "8", "client processes at a time");
  flags.Define("cycles", "100", "cycles per client");
  flags.Define("kill_every_s", "2", "SIGKILL a random client this often (0: never)");
  flags.Define("seed", "1", "random seed");
  if (auto done = flags.ParseCommandLine(argc, argv, "soak_bench",
                                         "N clients x M cycles with random endings and kills against one daemon");
      done.has_value()) {
    return *done;
  }
  Options o;
  o.server = flags.Get("server");
  const pid_t daemon = static_cast<pid_t>(*flags.GetInt("pid"));
  o.shm_dir = flags.Get("shared_memory_dir");
  o.clients = static_cast<int>(*flags.GetInt("clients"));
  o.cycles = *flags.GetInt("cycles");
  o.kill_every_s = std::stod(flags.Get("kill_every_s"));
  o.seed = static_cast<uint64_t>(*flags.GetInt("seed"));
  if (o.server.empty() || daemon <= 0 || o.clients < 1 || o.cycles < 1) {
    std::fprintf(stderr, "soak_bench: --server, --pid, --clients >= 1 and --cycles >= 1 are required\n");
    return 2;
  }
  // Shared between the processes; no gRPC object exists in this one, so forking is safe.
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (shared) Shared();
  std::mt19937_64 rng(o.seed);
  std::vector<pid_t> children;
  auto spawn = [&] {
    const uint64_t seed = rng();
    const pid_t pid = fork();
    if (pid == 0) RunClient(o, shared, seed);
    children.push_back(pid);
  };
  for (int i = 0; i < o.clients; ++i) spawn();

  std::printf("%6s %8s %9s %5s %8s %8s\n", "t_s", "cycles", "rss_mb", "fds", "threads", "shm_mb");
  std::vector<Sample> samples;
  const auto t0 = std::chrono::steady_clock::now();
  auto next_kill = o.kill_every_s;
  int64_t kills = 0;
  while (!children.empty()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the sampling period, not a wait for an event
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto it = children.begin(); it != children.end();) {
      int st = 0;
      if (waitpid(*it, &st, WNOHANG) == *it) {
        it = children.erase(it);
      } else {
        ++it;
      }
    }
    const bool work_left = shared->cycles_started.load() < o.cycles * o.clients;
    if (o.kill_every_s > 0 && t >= next_kill && !children.empty() && work_left) {
      const size_t victim = rng() % children.size();
      kill(children[victim], SIGKILL);
      waitpid(children[victim], nullptr, 0);
      children.erase(children.begin() + static_cast<long>(victim));
      ++kills;
      spawn();  // a new trainer takes its place
      next_kill += o.kill_every_s;
    }
    samples.push_back(Measure(daemon, o.shm_dir, t, shared->cycles_done.load()));
    const Sample& s = samples.back();
    std::printf("%6.0f %8lld %9.1f %5d %8d %8.1f\n", s.t, static_cast<long long>(s.cycles), s.rss_mb, s.fds,
                s.threads, s.shm_mb);
    std::fflush(stdout);
  }
  // Let the daemon's leases (2 s) reap what killed and walking-away clients left, then look
  // once more: the idle state after the soak.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const Sample idle = Measure(daemon, o.shm_dir, 0, shared->cycles_done.load());

  PrintSummary(samples, idle, o.clients, kills, *shared);
  return 0;
}

}  // namespace
}  // namespace graphstore

int main(int argc, char** argv) { return graphstore::Main(argc, argv); }
