// One PPO iteration of the demo split into its parts: rollout (sampling answers and scoring
// them), the reference/value pass and the update, with tokens/s, on a run the demo (or any
// config with a built model) produced: its base model, tokenizer and training examples. The same
// harness runs on a GPU with --device cuda.
//
//   build/bench_ppo --run runs/demo [--iterations 10] [--batch 32] [--device cpu|cuda]
//                   [--nf4] [--lora-r 64] [--out experiments/bench/results/ppo_cpu.md]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "data/prompt_template.h"
#include "models/checkpoint_io.h"
#include "models/lora.h"
#include "trainer/ppo/ppo_learner.h"
#include "trainer/ppo/ppo_rollout.h"

using namespace citeforge;

int main(int argc, char** argv) {
  std::string run = "runs/demo", device_name = "cpu", out;
  int iterations = 10, batch = 32, lora_r = 64;  // configs/demo_built.yaml: r 64, alpha 64
  bool nf4 = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--nf4")
      nf4 = true;
    else if (i + 1 < argc && flag == "--run")
      run = argv[++i];
    else if (i + 1 < argc && flag == "--iterations")
      iterations = std::stoi(argv[++i]);
    else if (i + 1 < argc && flag == "--lora-r")
      lora_r = std::stoi(argv[++i]);
    else if (i + 1 < argc && flag == "--batch")
      batch = std::stoi(argv[++i]);
    else if (i + 1 < argc && flag == "--device")
      device_name = argv[++i];
    else if (i + 1 < argc && flag == "--out")
      out = argv[++i];
  }
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  models::LoadOptions load;
  load.device = device;
  load.dtype = device.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
  load.nf4 = nf4;
  auto policy = models::load_model(run + "/base_model", load);
  models::Tokenizer tokenizer(run + "/base_model/tokenizer.model");
  models::LoraConfig lora;
  lora.spec = {lora_r, double(lora_r), 0.05};
  models::attach_lora(policy, lora);
  trainer::PromptFormat format{&tokenizer, models::chat_template("plain"),
                               data::find_prompt_template("rage_numeric", "configs/templates")};
  auto examples = data::read_examples_jsonl(run + "/data/train.jsonl");
  trainer::PpoSection config;
  config.batch_size = batch;
  config.minibatch_size = 8;
  config.ppo_epochs = 2;
  config.lr = 1e-4;
  config.max_new_tokens = 40;
  models::ValueHeadOptions head;
  head.hidden_size = policy->config.hidden_size;
  models::ValueHead value_head(head);
  value_head->to(device);
  auto learner = trainer::make_ppo_learner(policy, value_head, config, tokenizer.eos_id());

  double rollout_s = 0, reference_s = 0, update_s = 0, tokens = 0;
  for (int it = 0; it <= iterations; ++it) {  // iteration 0 warms up and is not counted
    std::vector<data::Example> prompts;
    for (int b = 0; b < batch; ++b)
      prompts.push_back(examples[(std::size_t(it) * batch + b) % examples.size()]);
    auto start = std::chrono::steady_clock::now();
    trainer::RolloutOptions options{0.7, 1.0, 40, uint64_t(it), 0};
    options.share_prompt_prefix = config.share_prompt_prefix;  // as a run rolls out
    auto trajectories =
        trainer::rollout(policy, format, prompts, options, rewards::MetricOptions{});
    const double r =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto stats = trainer::ppo_update(learner, trajectories, uint64_t(it), it);
    if (it == 0) continue;
    rollout_s += r;
    reference_s += stats.reference_value_seconds;
    update_s += stats.update_seconds;
    for (std::size_t i = 0; i < trajectories.prompts.size(); ++i)
      tokens += double(trajectories.prompts[i].size() + trajectories.responses[i].size());
  }
  const double total = rollout_s + reference_s + update_s;
  std::ostringstream md;
  char buf[900];
  std::snprintf(
      buf, sizeof buf,
      "# PPO iteration on %s\n\nCommand: `build/bench_ppo --run %s --iterations %d --batch %d "
      "--device %s --lora-r %d%s%s`. The demo's base model (%s base) with LoRA r %d on every "
      "projection, %d prompts per iteration, up to 40 tokens sampled at temperature 0.7 each, 2 "
      "PPO epochs over minibatches of "
      "8; mean over %d iterations after one warm-up.\n\n"
      "| part | seconds per iteration | share |\n|---|---|---|\n"
      "| rollout (sample + score) | %.3f | %.0f%% |\n"
      "| reference + value pass | %.3f | %.0f%% |\n"
      "| update | %.3f | %.0f%% |\n"
      "| total | %.3f | |\n\n"
      "Tokens (prompt + response) processed per second of iteration: %.0f.\n",
      device_name.c_str(), run.c_str(), iterations, batch, device_name.c_str(), lora_r,
      nf4 ? " --nf4" : "", out.empty() ? "" : (" --out " + out).c_str(), nf4 ? "NF4" : "dense",
      lora_r, batch, iterations, rollout_s / iterations, 100 * rollout_s / total,
      reference_s / iterations, 100 * reference_s / total, update_s / iterations,
      100 * update_s / total, total / iterations, tokens / total);
  md << buf;
  std::printf("%s", md.str().c_str());
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
