// citeforge's side of the side-by-side benchmark on the embedded default's model
// (SmolLM2-135M-Instruct from its GGUF): one QLoRA SFT step, prefill and decode at batch 1 and
// 32, and one PPO iteration, each the median of --reps repetitions after a warm-up. It prints
// one JSON object; experiments/bench/side_by_side.sh runs it and the Python stack
// (side_by_side_python.py) on the same token ids and writes the table with the ratios.
//
//   build/bench_side_by_side --part sft|generate|ppo [--model FILE.gguf] [--threads N]
//                            [--reps N] [--dtype float32|bfloat16] [--write-batch FILE.json]
//                            [--batch 1|32] [--weights dense|nf4] [--profile FILE.json]
//                            [--share-prefix on|off]
//
// --share-prefix on: the PPO part's rollouts and the learner's scoring pass prefill their
// prompts' shared leading tokens once (ppo.share_prompt_prefix), and the SFT part's step runs
// them once (sft.share_prompt_prefix, on a CPU); the default is a run's default (on), off gives
// the padded batches.
//
// --dtype is the compute dtype of the base (LoRA adapters and the output layer's logits stay
// fp32, as in a run with model.dtype: bfloat16). As in a run on a CPU, the NF4 base is
// dequantised once per process (models::DequantizedWeights), not once per matmul.
//
// The token ids come from the demo's world (seed 1), template and chat format, so both sides
// see the same batch: --write-batch stores them for the Python side. Each part runs in its own
// process, so the peak resident memory reported is that part's.
//
// With --model-dir it runs a checkpoint of random weights instead, on the CPU or a GPU
// (experiments/bench/side_by_side_gpu.sh; side_by_side_python.py --write-random-model writes
// the checkpoint and the batch file, whose token ids and settings both sides read):
//
//   build/bench_side_by_side --model-dir DIR --batch-file FILE.json [--part sft,generate,ppo]
//                            [--device cpu|cuda] [--dtype bfloat16|float32] [--threads N]
//                            [--reps N] [--profile FILE.json]
//
// There the base is NF4 (QLoRA) with LoRA r 64 in fp32 on every projection; generation times
// the base alone, sampling at the batch file's temperature; the parts share one loaded model,
// and each reports its peak memory: on a GPU the caching allocator's peak during the part, on
// the CPU the process's peak RSS (the driver runs one part per process there). No tokenizer is
// needed: PPO's stand-in reward is the share of even ids in an answer, as on the Python side.
// --profile there writes each part's operators, observed from after the model's load (on a GPU
// run it with CUDA_LAUNCH_BLOCKING=1, or an operator's time is only its launch).
#include <sys/resource.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#ifdef CITEFORGE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "common/clock.h"
#include "common/error.h"
#include "data/prompt_template.h"
#include "data/synth.h"
#include "experiments/bench/bench_stats.h"
#include "experiments/bench/op_profile.h"
#include "models/chat_format.h"
#include "models/checkpoint_io.h"
#include "models/generate.h"
#include "models/gguf_import.h"
#include "models/linear.h"
#include "models/lora.h"
#include "models/tokenizer.h"
#include "trainer/config/run_config.h"
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

// Where the model runs: the CPU, or with --model-dir --device cuda a GPU.
torch::Device bench_device = torch::kCPU;

// Waits for the GPU's queued work, so that a timer reads when it ended (a no-op on the CPU).
void sync_device() {
#ifdef CITEFORGE_WITH_CUDA
  if (bench_device.is_cuda()) torch::cuda::synchronize();
#endif
}

template <class F>
double seconds(F&& f) {
  sync_device();
  const auto start = std::chrono::steady_clock::now();
  f();
  sync_device();
  return seconds_since(start);
}

void reset_peak_memory() {
#ifdef CITEFORGE_WITH_CUDA
  if (bench_device.is_cuda())
    c10::cuda::CUDACachingAllocator::resetPeakStats(c10::cuda::current_device());
#endif
}

