#include "server/util/progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/util/log.h"

namespace graphstore {

std::string ShortCount(double n) {
  if (n >= 1e9) return absl::StrFormat("%.1fG", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.1fM", n / 1e6);
  if (n >= 1e4) return absl::StrFormat("%.1fk", n / 1e3);
  return absl::StrFormat("%.0f", n);
}

Progress::Progress(std::string phase, int64_t total, std::string unit, Options options)
    : phase_(std::move(phase)),
      total_(total),
      unit_(std::move(unit)),
      options_(std::move(options)),
      start_(options_.now ? options_.now() : Clock::now()) {
  if (options_.terminal < 0) options_.terminal = isatty(STDERR_FILENO) ? 1 : 0;
  last_report_ = start_;
}

Progress::~Progress() { Finish(); }

std::string Progress::Line(bool final, Clock::time_point now) const {
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double done = static_cast<double>(done_.load(std::memory_order_relaxed));
  const std::string rate = secs > 0 ? absl::StrFormat(", %s %s/s", ShortCount(done / secs), unit_) : "";
  if (final) return absl::StrFormat("%s: %s %s in %.1f s%s", phase_, ShortCount(done), unit_, secs, rate);
  if (total_ > 0) {
    return absl::StrFormat("%s: %.0f%% (%s of %s %s%s)", phase_, 100.0 * done / static_cast<double>(total_),
                           ShortCount(done), ShortCount(static_cast<double>(total_)), unit_, rate);
  }
  return absl::StrFormat("%s: %s %s%s", phase_, ShortCount(done), unit_, rate);
}

void Progress::Emit(const std::string& line, bool final) {
  if (options_.sink) return options_.sink(line, final);
  if (options_.terminal == 1) {
    // One line rewritten in place; the total ends it.
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
    std::fflush(stderr);
    return;
  }
  Logger("progress")->info("{}", line);
}

void Progress::Add(int64_t n) {
  const int64_t done = done_.fetch_add(n, std::memory_order_relaxed) + n;
  if (total_ > 0 && done >= total_) return;  // the total follows
  const Clock::time_point now = options_.now ? options_.now() : Clock::now();
  absl::MutexLock lock(&mu_);
  if (finished_ || std::chrono::duration<double>(now - last_report_).count() < options_.interval_s) return;
  last_report_ = now;
  Emit(Line(false, now), false);
}

void Progress::Note(const std::string& text) {
  absl::MutexLock lock(&mu_);
  Emit(absl::StrCat(phase_, ": ", text), true);
}

void Progress::Finish() {
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  finished_ = true;
  Emit(Line(true, options_.now ? options_.now() : Clock::now()), true);
}

}  // namespace graphstore
