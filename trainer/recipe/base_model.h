// The run's tokenizer and base model (docs/design.md §4): a GGUF file imported once into the
// cache, an HF directory read as it is, or a model the run builds, with a tokenizer trained on
// the world's text and, when configured, pre-trained on it (full parameters), then saved in HF
// layout in the run directory. What the run directory already holds is not made again.
#pragma once

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

// Sets run.data.tokenizer, run.data.format.tokenizer and run.policy.base_model_dir (after
// load_data: a built model learns from the run's examples).
void prepare_base_model(RunContext& run);

// Before the run directory is made: a GGUF base imported into the cache (every check of the
// import, non-finite weights included) or an HF directory's config and tensors checked, so a run
// refused for its model writes nothing. Weights' values in an HF directory are checked when
// they load.
void check_base_model(const RunConfig& config, torch::ScalarType dtype);

}  // namespace citeforge::trainer