// On a GPU the caching allocator's peak of allocated bytes since reset_peak_memory (what
// torch.cuda.max_memory_allocated reports on the Python side); on the CPU the peak RSS.
double peak_memory_mib() {
#ifdef CITEFORGE_WITH_CUDA
  if (bench_device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
    return double(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);  // [0]: all pools
  }
#endif
  return peak_rss_mib();
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
// --share-prefix: the PPO and SFT parts share their prompts' prefix; a run's default unless given.
bool share_prefix = trainer::PpoSection{}.share_prompt_prefix;
static_assert(trainer::PpoSection{}.share_prompt_prefix ==
                  trainer::TrainSection{}.share_prompt_prefix,
              "--share-prefix gives both parts one default");

const char* dtype_name() {
  return compute_dtype == torch::kBFloat16 ? "bfloat16" : "float32";
}

models::LlamaForCausalLM load(const std::string& dir, bool nf4, int lora_r) {
  models::LoadOptions options;
  options.nf4 = nf4;
  options.dtype = compute_dtype;
  options.device = bench_device;
  auto model = models::load_model(dir, options);
  if (lora_r > 0) {
    torch::manual_seed(1);
    models::LoraConfig lora;
    lora.spec = {lora_r, 16.0, 0.0};
    models::attach_lora(model, lora);
  }
  return model;
}

// The median time of one AdamW step on the LoRA parameters over `batch` (loss per trained
// token), after a warm-up step; the gradients are freed afterwards.
double median_sft_step_seconds(models::LlamaForCausalLM& model, const trainer::Batch& batch,
                               int reps) {
  model->train();
  std::vector<torch::Tensor> params;
  for (auto& [name, p] : models::lora_parameters(model)) params.push_back(p);
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(1e-4));
  auto step = [&] {
    optimizer.zero_grad();
    auto loss =
        trainer::masked_lm_loss_sum(model, batch, share_prefix) / double(batch.trained_tokens);
    loss.backward();
    optimizer.step();
  };
  step();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) times.push_back(seconds(step));
  optimizer.zero_grad();
  return median(times);
}

