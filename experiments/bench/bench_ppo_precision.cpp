// How much numerical noise PPO starts with on a real model, in fp32 and in bf16: one rollout of
// SmolLM2-135M-Instruct, then the learner's scoring pass and its first minibatch (a synthetic
// world's prompts, the demo's template and chat format). With an identical reference every number
// below would be 0 in exact arithmetic: the sampler-vs-learner log-probability gap, the KL to the
// reference, and |ratio - 1| on the first minibatch (the learner's forward on a minibatch vs its
// scoring pass on the whole batch). Two starting points: fresh adapters (PPO from the base, the
// reference is the base) and adapters already trained (SFT+PPO, the reference is a frozen copy of
// them; here random weights of the size SFT leaves, so the adapter path carries a real update).
//
//   build/bench_ppo_precision [--model weights/SmolLM2-135M-Instruct.Q4_1.gguf] [--batch 8]
//                             [--bases dense,nf4] [--dtypes float32,bfloat16]
//                             [--out experiments/bench/results/ppo_precision_cpu.md]
//
// --bases nf4 leaves out the dense bases, whose bf16 rollouts take minutes a row on a CPU without
// bf16 instructions; --dtypes float32 leaves out bf16 altogether.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "bench_flags.h"
#include "common/error.h"
#include "data/prompt_template.h"
#include "data/synth.h"
#include "models/chat_format.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/lora.h"
#include "models/tokenizer.h"
#include "trainer/ppo/ppo_learner.h"
#include "trainer/ppo/ppo_rollout.h"

using namespace citeforge;

namespace {

struct Row {
  std::string dtype, base, start;
  trainer::PpoStats stats;
  double seconds = 0;
};

Row measure(const std::string& model_dir, const models::Tokenizer& tokenizer,
            const std::vector<data::Example>& prompts, torch::Dtype dtype, bool nf4,
            bool trained_adapters) {
  auto start = std::chrono::steady_clock::now();
  models::LoadOptions load;
  load.dtype = dtype;
  load.nf4 = nf4;
  auto policy = models::load_model(model_dir, load);
  torch::manual_seed(1);
  models::LoraConfig lora;
  lora.spec = {16, 32.0, 0.05};  // the demo's adapters
  models::attach_lora(policy, lora);
  if (trained_adapters) {
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : models::lora_parameters(policy))
      if (name.ends_with("lora_B")) p.normal_(0.0, 0.01);
    models::keep_reference_adapters(policy);
  }
  trainer::PromptFormat format{
      &tokenizer, models::chat_template("smollm2"),
      data::find_prompt_template("rage_numeric_key_last", "configs/templates")};
  // What a run does: the rollout and the learner's scoring pass prefill the prompts' shared start
  // once and pack the rest (ppo.share_prompt_prefix, on by default).
  const trainer::PpoSection run_default;
  trainer::RolloutOptions options;
  options.share_prompt_prefix = run_default.share_prompt_prefix;
  options.temperature = 0.7;
  options.max_new_tokens = 32;
  options.seed = 5;
  auto batch = trainer::rollout(policy, format, prompts, options, {});

  trainer::PpoSection config = run_default;
  config.temperature = 0.7;
  config.batch_size = int(prompts.size());
  config.minibatch_size = std::max(1, int(prompts.size()) / 2);
  config.ppo_epochs = 1;
  config.max_logprob_gap = 0;  // measured, not enforced
  torch::manual_seed(2);
  auto learner = trainer::make_ppo_learner(
      policy, models::ValueHead(models::width_scaled_value_head(policy->config.hidden_size)),
      config, tokenizer.eos_id());
  // The dtype the decoder really holds (the embeddings: an NF4 base keeps them dense).
  const auto held = policy->model->embed_tokens->weight.scalar_type();
  if (held != dtype) throw Error("the model loaded as " + std::string(c10::toString(held)));
  Row row{dtype == torch::kBFloat16 ? "bfloat16" : "float32", nf4 ? "NF4" : "dense",
          trained_adapters ? "trained adapters (SFT+PPO)" : "fresh adapters (PPO)"};
  row.stats = trainer::ppo_update(learner, batch, 3, 1);
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return row;
}

// Which of two names a comma-separated flag value lists (at least one; anything else is a
// one-line error naming the flag).
std::pair<bool, bool> either_or_both(const std::string& flag, const std::string& value,
                                     const std::string& first, const std::string& second) {
  bool with_first = false, with_second = false;
  for (std::string rest = value + ","; !rest.empty(); rest.erase(0, rest.find(',') + 1)) {
    const std::string name = rest.substr(0, rest.find(','));
    if (name == first)
      with_first = true;
    else if (name == second)
      with_second = true;
    else
      throw Error(flag + ": expected " + first + " and/or " + second + ", comma-separated, got '" +
                  value + "'");
  }
  return {with_first, with_second};
}

}  // namespace

