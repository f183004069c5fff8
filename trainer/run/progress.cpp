#include "trainer/run/progress.h"

#include <unistd.h>

#include <cstdio>

namespace citeforge::trainer {

std::string format_duration(double seconds) {
  const long s = long(seconds + 0.5);
  char buffer[32];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else if (s >= 60)
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%lds", s);
  return buffer;
}

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      start_(std::chrono::steady_clock::now()),
      tty_(isatty(STDERR_FILENO)) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(int64_t done, const std::string& status) {
  const double elapsed = elapsed_seconds();
  const double eta = done > 0 ? elapsed * double(total_ - done) / double(done) : 0;
  char bar[21];
  const int filled = total_ > 0 ? int(20 * done / total_) : 0;
  for (int i = 0; i < 20; ++i) bar[i] = i < filled ? '#' : '.';
  bar[20] = '\0';
  std::fprintf(stderr, "%s[%s] [%s] %lld/%lld  %s  elapsed %s  ETA %s%s", tty_ ? "\r\033[K" : "",
               label_.c_str(), bar, (long long)done, (long long)total_, status.c_str(),
               format_duration(elapsed).c_str(), format_duration(eta).c_str(), tty_ ? "" : "\n");
  std::fflush(stderr);
}

void Progress::finish(const std::string& status) {
  std::fprintf(stderr, "%s[%s] done in %s  %s\n", tty_ ? "\r\033[K" : "", label_.c_str(),
               format_duration(elapsed_seconds()).c_str(), status.c_str());
  std::fflush(stderr);
}

void Progress::note(const std::string& text) {
  std::fprintf(stderr, "%s[%s] %s  elapsed %s\n", tty_ ? "\r\033[K" : "", label_.c_str(),
               text.c_str(), format_duration(elapsed_seconds()).c_str());
  std::fflush(stderr);
}

void say(const std::string& text) {
  std::fprintf(stderr, "[run] %s\n", text.c_str());
}

}  // namespace citeforge::trainer