json sft_part(const std::string& dir, const Workload& w, int reps) {
  json rows = json::array();
  std::vector<std::size_t> all(w.sft.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  auto batch = trainer::collate(w.sft, all, 0, torch::kCPU);
  for (bool nf4 : {true, false})
    for (int r : {16, 64}) {
      auto model = load(dir, nf4, r);
      const double s = median_sft_step_seconds(model, batch, reps);
      rows.push_back({{"base", nf4 ? "nf4" : "dense"},
                      {"dtype", dtype_name()},
                      {"lora_r", r},
                      {"seconds", s},
                      {"tokens_per_s", double(batch.tokens) / s}});
      std::fprintf(stderr, "sft %s %s r%d: %.3f s/step\n", nf4 ? "nf4" : "dense", dtype_name(), r,
                   s);
    }
  return {{"batch", kSftBatch},
          {"share_prompt_prefix", share_prefix},
          {"shared_tokens", trainer::untrained_shared_prefix(batch)},
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

// The prompts' forward pass as a rollout runs it (adapters on, no dropout, left-padded batch),
// and no decoding step.
void prefill_only(models::LlamaForCausalLM& policy,
                  const std::vector<std::vector<int64_t>>& prompts) {
  models::SamplingOptions options;
  options.max_new_tokens = 0;
  options.share_prompt_prefix = share_prefix;
  const bool was_training = policy->is_training();
  policy->eval();
  models::generate(policy, prompts, options);
  if (was_training) policy->train();
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
    config.share_prompt_prefix = share_prefix;  // the learner's scoring pass, as the rollout
    torch::manual_seed(2);
    auto learner = trainer::make_ppo_learner(
        policy, models::ValueHead(models::width_scaled_value_head(policy->config.hidden_size)),
        config, tokenizer.eos_id());
    std::vector<double> rollout_s, prefill_s, update_s, answer_tokens;
    for (int i = 0; i <= reps; ++i) {  // the first is the warm-up
      trainer::RolloutOptions options;
      options.temperature = 0.7;
      options.max_new_tokens = kNewTokens;
      options.seed = 5 + i;
      options.share_prompt_prefix = share_prefix;
      trainer::Trajectories batch;
      const double roll =
          seconds([&] { batch = trainer::rollout(policy, format, w.ppo_examples, options, {}); });
      // The rollout's prefill alone: the same prompts through generate with no new token (the
      // prompts' forward pass and the last position's logits), so the table can say how much of
      // the rollout the decoding steps are.
      const double prefill = seconds([&] { prefill_only(policy, w.ppo_prompts); });
      trainer::PpoStats stats;
      const double update =
          seconds([&] { stats = trainer::ppo_update(learner, batch, 3 + i, i + 1); });
      if (i == 0) continue;
      answer_tokens.push_back(stats.response_tokens);
      rollout_s.push_back(roll);
      prefill_s.push_back(prefill);
      update_s.push_back(update);
    }
    const double roll = median(rollout_s), update = median(update_s);
    rows.push_back({{"base", nf4 ? "nf4" : "dense"},
                    {"dtype", dtype_name()},
                    {"lora_r", r},
                    {"seconds", roll + update},
                    {"rollout_s", roll},
                    {"rollout_prefill_s", median(prefill_s)},
                    {"learner_s", update},
                    {"answer_tokens_mean", median(answer_tokens)}});
    std::fprintf(stderr, "ppo %s %s r%d: rollout %.3f s, learner %.3f s\n", nf4 ? "nf4" : "dense",
                 dtype_name(), r, roll, update);
  }
  // The prompts' sizes: their tokens, the slots of the left-padded batch, and the leading tokens
  // they all share (chat header and instruction), which --share-prefix on prefills once.
  int64_t widest = 0, tokens = 0;
  for (const auto& p : w.ppo_prompts) {
    widest = std::max<int64_t>(widest, int64_t(p.size()));
    tokens += int64_t(p.size());
  }
  const int64_t shared = models::shared_prompt_prefix(w.ppo_prompts);
  return {{"batch", kPpoBatch},
          {"share_prompt_prefix", share_prefix},
          {"prompt_tokens", tokens},
          {"prompt_slots", widest * int64_t(w.ppo_prompts.size())},  // left-padded to the longest
          {"prompt_shared_prefix", shared},
          {"minibatch", kPpoMinibatch},
          {"ppo_epochs", 1},
          {"new_tokens", kNewTokens},
          {"rows", rows}};
}

// ---------------------------------------------------------------------------------------------
// Random weights of a given shape (--model-dir, --batch-file): side_by_side_gpu.sh.

// The workload of a batch file side_by_side_python.py --write-random-model wrote: the token
// ids and the settings both sides read from it.
struct IdsWorkload {
  std::vector<trainer::TokenSequence> sft;    // loss where loss_mask is 1
  std::vector<std::vector<int64_t>> prompts;  // generation and PPO prompts, cycled as needed
  std::vector<int> gen_batches;
  int64_t new_tokens = 0;
  double temperature = 0;
  int ppo_batch = 0, ppo_minibatch = 0, ppo_epochs = 0, lora_r = 0;  // LoRA alpha 16, as load()
};

IdsWorkload read_ids_workload(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("--batch-file: cannot open " + path);
  const json j = json::parse(in);
  IdsWorkload w;
  for (const auto& s : j.at("sequences")) {
    trainer::TokenSequence t;
    t.ids = s.at("ids").get<std::vector<int64_t>>();
    t.loss_mask = s.at("loss_mask").get<std::vector<uint8_t>>();
    if (t.ids.size() != t.loss_mask.size())
      throw Error("--batch-file: a sequence's ids and loss_mask differ in length");
    w.sft.push_back(std::move(t));
  }
  w.prompts = j.at("prompts").get<std::vector<std::vector<int64_t>>>();
  const json& s = j.at("settings");
  w.gen_batches = s.at("gen_batches").get<std::vector<int>>();
  w.new_tokens = s.at("new_tokens").get<int64_t>();
  w.temperature = s.at("temperature").get<double>();
  w.ppo_batch = s.at("ppo_batch").get<int>();
  w.ppo_minibatch = s.at("ppo_minibatch").get<int>();
  w.ppo_epochs = s.at("ppo_epochs").get<int>();
  w.lora_r = s.at("lora_r").get<int>();
  if (s.at("lora_alpha").get<double>() != 16.0) throw Error("--batch-file: LoRA alpha is not 16");
  if (w.sft.empty() || w.prompts.empty()) throw Error("--batch-file: no sequences or prompts");
  return w;
}

std::vector<std::vector<int64_t>> cycled_prompts(const IdsWorkload& w, int count) {
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < count; ++i) out.push_back(w.prompts[std::size_t(i) % w.prompts.size()]);
  return out;
}

int64_t token_count(const std::vector<std::vector<int64_t>>& rows) {
  int64_t n = 0;
  for (const auto& r : rows) n += int64_t(r.size());
  return n;
}

json ids_sft_part(models::LlamaForCausalLM& model, const IdsWorkload& w, int reps) {
  std::vector<std::size_t> all(w.sft.size());
  std::iota(all.begin(), all.end(), std::size_t(0));
  auto batch = trainer::collate(w.sft, all, 0, bench_device);
  const double s = median_sft_step_seconds(model, batch, reps);
  std::fprintf(stderr, "sft nf4 %s r%d: %.3f s/step\n", dtype_name(), w.lora_r, s);
  return {{"base", "nf4"},
          {"dtype", dtype_name()},
          {"adapter_dtype", "float32"},
          {"lora_r", w.lora_r},
          {"batch", w.sft.size()},
          {"tokens", batch.tokens},
          {"trained_tokens", batch.trained_tokens},
          {"seconds", s},
          {"tokens_per_s", double(batch.tokens) / s}};
}

// Prefill = generate one token; decode = the rest of a generation of new_tokens tokens, per
// token per row. Sampled, and EOS never stops a row, so both sides do the same work.
json ids_generate_part(models::LlamaForCausalLM& model, const IdsWorkload& w, int reps) {
  model->eval();
  const models::AdaptersDisabled base(model);  // the base alone, as transformers' generate runs
  json batches = json::object();
  for (int batch : w.gen_batches) {
    const auto prompts = cycled_prompts(w, batch);
    models::SamplingOptions options;
    options.greedy = false;
    options.temperature = w.temperature;
    options.eos_ids = {-1};
    auto run = [&](int64_t n, uint64_t seed) {
      options.max_new_tokens = n;
      options.seed = seed;
      auto out = models::generate(model, prompts, options);
      if (int64_t(out.front().tokens.size()) != n) throw Error("generation stopped early");
    };
    run(2, 0);  // warm-up
    // Decode per repetition as (all tokens) - (the first), each pair run back to back, and the
    // median of those differences: medians of the two taken apart can cross on a busy machine.
    std::vector<double> prefill, total, decode;
    for (int i = 0; i < reps; ++i) {
      prefill.push_back(seconds([&] { run(1, i + 1); }));
      total.push_back(seconds([&] { run(w.new_tokens, i + 1); }));
      decode.push_back(total.back() - prefill.back());
    }
    const double p = median(prefill), t = median(total), d = median(decode);
    batches[std::to_string(batch)] = {
        {"batch", batch},
        {"prefill_s", p},
        {"prefill_tokens_per_s", double(token_count(prompts)) / p},
        // null when the machine's noise exceeded the decode time (a busy CPU, one repetition)
        {"decode_tokens_per_s",
         d > 0 ? json(double(batch * (w.new_tokens - 1)) / d) : json(nullptr)}};
    std::fprintf(stderr, "generate nf4 %s batch %d: prefill %.3f s, %lld tokens %.3f s\n",
                 dtype_name(), batch, p, (long long)w.new_tokens, t);
  }
  return {{"weights", "nf4"},
          {"dtype", dtype_name()},
          {"temperature", w.temperature},
          {"prompt_tokens", w.prompts.front().size()},
          {"new_tokens", w.new_tokens},
          {"batches", batches}};
}

// The stand-in reward of a model without a tokenizer, as the Python side computes it: the share
// of even ids among the answer's tokens.
double even_id_share(const std::vector<int64_t>& tokens) {
  if (tokens.empty()) return 0;
  const auto even =
      std::count_if(tokens.begin(), tokens.end(), [](int64_t t) { return t % 2 == 0; });
  return double(even) / double(tokens.size());
}

// trainer::rollout without a tokenizer: the policy samples answers of exactly new_tokens tokens
// to the prompts' ids (adapters on, no dropout), which even_id_share scores.
trainer::Trajectories rollout_ids(models::LlamaForCausalLM& policy,
                                  const std::vector<std::vector<int64_t>>& prompts,
                                  const IdsWorkload& w, uint64_t seed) {
  models::SamplingOptions sampling;
  sampling.greedy = false;
  sampling.temperature = w.temperature;
  sampling.max_new_tokens = w.new_tokens;
  sampling.seed = seed;
  sampling.eos_ids = {-1};
  sampling.drop_finished_rows = false;  // as trainer::rollout samples
  const bool was_training = policy->is_training();
  policy->eval();
  auto generations = models::generate(policy, prompts, sampling);
  if (was_training) policy->train();
  trainer::Trajectories t;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    auto& g = generations[i];
    t.example_ids.push_back("row " + std::to_string(i));
    t.prompts.push_back(prompts[i]);
    t.scores.push_back(even_id_share(g.tokens));
    t.precisions.push_back(0);
    t.recalls.push_back(0);
    t.answer_words.push_back(double(g.tokens.size()));
    t.truncated.push_back(1);
    t.answers.emplace_back();
    t.responses.push_back(std::move(g.tokens));
    t.logprobs.push_back(std::move(g.logprobs));
  }
  return t;
}

