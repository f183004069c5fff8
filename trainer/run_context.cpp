#include "trainer/run_context.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/file_io.h"
#include "trainer/eval_archive.h"
#include "trainer/eval_record.h"
#include "trainer/results.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

std::string RunContext::path(const std::string& relative) const {
  return (fs::path(run_dir) / relative).string();
}

void evaluate_all(RunContext& run, const std::string& stage, int epoch,
                  const std::string& checkpoint) {
  for (const auto& test : run.test_sets) {
    const std::string archive = eval_archive_path(run.run_dir, stage, epoch, test.spec.name);
    if (file_exists(archive)) continue;  // done before an interruption
    const std::string label = "eval " + stage + "-" + std::to_string(epoch) + " " + test.spec.name;
    auto answers =
        generate_answers(run.model, run.format, test.examples, run.config.eval.max_new_tokens,
                         run.config.eval.batch_size, label);
    EvalOptions options;
    options.metrics = run.metric_options;
    options.data_path = test.spec.path;
    options.bootstrap_resamples = run.config.eval.bootstrap_resamples;
    EvalRecord record = evaluate_answers(test.examples, answers.answers, options);
    record.stage = stage;
    record.epoch = epoch;
    record.test_set = test.spec.name;
    record.checkpoint = checkpoint;
    record.prompts = answers.prompts;
    write_eval_archive(archive, record);
    record_result(results_path(run.run_dir), result_of(record));
    auto mean = [&](const char* name) {
      const auto* a = find_aggregate(record.aggregates, name);
      return a ? a->mean : std::nan("");
    };
    std::fprintf(stderr,
                 "[eval] %s-%d %-12s F1 %.3f  P %.3f  R %.3f  reward %.3f  source quality %.3f  "
                 "words %.1f\n",
                 stage.c_str(), epoch, test.spec.name.c_str(), mean("f1"), mean("precision"),
                 mean("recall"), mean("reward"), mean("source_quality"), mean("answer_length"));
  }
}

void reset_adapters(models::LlamaForCausalLM& model, uint64_t seed) {
  models::clear_reference_adapters(model);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& [name, linear] : models::named_linears(model)) {
    if (!linear->has_lora()) continue;
    torch::nn::init::kaiming_uniform_(linear->lora_A, std::sqrt(5.0));
    linear->lora_B.zero_();
  }
}

}  // namespace citeforge::trainer
