// Distributed PPO on the CPU over Gloo: seconds per PPO iteration with 1, 2 and 3 processes in
// both role layouts, the bytes broadcast per update (adapters + value head), and the share of an
// iteration rank 0 spends communicating. It runs the real CLI (`citeforge launch`) on
// experiments/bench/ppo_distributed.yaml and reads rank 0's metrics.jsonl records. Run it from
// the repository root:
//
//   build/bench_distributed [--out experiments/bench/results/distributed_cpu.md]
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/file_io.h"
#include "experiments/bench/bench_stats.h"

namespace fs = std::filesystem;

namespace {

struct Case {
  int processes;
  int threads;            // intra-op threads per process
  std::string layout;     // shown in the table
  std::string overrides;  // --set flags
};

struct Row {
  Case c;
  int iterations = 0;
  double iteration_s = 0, rollout_s = 0, update_s = 0, transfer_s = 0, wait_s = 0;
  long long weights_bytes = 0, trajectory_bytes = 0, gradient_bytes = 0;
};

using citeforge::bench::median;

std::string citeforge_path() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return (fs::path(std::string(buffer, size_t(std::max<ssize_t>(n, 0)))).parent_path() /
          "citeforge")
      .string();
}

Row measure(const Case& c, const fs::path& dir) {
  fs::remove_all(dir);
  // One process is the plain loop (no c10d at all), the baseline the others are measured against.
  const std::string launch =
      c.processes == 1 ? "" : " launch --nproc " + std::to_string(c.processes) + " --";
  const std::string command = citeforge_path() + launch +
                              " run experiments/bench/ppo_distributed.yaml --out " + dir.string() +
                              " --set threads=" + std::to_string(c.threads) + " " + c.overrides +
                              " > " + (dir.string() + ".log") + " 2>&1";
  std::fprintf(stderr, "[bench] %s\n", command.c_str());
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "[bench] failed; see %s.log\n", dir.c_str());
    std::exit(1);
  }
  Row row{c};
  std::vector<double> it, ro, up, tr, wa;
  std::istringstream lines(citeforge::read_file((dir / "metrics.jsonl").string()));
  for (std::string line; std::getline(lines, line);) {
    auto r = nlohmann::json::parse(line);
    if (!r.contains("reward_mean")) continue;
    ++row.iterations;
    if (r["iteration"].get<int>() == 1) continue;  // warm-up: first allocations, thread pools
    const double update = r["reference_value_s"].get<double>() + r["update_s"].get<double>();
    ro.push_back(r["rollout_s"].get<double>());
    up.push_back(update);
    it.push_back(r.value("iteration_s", r["rollout_s"].get<double>() + update));
    tr.push_back(r.value("comm_transfer_s", 0.0));
    wa.push_back(r.value("comm_wait_s", 0.0));
    row.weights_bytes = r.value("weights_bytes", 0LL);
    row.trajectory_bytes = r.value("trajectory_bytes", 0LL);
    row.gradient_bytes = r.value("gradient_bytes", 0LL);
  }
  row.iteration_s = median(it);
  row.rollout_s = median(ro);
  row.update_s = median(up);
  row.transfer_s = median(tr);
  row.wait_s = median(wa);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--out") out = argv[i + 1];
  const std::string one =
      "--set distributed.learners=1 --set distributed.rollout_on_learners=false";
  const std::string all = "--set distributed.learners=0 --set distributed.rollout_on_learners=true";
  const std::vector<Case> cases = {
      {1, 1, "one process, no c10d", ""},         {1, 2, "one process, no c10d", ""},
      {2, 1, "1 learner + 1 rollout rank", one},  {2, 1, "2 ranks, each rolls out and learns", all},
      {3, 1, "1 learner + 2 rollout ranks", one}, {3, 1, "3 ranks, each rolls out and learns", all},
  };
  const fs::path scratch = fs::temp_directory_path() / "citeforge-bench-distributed";
  fs::create_directories(scratch);
  std::vector<Row> rows;
  for (size_t i = 0; i < cases.size(); ++i)
    rows.push_back(measure(cases[i], scratch / ("case" + std::to_string(i))));

  std::ostringstream md;
  md << "# Distributed PPO on the CPU (Gloo)\n\n"
     << "Command: `build/bench_distributed --out experiments/bench/results/distributed_cpu.md` "
        "(from the repository root). Each case is `citeforge launch --nproc N -- run "
        "experiments/bench/ppo_distributed.yaml` with the layout's `--set` flags: 6 PPO "
        "iterations of 24 prompts x 32 new tokens, 2 PPO epochs of 2 minibatches, on the demo's "
        "model shape (4 layers, hidden 128, LoRA r 16 on all linear layers, fp32). Times are "
        "rank 0's medians over iterations 2-6.\n\n"
     << "Machine: " << std::thread::hardware_concurrency()
     << " hardware threads; with more processes than threads the ranks share cores, so on a "
        "small machine the 3-process rows measure contention as much as distribution.\n\n"
     << "| processes | layout | threads/process | s/iteration | rollout s | update s | "
        "transfer s | wait s | transfer share | weights broadcast / update | trajectories "
        "all-gathered / iteration | gradients all-reduced / iteration |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "| %d | %s | %d | %.3f | %.3f | %.3f | %.4f | %.3f | %.1f%% | %lld B | %lld B | "
                  "%lld B |\n",
                  r.c.processes, r.c.layout.c_str(), r.c.threads, r.iteration_s, r.rollout_s,
                  r.update_s, r.transfer_s, r.wait_s,
                  r.iteration_s > 0 ? 100.0 * r.transfer_s / r.iteration_s : 0.0, r.weights_bytes,
                  r.trajectory_bytes, r.gradient_bytes);
    md << line;
  }
  md << "\n- *rollout s*: from the start of the iteration until every rollout shard reached "
        "rank 0 (generation on the rollout ranks plus the gather). *update s*: rank 0's scoring "
        "pass and PPO epochs. *transfer s*: inside c10d collectives after every rank arrived "
        "(trajectory all-gather, weight broadcast, gradient all-reduce). *wait s*: in the store "
        "barriers before them, waiting for slower ranks (load imbalance, not communication). "
        "*transfer share*: transfer s / s per iteration. Bytes are rank 0's payloads: the "
        "broadcast is the fp32 adapters and value head plus a 16-byte version header; the "
        "all-gather pads every rank's shard to the largest one (a learner that does not roll "
        "out sends an empty shard); gradients are the learners' fp32 all-reduce per iteration "
        "(one per minibatch).\n";
  std::printf("%s", md.str().c_str());
  if (!out.empty()) citeforge::write_file_atomically(out, md.str());
  return 0;
}