// One PPO iteration from fresh adapters: rollout, then the learner's reference, value and scoring
// pass and ppo_epochs of minibatch updates.
json ids_ppo_part(models::LlamaForCausalLM& policy, const IdsWorkload& w, int reps) {
  models::reset_adapters(policy, 1);  // SFT's part trained them
  trainer::PpoSection config;
  config.temperature = w.temperature;
  config.batch_size = w.ppo_batch;
  config.minibatch_size = w.ppo_minibatch;
  config.ppo_epochs = w.ppo_epochs;
  config.max_new_tokens = int(w.new_tokens);
  models::ValueHead head(models::width_scaled_value_head(policy->config.hidden_size));
  head->to(bench_device);
  torch::manual_seed(2);
  auto learner = trainer::make_ppo_learner(policy, head, config, /*pad_id=*/0);
  const auto prompts = cycled_prompts(w, w.ppo_batch);
  std::vector<double> rollout_s, update_s, tokens;
  double gap = 0;
  for (int i = 0; i <= reps; ++i) {  // the first is the warm-up
    trainer::Trajectories batch;
    const double roll = seconds([&] { batch = rollout_ids(policy, prompts, w, 5 + i); });
    trainer::PpoStats stats;
    const double update =
        seconds([&] { stats = trainer::ppo_update(learner, batch, 3 + i, i + 1); });
    if (i == 0) continue;
    rollout_s.push_back(roll);
    update_s.push_back(update);
    tokens.push_back(double(token_count(batch.prompts) + token_count(batch.responses)));
    gap = stats.logprob_gap_max;
  }
  const double roll = median(rollout_s), update = median(update_s);
  std::fprintf(stderr, "ppo nf4 %s r%d: rollout %.3f s, learner %.3f s\n", dtype_name(), w.lora_r,
               roll, update);
  return {{"base", "nf4"},
          {"dtype", dtype_name()},
          {"lora_r", w.lora_r},
          {"batch", w.ppo_batch},
          {"minibatch", w.ppo_minibatch},
          {"ppo_epochs", w.ppo_epochs},
          {"new_tokens", w.new_tokens},
          {"seconds", roll + update},
          {"rollout_s", roll},
          {"learner_s", update},
          {"tokens_per_iteration", median(tokens)},
          {"tokens_per_s", median(tokens) / (roll + update)},
          {"logprob_gap_max_last", gap}};
}

