// Scoring throughput: answers per second through rewards::score_answer (citation parsing, RAGE
// precision/recall/F1, source and format quality, the reward) for 100k answers of both citation
// styles, plus the bootstrap interval over them. PPO scores every rollout on the CPU, so this
// must stay far above the rate a policy can generate answers.
//
//   build/bench_score [--answers N] [--out experiments/bench/results/score_cpu.md]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "bench_flags.h"
#include "common/clock.h"
#include "data/synth.h"
#include "rewards/aggregate.h"
#include "rewards/metrics.h"

using namespace citeforge;

namespace {
// Named-style copies of numeric examples: each source gets an (Author, Year, p. N) name and the
// answer cites by name, so the named parser (the slower one) is measured on the same answers.
std::string to_named(const data::Example& ex, const std::string& answer) {
  std::string out = answer;
  for (const auto& s : ex.sources) {
    const std::string numeric = "[" + std::to_string(s.key) + "]";
    for (auto at = out.find(numeric); at != std::string::npos; at = out.find(numeric))
      out.replace(at, numeric.size(), " (" + s.name + ")");
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bench::require_flag_pairs(argc, argv);
  std::size_t n = 100000;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--answers")
      n = std::stoul(argv[i + 1]);
    else if (flag == "--out")
      out = argv[i + 1];
  }
  data::SynthConfig config;
  config.train = 2000;
  auto world = data::generate_synth(config);
  const auto& pool = world.splits.front().examples;  // the train split
  std::vector<data::Example> named = pool;
  std::vector<std::string> numeric_answers, named_answers;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    numeric_answers.push_back(pool[i].references.at("teacher"));
    named[i].citation_style = data::CitationStyle::named;
    named_answers.push_back(to_named(pool[i], numeric_answers.back()));
  }
  std::ostringstream md;
  md << "# Scoring throughput on CPU\n\nCommand: `build/bench_score --answers " << n
     << (out.empty() ? "" : " --out " + out)
     << "`. Teacher answers of the synthetic world (2000 distinct examples, cycled), one "
        "thread.\n\n| citation style | answers | seconds | answers/s | mean reward |\n"
        "|---|---|---|---|---|\n";
  for (const bool use_named : {false, true}) {
    const auto& examples = use_named ? named : pool;
    const auto& answers = use_named ? named_answers : numeric_answers;
    std::vector<double> rewards;
    rewards.reserve(n);
    auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t k = i % examples.size();
      rewards.push_back(rewards::score_answer(examples[k], answers[k]).reward);
    }
    const double seconds = seconds_since(start);
    double mean = 0;
    for (double r : rewards) mean += r;
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %zu | %.3f | %.0f | %.4f |\n",
                  use_named ? "named (Author, Year, p. N)" : "numeric [n]", n, seconds,
                  double(n) / seconds, mean / double(n));
    md << line;
    if (!use_named) {
      start = std::chrono::steady_clock::now();
      auto agg = rewards::aggregate(rewards);
      std::snprintf(line, sizeof line,
                    "\nBootstrap 95%% interval over the %zu numeric rewards (1000 resamples): "
                    "%.3f s (mean %.4f [%.4f, %.4f]).\n\n",
                    n, seconds_since(start), agg.mean, agg.ci_low, agg.ci_high);
      md << line;
    }
  }
  std::printf("%s", md.str().c_str());
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
