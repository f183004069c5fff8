// Progress on the terminal for long work: one line redrawn in place on a terminal, or a line
// per update when stderr is a file (CI logs), with throughput and an ETA.
#pragma once

#include <chrono>
#include <string>

namespace citeforge::trainer {

class Progress {
 public:
  Progress(std::string label, int64_t total);
  // Reports `done` of `total` units with a free-form status ("loss 1.23  lr 2e-4 ...").
  void update(int64_t done, const std::string& status);
  void finish(const std::string& status);
  // A line of its own between updates ("iteration 2/4: rollout of 16 answers in 95s"), for
  // work whose units take minutes: the phases inside a unit are shown as they end.
  void note(const std::string& text);
  double elapsed_seconds() const;

 private:
  std::string label_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
  bool tty_;
};

std::string format_duration(double seconds);

// One line of a run's narration on stderr: "[run] text".
void say(const std::string& text);

}  // namespace citeforge::trainer