// The parts named in `parts` (sft, generate, ppo: run in that order) on one loaded model.
// With `profile_file`, each part's operators go there, observed from after the model's load
// (which would otherwise fill the profile) to the part's end.
json run_ids_parts(const std::string& dir, const std::string& batch_file,
                   const std::vector<std::string>& parts, int reps,
                   const std::string& profile_file) {
  const IdsWorkload w = read_ids_workload(batch_file);
  // On a CPU the NF4 base is dequantised once per process, as a run holds it; on a GPU the
  // fused NF4 kernels read it as it is.
  const models::DequantizedWeights dense_base(bench_device.is_cpu());
  json out = json::object();
  models::LlamaForCausalLM model{nullptr};  // the NF4 base with LoRA, as a QLoRA run holds it
  out["model_load_s"] = seconds([&] { model = load(dir, /*nf4=*/true, w.lora_r); });
  using Part = json (*)(models::LlamaForCausalLM&, const IdsWorkload&, int);
  const std::vector<std::pair<std::string, Part>> known = {
      {"sft", ids_sft_part}, {"generate", ids_generate_part}, {"ppo", ids_ppo_part}};
  json profiles = json::object();
  for (const auto& [name, run] : known) {
    if (std::find(parts.begin(), parts.end(), name) == parts.end()) continue;
    reset_peak_memory();
    std::unique_ptr<bench::OpProfile> profile;
    if (!profile_file.empty()) profile = std::make_unique<bench::OpProfile>();
    json result = run(model, w, reps);
    if (profile) profiles[name] = profile->top(40);
    result["peak_memory_mib"] = peak_memory_mib();
    out[name] = result;
  }
  if (!profile_file.empty()) std::ofstream(profile_file) << profiles.dump(1) << "\n";
  out["peak_memory_kind"] = bench_device.is_cuda()
                                ? "CUDA caching allocator, peak allocated bytes during the part"
                                : "peak RSS of the process (ru_maxrss)";
  return out;
}

