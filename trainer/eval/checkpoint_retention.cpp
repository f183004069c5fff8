#include "trainer/eval/checkpoint_retention.h"

#include <algorithm>
#include <filesystem>

#include "common/file_io.h"
#include "trainer/eval/results.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

namespace {

// The numbered checkpoints of `stage` (<stage>-<k>), by k.
std::vector<std::pair<int, std::string>> numbered(const RunDir& run, const std::string& stage) {
  std::vector<std::pair<int, std::string>> out;
  std::error_code error;
  if (!fs::is_directory(run.checkpoints(), error)) return out;
  const std::string prefix = stage + "-";
  for (const auto& entry : fs::directory_iterator(run.checkpoints(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    if (rest.empty() || rest.size() > 9 || !std::all_of(rest.begin(), rest.end(), ::isdigit))
      continue;  // "<stage>-last", a temporary, or another stage ("sft" vs "sft+ppo")
    out.emplace_back(std::stoi(rest), name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> prune_checkpoints(const RunDir& run, const std::string& stage,
                                           int keep_last, const SelectionOptions& selection) {
  std::vector<std::string> removed;
  if (keep_last <= 0) return removed;
  const auto checkpoints = numbered(run, stage);
  if (static_cast<int>(checkpoints.size()) <= keep_last) return removed;
  std::string best;
  if (file_exists(run.results())) {
    std::vector<ResultRecord> results;
    for (auto& r : read_results(run.results()))
      if (r.stage == stage) results.push_back(std::move(r));
    bool evaluated = false;
    for (const auto& r : results) evaluated |= r.test_set == selection.validation;
    if (evaluated)
      if (auto s = select_checkpoint(results, stage, selection, run.results()))
        best = fs::path(s->checkpoint).filename().string();
  }
  for (std::size_t i = 0; i + keep_last < checkpoints.size(); ++i) {
    const std::string& name = checkpoints[i].second;
    if (name == best) continue;
    fs::remove_all(run.checkpoint(name));
    removed.push_back(name);
  }
  return removed;
}

}  // namespace citeforge::trainer
