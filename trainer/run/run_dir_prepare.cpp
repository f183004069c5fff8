// Whether a run directory may continue with a config: the keys a finished run can take on
// without its results changing meaning, and the resolved config written for the next resume.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "common/version.h"
#include "trainer/run/progress.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {
namespace {

// The keys in which two resolved configs differ ("sft.lr", "data.test_sets"), leaving out those
// a finished run can take on without its results changing meaning: eval.corrections,
// eval.baselines and eval.scenarios only add evaluations of the same checkpoints,
// eval.attributability_threshold adds a metric to the evaluations still to come, and threads only
// change speed. Gradient checkpointing trades speed for memory with the same gradients (up to
// rounding, as threads), so a run killed for memory can resume with it on; prefilling the
// prompts' shared prefix once (share_prompt_prefix of every stage and eval) is the same computation
// up to rounding too, so a run begun before it was the default continues. How the run reports
// (logging) and how many checkpoints it keeps change no number. The retrieval depth and the judge's
// threshold count once both sides have them.
std::vector<std::string> config_differences(const std::string& before, const std::string& now) {
  YAML::Node a = YAML::Load(before), b = YAML::Load(now);
  auto both = [&](const char* key) {
    return a["eval"] && a["eval"][key] && b["eval"] && b["eval"][key];
  };
  // Settings of added evaluations count only where both sides have them.
  const bool both_retrieve = both("scenarios"), both_judge = both("attributability_threshold");
  for (YAML::Node* n : {&a, &b}) {
    n->remove("threads");
    n->remove("logging");
    n->remove("checkpoint_keep_last");
    for (const char* stage : {"pretrain", "sft", "ppo"})
      if ((*n)[stage]) {
        (*n)[stage].remove("gradient_checkpointing");
        (*n)[stage].remove("share_prompt_prefix");
      }
    if (!(*n)["eval"]) continue;
    YAML::Node eval = (*n)["eval"];
    eval.remove("share_prompt_prefix");
    eval.remove("corrections");
    eval.remove("baselines");
    eval.remove("scenarios");
    if (!both_retrieve) eval.remove("retrieval_k");
    if (!both_judge) eval.remove("attributability_threshold");
  }
  std::vector<std::string> keys;
  std::function<void(const YAML::Node&, const YAML::Node&, const std::string&)> walk =
      [&](const YAML::Node& x, const YAML::Node& y, const std::string& prefix) {
        if (!x.IsDefined() || !y.IsDefined()) {  // a key one side has and the other not
          if (x.IsDefined() || y.IsDefined()) keys.push_back(prefix.substr(0, prefix.size() - 1));
          return;
        }
        if (x.IsMap() && y.IsMap()) {
          std::set<std::string> names;
          for (const auto& kv : x) names.insert(kv.first.as<std::string>());
          for (const auto& kv : y) names.insert(kv.first.as<std::string>());
          for (const auto& name : names) walk(x[name], y[name], prefix + name + ".");
          return;
        }
        if (YAML::Dump(x) != YAML::Dump(y)) keys.push_back(prefix.substr(0, prefix.size() - 1));
      };
  walk(a, b, "");
  return keys;
}

// Now in UTC, as "2026-11-27T18:30:00Z".
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

// The run directory holds the resolved config; a rerun with another config would mix two
// experiments in one directory, so that is an error rather than a silent overwrite.
void prepare_run_dir(const RunConfig& config, const RunDir& run) {
  const std::string resolved = run_config_to_yaml(config);
  const std::string path = run.config();
  const auto old = read_resolved_config(run);
  if (old) {
    if (config.resume == Resume::never)
      fail_at(run.root, "", "run directory exists and resume is 'never': choose another --out");
    const std::string before = run_config_to_yaml(*old);
    const auto differences = config_differences(before, resolved);
    if (!differences.empty()) {
      std::string keys;
      for (std::size_t i = 0; i < differences.size() && i < 6; ++i)
        keys += (i ? ", " : "") + differences[i];
      if (differences.size() > 6) keys += ", ...";
      fail_at(path, "",
              "the run directory was made with a different config (it differs in " + keys +
                  "); use another --out, or the config it was made with");
    }
    say("continuing the run in " + run.root);
    if (before != resolved)
      say("eval.corrections, eval.baselines, eval.scenarios, eval.attributability_threshold or "
          "threads changed: new evaluations are added");
  }
  std::filesystem::create_directories(run.checkpoints());
  write_file_atomically(path, resolved);
  // A record can then name the code behind a run's numbers, also when several builds shared it.
  append_jsonl(run.builds(), nlohmann::json{{"time", utc_now()},
                                            {"event", old ? "continued" : "started"},
                                            {"citeforge", version_text()}}
                                 .dump());
}

}  // namespace citeforge::trainer
