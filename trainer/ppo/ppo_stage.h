// The PPO setting of a run: iterations of rollout (sample prompts, generate, score) and learner
// update, logged to the terminal and metrics.jsonl, checkpointed every N iterations, evaluated
// every M iterations and at the end (each evaluation is one "epoch" of the setting in
// results.json), resumable from its last checkpoint.
//
// One loop serves one process and several (docs/design.md §5, "Several processes"); a single
// process is rank 0 of one, rolling out and learning, with no collective. Per iteration:
//   1. every rank draws the iteration's prompts (the same seeded draw as one process);
//   2. each rollout rank generates its contiguous shard of them with its copy of the policy,
//      every row sampled with the generator it has in the single-process batch;
//   3. the shards (tokens, log-probabilities, rewards) are all-gathered; each learner joins
//      them into the batch and runs the update (ppo_update with one learner, the data-parallel
//      one with several, gradients all-reduced);
//   4. rank 0 broadcasts the new adapter and value-head weights (never the frozen base) tagged
//      with their version, the iteration number: a rank applies them only whole and only when
//      the version is the one it expects, and trajectories carry the version that sampled them,
//      which the learners check, so no rollout mixes weights and no update sees stale samples;
//   5. rank 0 alone logs, checkpoints and evaluates, while the
//      rollout ranks already generate the next iteration.
#pragma once

#include <string>

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

// `stage` is "ppo" (from fresh adapters) or "sft+ppo" (from the loaded SFT adapters).
void run_ppo(RunContext& run, const std::string& stage);

}  // namespace citeforge::trainer
