// Which of a stage's checkpoints a run keeps (checkpoint_keep_last): after each evaluation, the
// stage's numbered checkpoints (checkpoints/<stage>-<k>) other than the best so far by the
// selection metric on the selection test set and the last K are removed, so a long run of a 7B
// model does not fill its disk. `<stage>-last`, which a killed run resumes from, is never
// removed; the best is what selection, SFT+PPO's start and `export` read. Here, in trainer/eval,
// because "best" is the selection's rule (selection.h), applied to what the run has evaluated.
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/selection.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

// Removes what `keep_last` (> 0; 0 keeps everything) does not keep of `stage`'s numbered
// checkpoints and returns their names, oldest first. The results are read from the run's
// results.json; a stage without any result on the selection set keeps its last K only.
std::vector<std::string> prune_checkpoints(const RunDir& run, const std::string& stage,
                                           int keep_last, const SelectionOptions& selection);

}  // namespace citeforge::trainer
