// citeforge's side of the side-by-side benchmark on the embedded default's model
// (SmolLM2-135M-Instruct from its GGUF): one QLoRA SFT step, prefill and decode at batch 1 and
// 32, and one PPO iteration, each the median of --reps repetitions after a warm-up. It prints
// one JSON object; experiments/bench/side_by_side.sh runs it and the Python stack
// (side_by_side_python.py) on the same token ids and writes the table with the ratios.
//
//   build/bench_side_by_side --part sft|generate|ppo [--model FILE.gguf] [--threads N]
//                            [--reps N] [--dtype float32|bfloat16] [--write-batch FILE.json]
//                            [--batch 1|32] [--weights dense|nf4] [--profile FILE.json]
//
// --dtype is the compute dtype of the base (LoRA adapters and the output layer's logits stay
// fp32, as in a run with model.dtype: bfloat16). As in a run on a CPU, the NF4 base is
// dequantised once per process (models::DequantizedWeights), not once per matmul.
//
// The token ids come from the demo's world (seed 1), template and chat format, so both sides
// see the same batch: --write-batch stores them for the Python side. Each part runs in its own
// process, so the peak resident memory reported is that part's.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "data/prompt_template.h"
#include "data/synth.h"
#include "experiments/bench/bench_stats.h"
#include "experiments/bench/op_profile.h"
#include "models/checkpoint_io.h"
#include "models/generate.h"
#include "models/gguf_import.h"
#include "models/linear.h"
#include "models/lora.h"
#include "models/tokenizer.h"
#include "trainer/ppo/ppo_learner.h"
#include "trainer/ppo/ppo_rollout.h"
#include "trainer/sft/lm_data.h"
#include "trainer/sft/lm_trainer.h"

using namespace citeforge;
using nlohmann::json;

namespace {

// The workload, shared with the Python side through the batch file.
constexpr int kSftBatch = 8;            // SFT step: 8 of the demo's prompts with their answers
constexpr int64_t kSftMaxLen = 320;     // the demo's sft.max_seq_len
constexpr int64_t kPromptTokens = 128;  // generation: every prompt cut to this many tokens
constexpr int64_t kNewTokens = 32;
constexpr int kPpoBatch = 8, kPpoMinibatch = 4;

using citeforge::bench::median;

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return seconds_since(start);
}
struct Workload {
  std::vector<trainer::TokenSequence> sft;        // prompt + answer, loss on the answer
  std::vector<std::vector<int64_t>> prompts;      // 32 prompts of kPromptTokens tokens
  std::vector<data::Example> ppo_examples;        // the PPO batch's examples
  std::vector<std::vector<int64_t>> ppo_prompts;  // their prompts, whole
};

Workload make_workload(const models::Tokenizer& tokenizer, const trainer::PromptFormat& format) {
  data::SynthConfig synth;  // the demo's world, seed 1
  synth.train = 32;
  synth.validation = synth.test = synth.test_ood = 1;
  synth.teacher_precision = synth.teacher_recall = 0.8;
  auto world = data::generate_synth(synth);
  const auto& examples = world.splits.front().examples;
  Workload w;
  std::vector<data::Example> first(examples.begin(), examples.begin() + kSftBatch);
  w.sft = trainer::encode_sft(first, tokenizer, format.chat, format.prompt, "teacher", kSftMaxLen)
              .sequences;
  if (int(w.sft.size()) != kSftBatch) throw Error("the synthetic world lacks teacher answers");
  for (const auto& e : examples) {
    auto ids = trainer::encode_prompt(tokenizer, format.chat, format.prompt, e);
    if (int64_t(ids.size()) < kPromptTokens)
      throw Error("a prompt has only " + std::to_string(ids.size()) + " tokens");
    trainer::fit_prompt(ids, kPromptTokens);  // head and tail, as a long prompt is cut
    w.prompts.push_back(ids);
  }
  w.ppo_examples.assign(examples.begin(), examples.begin() + kPpoBatch);
  for (const auto& e : w.ppo_examples)
    w.ppo_prompts.push_back(trainer::encode_prompt(tokenizer, format.chat, format.prompt, e));
  return w;
}

void write_batch(const std::string& path, const Workload& w) {
  json batch;
  batch["sequences"] = json::array();
  for (const auto& s : w.sft)
    batch["sequences"].push_back({{"ids", s.ids}, {"loss_mask", s.loss_mask}});
  batch["prompts"] = w.prompts;
  // PPO's rollout prompts whole, as the rollout encodes them (the Python side's PPO part reads
  // them as its "prompts" from a second file, side_by_side.sh makes it).
  batch["ppo_prompts"] = w.ppo_prompts;
  std::ofstream(path) << batch.dump() << "\n";
}