int main(int argc, char** argv) {
  bench::require_flag_pairs(argc, argv);
  std::string model = "weights/SmolLM2-135M-Instruct.Q4_1.gguf", out, bases = "dense,nf4",
              dtypes = "float32,bfloat16";
  int batch = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--model")
      model = argv[i + 1];
    else if (flag == "--batch")
      batch = std::stoi(argv[i + 1]);
    else if (flag == "--out")
      out = argv[i + 1];
    else if (flag == "--bases")
      bases = argv[i + 1];
    else if (flag == "--dtypes")
      dtypes = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    const std::string dir = models::is_gguf_path(model) ? models::gguf_model_dir(model) : model;
    models::Tokenizer tokenizer(dir);
    data::SynthConfig synth;  // the demo's world, seed 1
    synth.train = batch;
    synth.validation = synth.test = synth.test_ood = 1;
    auto world = data::generate_synth(synth);
    const auto& prompts = world.splits.front().examples;

    const auto [with_dense, with_nf4] = either_or_both("--bases", bases, "dense", "nf4");
    const auto [with_fp32, with_bf16] = either_or_both("--dtypes", dtypes, "float32", "bfloat16");
    std::vector<Row> rows;
    for (auto [dtype, nf4] :
         {std::pair{torch::kFloat32, false}, std::pair{torch::kFloat32, true},
          std::pair{torch::kBFloat16, false}, std::pair{torch::kBFloat16, true}})
      for (bool trained : {false, true}) {
        if (!(nf4 ? with_nf4 : with_dense)) continue;
        if (!(dtype == torch::kBFloat16 ? with_bf16 : with_fp32)) continue;
        rows.push_back(measure(dir, tokenizer, prompts, dtype, nf4, trained));
        const auto& s = rows.back().stats;
        std::fprintf(stderr,
                     "%s %s %s: gap max %.3g mean %.3g, KL k1 %.3g k3 %.3g, |r-1| %.3g (%.0f s)\n",
                     rows.back().dtype.c_str(), rows.back().base.c_str(), rows.back().start.c_str(),
                     s.logprob_gap_max, s.logprob_gap_mean, s.kl_k1, s.kl_k3,
                     s.first_ratio_deviation, rows.back().seconds);
      }

    std::ostringstream md;
    md << "# PPO's starting noise in fp32 and bf16\n\n"
       << "`build/bench_ppo_precision --model " << model << " --batch " << batch << " --bases "
       << bases << " --dtypes " << dtypes << "`: SmolLM2-135M-Instruct, " << batch
       << " prompts of a synthetic world (seed 1) (rage_numeric_key_last, smollm2 chat), "
          "one rollout at temperature 0.7 with up to 32 new tokens, LoRA r 16 on every "
          "projection, then the learner's scoring pass and its first minibatch of "
       << std::max(1, batch / 2)
       << ". Every number would be 0 in exact arithmetic. The output layer and the adapter "
          "path run in fp32 on the bf16 models. share_prompt_prefix "
       << (trainer::PpoSection{}.share_prompt_prefix ? "on" : "off")
       << " (a run's default): the rollout and the scoring pass "
       << (trainer::PpoSection{}.share_prompt_prefix ? "prefill the prompts' shared start once"
                                                     : "prefill the padded prompts")
       << ", the first minibatch reads the padded batch.\n\n"
       << "| dtype | base | start | log-prob gap max | gap mean | KL k1 / answer | KL k3 / "
          "answer | first-minibatch max abs(ratio - 1) | answer tokens | s |\n"
       << "|---|---|---|---|---|---|---|---|---|---|\n";
    char line[400];
    for (const auto& r : rows) {
      const auto& s = r.stats;
      std::snprintf(
          line, sizeof line, "| %s | %s | %s | %.3g | %.3g | %.3g | %.3g | %.3g | %.1f | %.0f |\n",
          r.dtype.c_str(), r.base.c_str(), r.start.c_str(), s.logprob_gap_max, s.logprob_gap_mean,
          s.kl_k1, s.kl_k3, s.first_ratio_deviation, s.response_tokens, r.seconds);
      md << line;
    }
    std::printf("%s", md.str().c_str());
    if (!out.empty()) std::ofstream(out) << md.str();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ppo_precision: %s\n", e.what());
    return 1;
  }
}
