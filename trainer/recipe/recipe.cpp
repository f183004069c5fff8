#include "trainer/recipe/recipe.h"

#include "common/error.h"
#include "models/chat_format.h"
#include "models/linear.h"
#include "models/lora.h"
#include "trainer/distributed/dist_run.h"
#include "trainer/eval/evaluate.h"
#include "trainer/recipe/base_model.h"
#include "trainer/recipe/run_data.h"
#include "trainer/recipe/settings.h"
#include "trainer/report/run_summary.h"
#include "trainer/run/policy.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
namespace {

// The run's setup (where it runs, in what precision, how many threads) and what its data part
// knows before any file is read (the prompt format, how invalid citations count).
RunContext start_run(const RunConfig& config, const std::string& run_dir, DistRun* dist) {
  RunContext run;
  run.setup.config = config;
  run.setup.dir = RunDir{run_dir};
  run.setup.log = RunLog{run_dir, config.logging.tensorboard, run_config_to_yaml(config)};
  run.setup.dist = dist;
  if (config.threads > 0) torch::set_num_threads(config.threads);
  if (config.device == Device::cuda) {
    if (!torch::cuda::is_available())
      throw Error(config.file + ": device is cuda but no CUDA device is available");
    run.setup.device = torch::kCUDA;
  }
  run.setup.dtype = config.model.dtype == Dtype::bfloat16 ? torch::kBFloat16 : torch::kFloat32;
  run.data.metric_options.invalid_citations = config.invalid_citations;
  run.data.format.chat = models::chat_template(config.model.chat_format);
  run.data.format.prompt =
      data::find_prompt_template(config.data.prompt_template, config.data.templates_dir);
  return run;
}

}  // namespace

int run_recipe(const RunConfig& config, const std::string& run_dir, DistRun* dist) {
  RunContext run = start_run(config, run_dir, dist);
  // The run directory keeps the resolved config; a resume with another config is refused. A
  // model that cannot be used is refused before the directory exists.
  if (is_lead(run.setup)) {
    check_base_model(config, run.setup.dtype);
    prepare_run_dir(config, run.setup.dir);
  }
  sync_ranks(run.setup, "prepare the run directory");

  // With several ranks, rank 0 makes what the run directory lacks and the others then read it.
  lead_first(run.setup, "prepare data, tokenizer and base model", [&] {
    load_data(run.setup, run.data);
    prepare_base_model(run);
  });

  // On a CPU the NF4 base is dequantised once for the whole run (see DequantizedWeights).
  const models::DequantizedWeights dense_base(run.setup.device.is_cpu());
  load_policy(run.setup, run.policy);

  // The base, adapters off, is every setting's first row.
  if (is_lead(run.setup)) {
    models::AdaptersDisabled base(run.policy.model);
    // A base the run built is named relative to the run directory, like its checkpoints.
    evaluate_all(run, "base", 0,
                 config.model.build_enabled ? RunDir::kBaseModel : run.policy.base_model_dir);
  }

  // sft, ppo, sft+ppo: each trains, evaluates after every epoch and checkpoints.
  for (const auto& setting : config.settings) {
    sync_ranks(run.setup, "start setting " + setting);  // sft+ppo reads what rank 0 wrote for sft
    run_setting(run, setting);
  }

  // Selection, the papers' tables and the plots.
  if (!is_lead(run.setup)) return 0;
  print_run_tables(run.setup, run.data);
  say("done: " + run.setup.dir.root);
  return 0;
}

}  // namespace citeforge::trainer
