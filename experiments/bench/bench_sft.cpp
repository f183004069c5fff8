// SFT step time and tokens/s on CPU for the demo-shaped model (configs/demo_built.yaml: hidden 128,
// 4 layers, vocab 1024): full fine-tuning of a dense model, LoRA over a dense base, and LoRA
// over an NF4 base (QLoRA), plus forward-only passes of the dense and NF4 bases to show what
// dequantising on the fly costs. Random weights and tokens; the arithmetic is what matters.
//
//   build/bench_sft [--steps N] [--out experiments/bench/results/sft_cpu.md]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "bench_flags.h"
#include "models/lora.h"
#include "models/model_init.h"

using namespace citeforge;

namespace {

constexpr int64_t kBatch = 16, kSeq = 192;

models::ModelConfig demo_shape() {
  models::ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 128;
  c.intermediate_size = 344;
  c.num_layers = 4;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.rms_norm_eps = 1e-5;
  c.max_positions = 512;
  c.vocab_size = 1024;
  c.tie_word_embeddings = true;
  return c;
}

struct Row {
  std::string setting;
  int64_t trainable = 0;
  double step_ms = 0, tokens_per_s = 0;
};

torch::Tensor loss_of(models::LlamaForCausalLM& model, const torch::Tensor& ids) {
  auto logits = model->forward(ids);
  return torch::nn::functional::cross_entropy(
      logits.narrow(1, 0, kSeq - 1).reshape({-1, logits.size(-1)}),
      ids.narrow(1, 1, kSeq - 1).reshape({-1}));
}

Row measure(const std::string& setting, bool nf4, bool lora, bool train, int steps,
            int64_t rank = 64) {
  auto model = models::init_random_model(demo_shape(), 1);
  if (nf4)
    for (auto& [name, linear] : models::named_linears(model))
      if (name != "lm_head") linear->quantize_nf4();
  std::vector<torch::Tensor> params;
  if (lora) {
    models::LoraConfig config;
    config.spec = {rank, 2.0 * double(rank), 0.05};
    models::attach_lora(model, config);
    for (auto& [name, p] : models::lora_parameters(model)) params.push_back(p);
  } else {
    for (auto& p : model->parameters()) params.push_back(p);
  }
  int64_t trainable = 0;
  for (auto& p : params) trainable += p.numel();
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(1e-3));
  model->train();
  auto ids = torch::randint(3, 1024, {kBatch, kSeq});
  auto step = [&] {
    if (!train) {
      torch::NoGradGuard no_grad;
      model->forward(ids);
      return;
    }
    optimizer.zero_grad();
    loss_of(model, ids).backward();
    optimizer.step();
  };
  step();  // warm-up
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {setting, train ? trainable : 0, 1000 * seconds / steps,
          double(kBatch * kSeq * steps) / seconds};
}

}  // namespace

int main(int argc, char** argv) {
  bench::require_flag_pairs(argc, argv);
  int steps = 10;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--steps")
      steps = std::stoi(argv[i + 1]);
    else if (flag == "--out")
      out = argv[i + 1];
  }
  std::vector<Row> rows = {
      measure("dense, full fine-tuning", false, false, true, steps),
      measure("dense base + LoRA r16", false, true, true, steps, 16),
      measure("NF4 base + LoRA r16 (QLoRA)", true, true, true, steps, 16),
      measure("dense base + LoRA r64 (the demo's rank)", false, true, true, steps, 64),
      measure("NF4 base + LoRA r64 (QLoRA)", true, true, true, steps, 64),
      measure("dense base, forward only", false, false, false, steps),
      measure("NF4 base, forward only", true, false, false, steps),
  };
  std::ostringstream md;
  md << "# SFT step time on CPU (demo-shaped model)\n\n"
     << "Command: `build/bench_sft --steps " << steps << (out.empty() ? "" : " --out " + out)
     << "`. Batch " << kBatch << " x " << kSeq
     << " tokens, fp32, AdamW; the model of configs/demo_built.yaml (hidden 128, 4 layers, vocab "
        "1024) "
        "with random weights. LibTorch intra-op threads: "
     << torch::get_num_threads() << ".\n\n"
     << "| setting | trainable parameters | ms per step | tokens/s |\n|---|---|---|---|\n";
  for (const auto& r : rows) {
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %lld | %.1f | %.0f |\n", r.setting.c_str(),
                  (long long)r.trainable, r.step_ms, r.tokens_per_s);
    md << line;
  }
  std::printf("%s", md.str().c_str());
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