torch::Dtype compute_dtype = torch::kFloat32;
int only_batch = 0;        // --batch: the generate part at this batch size only
std::string only_weights;  // --weights dense|nf4: the generate part with these weights only

const char* dtype_name() {
  return compute_dtype == torch::kBFloat16 ? "bfloat16" : "float32";
}

models::LlamaForCausalLM load(const std::string& dir, bool nf4, int lora_r) {
  models::LoadOptions options;
  options.nf4 = nf4;
  options.dtype = compute_dtype;
  auto model = models::load_model(dir, options);
  if (lora_r > 0) {
    torch::manual_seed(1);
    models::LoraConfig lora;
    lora.spec = {lora_r, 16.0, 0.0};
    models::attach_lora(model, lora);
  }
  return model;
}

json sft_part(const std::string& dir, const Workload& w, int reps) {
  json rows = json::array();
  std::vector<std::size_t> all(w.sft.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  auto batch = trainer::collate(w.sft, all, 0, torch::kCPU);
  for (bool nf4 : {true, false})
    for (int r : {16, 64}) {
      auto model = load(dir, nf4, r);
      model->train();
      std::vector<torch::Tensor> params;
      for (auto& [name, p] : models::lora_parameters(model)) params.push_back(p);
      torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(1e-4));
      auto step = [&] {
        optimizer.zero_grad();
        auto loss = trainer::masked_lm_loss_sum(model, batch) / double(batch.trained_tokens);
        loss.backward();
        optimizer.step();
      };
      step();  // warm-up
      std::vector<double> times;
      for (int i = 0; i < reps; ++i) times.push_back(seconds(step));
      const double s = median(times);
      rows.push_back({{"base", nf4 ? "nf4" : "dense"},
                      {"dtype", dtype_name()},
                      {"lora_r", r},
                      {"seconds", s},
                      {"tokens_per_s", double(batch.tokens) / s}});
      std::fprintf(stderr, "sft %s %s r%d: %.3f s/step\n", nf4 ? "nf4" : "dense", dtype_name(), r,
                   s);
    }
  return {{"batch", kSftBatch},
          {"tokens", batch.tokens},
          {"trained_tokens", batch.trained_tokens},
          {"rows", rows}};
}

// Prefill = generate one token (the prompt's forward pass and one pick); decode = the rest of
// a generation of kNewTokens tokens, per token per row. EOS never stops it.
json generate_part(const std::string& dir, const Workload& w, int reps) {
  json rows = json::array();
  for (bool nf4 : {false, true}) {
    if (only_weights == (nf4 ? "dense" : "nf4")) continue;
    auto model = load(dir, nf4, 0);
    model->eval();
    for (int batch : {1, 32}) {
      if (only_batch > 0 && batch != only_batch) continue;
      std::vector<std::vector<int64_t>> prompts(w.prompts.begin(), w.prompts.begin() + batch);
      models::SamplingOptions options;
      options.greedy = true;
      options.eos_ids = {-1};
      auto run = [&](int64_t n) {
        options.max_new_tokens = n;
        torch::NoGradGuard no_grad;
        auto out = models::generate(model, prompts, options);
        if (int64_t(out.front().tokens.size()) != n) throw Error("generation stopped early");
      };
      run(2);  // warm-up
      std::vector<double> prefill, total;
      for (int i = 0; i < reps; ++i) {
        prefill.push_back(seconds([&] { run(1); }));
        total.push_back(seconds([&] { run(kNewTokens); }));
      }
      const double p = median(prefill), t = median(total);
      rows.push_back({{"weights", nf4 ? "nf4" : "dense"},
                      {"dtype", dtype_name()},
                      {"batch", batch},
                      {"prefill_tokens_per_s", double(batch * kPromptTokens) / p},
                      {"decode_tokens_per_s", double(batch * (kNewTokens - 1)) / (t - p)}});
      std::fprintf(stderr, "generate %s %s batch %d: prefill %.3f s, %lld tokens %.3f s\n",
                   nf4 ? "nf4" : "dense", dtype_name(), batch, p, (long long)kNewTokens, t);
    }
  }
  return {{"prompt_tokens", kPromptTokens}, {"new_tokens", kNewTokens}, {"rows", rows}};
}

