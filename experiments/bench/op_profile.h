// Where a benchmark's time goes, by ATen operator: a RecordFunction observer that sums each
// operator's calls, total time and self time (its time minus that of the operators it called)
// on the observing thread. Light enough to leave on for a whole part, unlike the legacy
// profiler's trace, which keeps every event and its shapes.
//
//   bench::OpProfile profile;   // observing from here
//   ...work...
//   auto table = profile.top(25);  // stops observing; the 25 operators with most self time
#pragma once

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace citeforge::bench {

class OpProfile {
 public:
  OpProfile() {
    state() = std::make_unique<State>();
    handle_ =
        at::addThreadLocalCallback(at::RecordFunctionCallback(&OpProfile::enter, &OpProfile::leave)
                                       .scopes({at::RecordScope::FUNCTION}));
    start_ = Clock::now();
  }
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  ~OpProfile() { stop(); }

  // The operators with the most self time, with the share of the observed wall time.
  nlohmann::json top(std::size_t n) {
    stop();
    std::vector<std::pair<std::string, Totals>> rows(state()->totals.begin(),
                                                     state()->totals.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.self_s > b.second.self_s; });
    nlohmann::json out = {{"wall_s", wall_s_}, {"operators", nlohmann::json::array()}};
    for (std::size_t i = 0; i < rows.size() && i < n; ++i)
      out["operators"].push_back({{"op", rows[i].first},
                                  {"calls", rows[i].second.calls},
                                  {"self_s", rows[i].second.self_s},
                                  {"total_s", rows[i].second.total_s},
                                  {"self_share", rows[i].second.self_s / wall_s_}});
    return out;
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Totals {
    int64_t calls = 0;
    double self_s = 0, total_s = 0;
  };
  struct Frame {
    Clock::time_point start;
    double children_s = 0;
  };
  struct State {
    std::map<std::string, Totals> totals;
    std::vector<Frame> stack;
  };
  static std::unique_ptr<State>& state() {
    thread_local std::unique_ptr<State> s;
    return s;
  }
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction&) {
    if (auto& s = state()) s->stack.push_back({Clock::now(), 0.0});
    return nullptr;
  }
  static void leave(const at::RecordFunction& fn, at::ObserverContext*) {
    auto& s = state();
    if (!s || s->stack.empty()) return;
    const Frame frame = s->stack.back();
    s->stack.pop_back();
    const double total = std::chrono::duration<double>(Clock::now() - frame.start).count();
    auto& t = s->totals[fn.name()];
    ++t.calls;
    t.total_s += total;
    t.self_s += total - frame.children_s;
    if (!s->stack.empty()) s->stack.back().children_s += total;
  }
  void stop() {
    if (!handle_) return;
    at::removeCallback(handle_);
    handle_ = 0;
    wall_s_ = std::chrono::duration<double>(Clock::now() - start_).count();
  }

  at::CallbackHandle handle_ = 0;
  Clock::time_point start_;
  double wall_s_ = 0;
};

}  // namespace citeforge::bench