std::vector<std::string> split_parts(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, end - start);
    if (part != "sft" && part != "generate" && part != "ppo")
      throw Error("--part: expected sft, generate or ppo (comma-separated), got '" + part + "'");
    parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

struct Flags {
  std::string model = "weights/SmolLM2-135M-Instruct.Q4_1.gguf", part, write_batch, profile;
  std::string model_dir, batch_file, device = "cpu";  // the random-weights mode
  int threads = 2, reps = 5;
};

int int_flag(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw Error(flag + ": expected a whole number, got '" + text + "'");
}

Flags parse_flags(int argc, char** argv) {
  Flags f;
  if (argc % 2 == 0) throw Error(std::string(argv[argc - 1]) + " needs a value");
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      f.model = value;
    else if (flag == "--model-dir")
      f.model_dir = value;
    else if (flag == "--batch-file")
      f.batch_file = value;
    else if (flag == "--device")
      f.device = value;
    else if (flag == "--part")
      f.part = value;
    else if (flag == "--threads")
      f.threads = int_flag(flag, value);
    else if (flag == "--reps")
      f.reps = int_flag(flag, value);
    else if (flag == "--write-batch")
      f.write_batch = value;
    else if (flag == "--batch")
      only_batch = int_flag(flag, value);
    else if (flag == "--weights")
      only_weights = value;
    else if (flag == "--profile")
      f.profile = value;
    else if (flag == "--share-prefix" && (value == "on" || value == "off"))
      share_prefix = value == "on";
    else if (flag == "--share-prefix")
      throw Error("--share-prefix: expected on or off, got '" + value + "'");
    else if (flag == "--dtype" && (value == "bfloat16" || value == "float32"))
      compute_dtype = value == "bfloat16" ? torch::kBFloat16 : torch::kFloat32;
    else if (flag == "--dtype")
      throw Error("--dtype: expected float32 or bfloat16, got '" + value + "'");
    else
      throw Error("unknown flag " + flag);
  }
  if (f.model_dir.empty() && (!f.batch_file.empty() || f.device != "cpu"))
    throw Error("--batch-file and --device go with --model-dir");
  if (!f.model_dir.empty() && f.batch_file.empty()) throw Error("--model-dir needs --batch-file");
  return f;
}