// One PPO iteration as the demo runs it: rollout of the batch at temperature 0.7, then the
// learner's reference, value and scoring pass and one epoch of minibatch updates.
json ppo_part(const std::string& dir, const models::Tokenizer& tokenizer,
              const trainer::PromptFormat& format, const Workload& w, int reps) {
  json rows = json::array();
  const int r = 64;
  for (bool nf4 : {false, true}) {
    if (only_weights == (nf4 ? "dense" : "nf4")) continue;
    auto policy = load(dir, nf4, r);
    trainer::PpoSection config;
    config.temperature = 0.7;
    config.batch_size = kPpoBatch;
    config.minibatch_size = kPpoMinibatch;
    config.ppo_epochs = 1;
    config.max_new_tokens = kNewTokens;
    torch::manual_seed(2);
    auto learner = trainer::make_ppo_learner(
        policy, models::ValueHead(models::width_scaled_value_head(policy->config.hidden_size)),
        config, tokenizer.eos_id());
    std::vector<double> rollout_s, update_s, answer_tokens;
    for (int i = 0; i <= reps; ++i) {  // the first is the warm-up
      trainer::RolloutOptions options;
      options.temperature = 0.7;
      options.max_new_tokens = kNewTokens;
      options.seed = 5 + i;
      trainer::Trajectories batch;
      const double roll =
          seconds([&] { batch = trainer::rollout(policy, format, w.ppo_examples, options, {}); });
      trainer::PpoStats stats;
      const double update =
          seconds([&] { stats = trainer::ppo_update(learner, batch, 3 + i, i + 1); });
      if (i == 0) continue;
      answer_tokens.push_back(stats.response_tokens);
      rollout_s.push_back(roll);
      update_s.push_back(update);
    }
    const double roll = median(rollout_s), update = median(update_s);
    rows.push_back({{"base", nf4 ? "nf4" : "dense"},
                    {"dtype", dtype_name()},
                    {"lora_r", r},
                    {"seconds", roll + update},
                    {"rollout_s", roll},
                    {"learner_s", update},
                    {"answer_tokens_mean", median(answer_tokens)}});
    std::fprintf(stderr, "ppo %s %s r%d: rollout %.3f s, learner %.3f s\n", nf4 ? "nf4" : "dense",
                 dtype_name(), r, roll, update);
  }
  return {{"batch", kPpoBatch},
          {"minibatch", kPpoMinibatch},
          {"ppo_epochs", 1},
          {"new_tokens", kNewTokens},
          {"rows", rows}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "weights/SmolLM2-135M-Instruct.Q4_1.gguf", part, batch_file, profile_file;
  int threads = 2, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model")
      model = argv[i + 1];
    else if (flag == "--part")
      part = argv[i + 1];
    else if (flag == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (flag == "--reps")
      reps = std::stoi(argv[i + 1]);
    else if (flag == "--write-batch")
      batch_file = argv[i + 1];
    else if (flag == "--batch")
      only_batch = std::stoi(argv[i + 1]);
    else if (flag == "--weights")
      only_weights = argv[i + 1];
    else if (flag == "--profile")
      profile_file = argv[i + 1];
    else if (flag == "--dtype" && std::string(argv[i + 1]) == "bfloat16")
      compute_dtype = torch::kBFloat16;
    else if (flag == "--dtype" && std::string(argv[i + 1]) == "float32")
      compute_dtype = torch::kFloat32;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    torch::set_num_threads(threads);
    const models::DequantizedWeights dense_base;  // as a run on a CPU holds it
    const std::string dir = models::is_gguf_path(model) ? models::gguf_model_dir(model) : model;
    models::Tokenizer tokenizer(dir);
    trainer::PromptFormat format{
        &tokenizer, models::chat_template("smollm2"),
        data::find_prompt_template("rage_numeric_key_last", "configs/templates")};
    const Workload w = make_workload(tokenizer, format);
    if (!batch_file.empty()) write_batch(batch_file, w);
    // --profile FILE: the operators the part spends its time in (timings under observation
    // run slower; take them from a run without it).
    std::unique_ptr<bench::OpProfile> profile;
    if (!profile_file.empty()) profile = std::make_unique<bench::OpProfile>();
    json out{{"side", "citeforge"},
             {"threads", threads},
             {"reps", reps},
             {"part", part},
             {"dtype", dtype_name()}};
    if (part == "sft")
      out["sft"] = sft_part(dir, w, reps);
    else if (part == "generate")
      out["generate"] = generate_part(dir, w, reps);
    else if (part == "ppo")
      out["ppo"] = ppo_part(dir, tokenizer, format, w, reps);
    else if (!part.empty())
      throw Error("--part: expected sft, generate or ppo, got '" + part + "'");
    if (profile) std::ofstream(profile_file) << profile->top(40).dump(1) << "\n";
    out["peak_rss_mib"] = peak_rss_mib();
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_side_by_side: %s\n", e.what());
    return 1;
  }
}
