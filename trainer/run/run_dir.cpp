#include "trainer/run/run_dir.h"

#include <filesystem>

#include "common/file_io.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

std::string RunDir::path(const std::string& relative) const {
  return (fs::path(root) / relative).string();
}

std::string RunDir::name() const {
  fs::path p = fs::path(root).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/a/"
  std::string name = p.filename().string();
  return name.empty() || name == "." ? fs::absolute(p).filename().string() : name;
}

std::string RunDir::eval_archive(const std::string& stage, int epoch,
                                 const std::string& test_set) const {
  return (fs::path(eval()) / (stage + "-" + std::to_string(epoch)) / (test_set + ".h5")).string();
}

std::optional<RunDir> run_of_checkpoint(const std::string& checkpoint_dir) {
  fs::path dir = fs::path(checkpoint_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "checkpoints/sft-1/"
  const fs::path checkpoints = dir.parent_path();
  RunDir run{checkpoints.parent_path().string()};
  if (fs::path(run.checkpoints()).lexically_normal() != checkpoints.lexically_normal() ||
      !file_exists(run.config()))
    return std::nullopt;
  return run;
}

std::optional<RunConfig> read_resolved_config(const RunDir& run) {
  if (!file_exists(run.config())) return std::nullopt;
  // The files it names (data, templates, the model) belong to the machine that ran it; reading
  // its choices needs none of them.
  return parse_run_config(read_file(run.config()), run.config(), {}, FileChecks::off);
}

Table3Roles table3_roles(const RunConfig& config) {
  Table3Roles roles;
  for (const auto& t : config.data.test_sets)
    if (t.ood) roles.out_of_distribution.push_back(t.name);
  if (!roles.out_of_distribution.empty()) roles.in_distribution = config.selection.test_set;
  return roles;
}

}  // namespace citeforge::trainer
