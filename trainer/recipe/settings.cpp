#include "trainer/recipe/settings.h"

#include <cstdio>

#include "common/error.h"
#include "models/lora.h"
#include "trainer/eval/results.h"
#include "trainer/eval/selection.h"
#include "trainer/ppo/ppo_stage.h"
#include "trainer/run/run_checkpoint.h"
#include "trainer/sft/sft_stage.h"

namespace citeforge::trainer {

void run_setting(RunContext& run, const std::string& setting) {
  if (setting == "sft") return run_sft(run);
  if (setting == "ppo") {
    models::reset_adapters(run.policy.model, run.setup.config.seed);
    return run_ppo(run, "ppo");
  }
  if (setting == "sft+ppo") {
    // PPO continues from the SFT checkpoint the validation metric selects.
    SelectionOptions options{run.setup.config.selection.metric,
                             run.setup.config.selection.test_set};
    auto chosen = select_checkpoint(read_results(run.setup.dir.results()), "sft", options,
                                    run.setup.dir.results());
    if (!chosen)
      throw Error(run.setup.config.file + ": setting sft+ppo needs the sft setting first");
    std::fprintf(stderr, "[sft+ppo] starting from %s (%s %.4f on %s)\n", chosen->checkpoint.c_str(),
                 options.metric.c_str(), chosen->value, options.validation.c_str());
    load_trainable(run.setup.dir.path(chosen->checkpoint),
                   models::lora_parameters(run.policy.model));
    // The KL penalty keeps PPO near the SFT policy it starts from (RAGE, TRL), so that adapter is
    // frozen as the reference; the base alone never saw a citation and would make every cited
    // source cost more in KL than the reward can pay.
    models::keep_reference_adapters(run.policy.model);
    return run_ppo(run, "sft+ppo");
  }
  throw Error(run.setup.config.file + ": unknown setting '" + setting + "'");
}

}  // namespace citeforge::trainer
