// A run directory's layout (docs/design.md §5, "Run directory"): the one place that names its
// files, so that the run that writes them, `citeforge tables` and the commands that read a
// run's checkpoints agree by construction. Also reads a run's resolved config back, through the
// config parser, and finds the run a checkpoint directory belongs to.
#pragma once

#include <optional>
#include <string>

#include "trainer/config/run_config.h"

namespace citeforge::trainer {

struct RunDir {
  std::string root;

  std::string path(const std::string& relative) const;  // root / relative
  std::string name() const;  // the directory's own name ("runs/demo/" -> "demo")

  std::string config() const { return path("config.resolved.yaml"); }
  std::string metrics() const { return path("metrics.jsonl"); }
  // One record per start or continuation of the run: when, and which citeforge (version_text).
  std::string builds() const { return path("builds.jsonl"); }
  std::string results() const { return path(kResults); }
  static constexpr const char* kResults = "results.json";
  std::string selection() const { return path("selection.json"); }
  std::string checkpoints() const { return path("checkpoints"); }
  // checkpoints/<name>, e.g. "sft-2"; relative() gives it as results.json names it.
  std::string checkpoint(const std::string& name) const { return path(relative_checkpoint(name)); }
  static std::string relative_checkpoint(const std::string& name) { return "checkpoints/" + name; }
  // The base model a run builds, in HF layout, and the tokenizer it trains for it.
  std::string base_model() const { return path(kBaseModel); }
  static constexpr const char* kBaseModel = "base_model";
  std::string built_tokenizer() const { return path(std::string(kBaseModel) + "/tokenizer.model"); }
  // The generated world's splits (data::synth_split_path names them) and data.holdout's draw.
  std::string data_dir() const { return path("data"); }
  std::string holdout() const { return path("data/holdout.jsonl"); }
  std::string tables() const { return path("tables"); }
  std::string plots() const { return path("plots"); }
  std::string eval() const { return path("eval"); }
  // eval/<stage>-<epoch>/<test set>.h5
  std::string eval_archive(const std::string& stage, int epoch, const std::string& test_set) const;
};

// Makes the run directory and writes the resolved config into it. A directory that already
// holds a run continues only with the same config, up to the keys a finished run may take on
// (eval.corrections, eval.scenarios, eval.attributability_threshold, threads, gradient
// checkpointing); any other difference is an error naming the keys. Either way it appends the
// build that starts or continues the run to builds.jsonl.
void prepare_run_dir(const RunConfig& config, const RunDir& run);

// The run a checkpoint directory sits in (RUN/checkpoints/<name>, with RUN/config.resolved.yaml
// beside), or nullopt for an adapter elsewhere.
std::optional<RunDir> run_of_checkpoint(const std::string& checkpoint_dir);

// The run's config.resolved.yaml read through the config parser, or nullopt when the run has
// none. The config may be older than this citeforge: keys it retired are read as the parser
// reads any config, so an error names the file and the key.
std::optional<RunConfig> read_resolved_config(const RunDir& run);

// Table 3's roles as a run's config gives them: the set selected on, against the sets marked
// `ood` (given documents only: a retrieval scenario's sets are not correlated).
struct Table3Roles {
  std::string in_distribution;
  std::vector<std::string> out_of_distribution;
};
Table3Roles table3_roles(const RunConfig& config);

}  // namespace citeforge::trainer