// The --model-dir mode: prints the JSON of the parts on the random-weight checkpoint.
void ids_main(const Flags& f) {
  if (f.device == "cuda") {
    if (!torch::cuda::is_available())
      throw Error(
          "--device cuda: no CUDA device visible to this build (a GPU build configures "
          "with -DCITEFORGE_CUDA=ON)");
    bench_device = torch::Device(torch::kCUDA);
  } else if (f.device != "cpu") {
    throw Error("--device: expected cpu or cuda, got '" + f.device + "'");
  }
  torch::set_num_threads(f.threads);
  const auto parts = split_parts(f.part.empty() ? "sft,generate,ppo" : f.part);
  json out{{"side", "citeforge"},       {"model_dir", f.model_dir}, {"device", f.device},
           {"threads", f.threads},      {"reps", f.reps},           {"dtype", dtype_name()},
           {"batch_file", f.batch_file}};
  out.update(run_ids_parts(f.model_dir, f.batch_file, parts, f.reps, f.profile));
  out["peak_rss_mib"] = peak_rss_mib();
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    flags = parse_flags(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_side_by_side: %s\n", e.what());
    return 2;
  }
  try {
    // --profile FILE: the operators the parts spend their time in (timings under observation
    // run slower; take them from a run without it). On a GPU an operator's time is its host
    // side unless CUDA_LAUNCH_BLOCKING=1 makes every launch wait for its kernel.
    if (!flags.model_dir.empty()) {  // the random-weights mode profiles each part on its own
      ids_main(flags);
      return 0;
    }
    std::unique_ptr<bench::OpProfile> profile;
    if (!flags.profile.empty()) profile = std::make_unique<bench::OpProfile>();
    const auto write_profile = [&] {
      if (profile) std::ofstream(flags.profile) << profile->top(40).dump(1) << "\n";
    };
    const std::string &model = flags.model, &part = flags.part;
    const int threads = flags.threads, reps = flags.reps;
    torch::set_num_threads(threads);
    const models::DequantizedWeights dense_base;  // as a run on a CPU holds it
    const std::string dir = models::is_gguf_path(model) ? models::gguf_model_dir(model) : model;
    models::Tokenizer tokenizer(dir);
    trainer::PromptFormat format{
        &tokenizer, models::chat_template("smollm2"),
        data::find_prompt_template("rage_numeric_key_last", "configs/templates")};
    const Workload w = make_workload(tokenizer, format);
    if (!flags.write_batch.empty()) write_batch(flags.write_batch, w);
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
    write_profile();
    out["peak_rss_mib"] = peak_rss_mib();
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_side_by_side: %s\n", e.what());
    return 1;
  }
}
