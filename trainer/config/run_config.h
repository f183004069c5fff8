// A training run is one YAML file (torchtune-style recipe config). This is its schema with every
// default, the loader that validates it (unknown keys, wrong types and impossible values are
// one-line errors naming the file, line and key path), `--set a.b=c` overrides, and the
// resolved config written into the run directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/synth.h"
#include "trainer/config/config_choices.h"

namespace citeforge::trainer {

// A new random Llama built from scratch (the embedded demo); HF config.json fields.
struct ModelBuild {
  int64_t hidden_size = 128;
  int64_t intermediate_size = 344;
  int64_t num_layers = 4;
  int64_t num_heads = 4;
  int64_t num_kv_heads = 2;
  int64_t max_positions = 512;
  double rope_theta = 10000;
  bool tie_word_embeddings = true;
};

struct ModelSection {
  std::string path;  // an HF model directory; empty when `build` is used
  bool build_enabled = false;
  ModelBuild build;
  std::string tokenizer;        // tokenizer.model; default <path>/tokenizer.model
  int64_t tokenizer_vocab = 0;  // > 0: train a SentencePiece model of this size on the data
  Dtype dtype = Dtype::float32;
  Quantization quantization = Quantization::none;
  // models/chat_format.h's names; empty: recognised from the model's own chat template when the
  // config is validated, "plain" for a model without one.
  std::string chat_format;
  // A NaN or infinite weight in the checkpoint: refuse it (naming the tensor) or warn and load.
  NonFiniteWeights non_finite_weights = NonFiniteWeights::error;
};

struct LoraSection {
  int64_t r = 64;
  double alpha = 16;
  double dropout = 0.1;
  std::vector<std::string> target_modules = {"all-linear"};
};

// One gradient-descent stage (language-model pre-training of a built model, or SFT).
struct TrainSection {
  bool enabled = true;  // pre-training: whether the section was given (SFT: always)
  int epochs = 3;
  double lr = 2e-4;
  TrainSchedule schedule = TrainSchedule::constant;
  double warmup_ratio = 0.03;
  int batch_size = 4;  // sequences per micro-batch
  int grad_accum = 8;  // micro-batches per optimiser step (effective batch = product)
  double max_grad_norm = 0.3;
  double weight_decay = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double adam_eps = 1e-8;
  int log_every = 10;        // optimiser steps between metrics.jsonl records
  int checkpoint_every = 0;  // optimiser steps between mid-epoch checkpoints; 0 = epochs only
  int max_seq_len = 512;     // longer sequences are cut (prompt first) with a warning count
  int max_examples = 0;      // 0 = all
  bool gradient_checkpointing = false;  // recompute decoder blocks in backward to save memory
  // On a CPU, the leading tokens a micro-batch's sequences share before anything trains (SFT's
  // chat header and instruction, a third of the demo's tokens) go through the model once
  // (trainer::masked_lm_loss_sum): the same loss and gradients up to rounding, except that
  // adapter dropout draws one mask for the shared tokens of all rows; false gives the padded
  // passes of runs recorded before this was the default. Not with gradient checkpointing.
  bool share_prompt_prefix = true;
  // Pre-training only: this many sequences of random tokens shown twice with a random gap, the
  // loss on the repeat, meant to teach a model built from scratch to copy from its context
  // (induction heads), which reading documents needs. In the demo's budget they did not make
  // the base read (experiments/demo_ablations.md).
  int copy_drills = 0;
  // How many distinct token ids the drills draw from (a seeded random subset); 0 = all. With a
  // small set the reference learns the drills far sooner (scripts/copy_drill_reference.py).
  int copy_drill_tokens = 0;
};

struct PpoSection {
  int iterations = 20;
  int batch_size = 32;  // prompts per rollout
  int minibatch_size = 8;
  int ppo_epochs = 4;
  double lr = 1e-4;
  double max_grad_norm = 1.0;
  double temperature = 1.0;
  double top_p = 1.0;
  int max_new_tokens = 48;
  double gamma = 1.0;
  double lam = 0.95;
  double clip_range = 0.2;
  double clip_range_value = 0.2;
  double value_coef = 0.1;
  double entropy_coef = 0.0;
  double kl_coef = 0.05;
  KlEstimator kl_estimator = KlEstimator::k1;
  bool adaptive_kl = false;
  double kl_target = 6.0;
  // Adaptive KL: iterations over which a persistent KL error moves beta by a factor of about
  // e^0.2 (the error is clipped at 20%): at 5, beta can double or halve within ~18 iterations.
  int kl_horizon_iterations = 5;
  // > 0: the target approximate KL of an update; its epochs stop when approx_kl exceeds 1.5x it
  // (TRL, Stable-Baselines3) or is NaN.
  double kl_stop = 0;
  // Largest |sampler - learner| log-probability of a sampled token an update accepts; 0 = no
  // check (docs/ppo.md: what a healthy run measures in fp32 and in bf16).
  double max_logprob_gap = 1.0;
  double missing_eos_penalty = 0;  // subtracted from the reward of an answer cut at the limit
  double adam_eps = 1e-5;          // the RLHF choice (TRL, OpenRLHF); torch's 1e-8 is for SFT
  PpoSchedule lr_schedule = PpoSchedule::constant;
  int eval_every = 10;       // iterations between evaluations (and at the end)
  int checkpoint_every = 5;  // iterations between checkpoints
  int log_every = 1;
  int max_examples = 0;
  bool gradient_checkpointing = false;
  // Rollouts prefill the leading tokens their prompts share once (models::SamplingOptions): a
  // third less prefill work on the demo's prompts. The same computation up to rounding: the last
  // bits of fp32 prefill differ from the padded batch's, so sampled answers can differ (false
  // gives the padded batches of runs recorded before this was the default).
  bool share_prompt_prefix = true;
};

// Where examples come from: a .jsonl file of citeforge examples, synth:<split> for the
// generated world, a SynSciQA file (.csv or .json) imported on load, with relevance labels
// from `golden` (a *_with_golden_sources.csv) when given, or `holdout` for the examples held out
// of the training data (data.holdout).
struct TestSetSpec {
  std::string name;
  std::string path;
  std::string golden;  // SynSciQA only
  bool ood = false;    // out-of-distribution (for the correlation table)
  // > 0: evaluate on a random subset of this many examples, drawn with data.split_seed and the
  // set's name (in file order), when a full set costs too much (a long CPU run).
  int sample = 0;
};

struct DataSection {
  bool synth_enabled = false;
  data::SynthConfig synth;   // generated into <run>/data when enabled
  std::string train;         // as TestSetSpec::path
  std::string train_golden;  // SynSciQA only
  // > 0: this many training examples, drawn with data.split_seed, are held out of training and
  // become the test set whose path is `holdout` (the papers select checkpoints on such a
  // synthetic validation split). They are written to <run>/data/holdout.jsonl.
  int holdout = 0;
  // The seed of the held-out split and of the test sets' samples; 0 = the run's `seed`. A sweep
  // over training seeds (`run --seeds`) pins it, so every seed answers the same questions and
  // their tests stay paired.
  uint64_t split_seed = 0;
  std::vector<TestSetSpec> test_sets;
  std::string prompt_template = "rage_numeric";  // name in templates_dir or a .yaml path
  std::string templates_dir = "configs/templates";
  std::string reference = "teacher";  // which reference answer SFT learns
  // How the pre-training reading split's answers name their documents: `none` drops the
  // citations, `prose` says "..., as documents 1 and 3 say." instead of "... [1][3]." (a base
  // that reads and attributes in words, as chat models do, but never in the cited format).
  ReadingSources reading_sources = ReadingSources::none;
};

struct EvalSection {
  int max_new_tokens = 64;
  int batch_size = 32;
  int max_examples = 0;  // per test set; 0 = all
  int bootstrap_resamples = 1000;
  // The answers' generation prefills the leading tokens a batch's prompts share once and, on a
  // CPU, packs their rests without padding (models::SamplingOptions::share_prompt_prefix, as
  // ppo.share_prompt_prefix does for rollouts): 1.65x faster evaluation rounds in the demo.
  // Greedy answers follow the prefill's last bits, which differ from the padded batch's, so an
  // answer near a tie can change; false gives the padded batches of runs recorded before this
  // was the default.
  bool share_prompt_prefix = true;
  // Citation correction methods (attribution/citefix.h) applied to every evaluation's answers:
  // each is scored as the test set "<name>+<method>", so the tables show every checkpoint with
  // and without it. The model methods read the checkpoint that wrote the answers.
  std::vector<std::string> corrections;
  // Citation baselines that need no trained model (attribution/citation_baselines.h:
  // cite_bm25, cite_all, cite_first): the base model's answers to every given-documents test set
  // re-cited by the rule and scored as the test set "<name>+<baseline>", so Table 2 shows what
  // lexical matching alone scores beside the trained settings.
  std::vector<std::string> baselines;
  // HAGRID's scenarios (retrieval/scenarios.h), "rtg" and/or "gtr": every test set but the
  // selection's is evaluated again with passages retrieved by BM25 from the corpus of its whole
  // file, as the test set "<name>@<scenario>", so the tables show how a model tuned with given
  // documents cites when it has to live with a retriever.
  std::vector<std::string> scenarios;
  int retrieval_k = 3;  // passages per question (rtg) or per answer (gtr); written with scenarios
  // When set, every evaluation also scores answer attributability (attribution/
  // attributability.h) with the base model as judge (configs/templates/attributable.yaml) at
  // this log-odds threshold, chosen with `citeforge judge-attributability --calibrate`.
  std::optional<double> attributability_threshold;
};

struct SelectionSection {
  std::string metric = "f1";
  std::string test_set;  // default: the first test set that is not OOD
};

// Several processes (docs/design.md §5): used when `citeforge launch`, torchrun or SLURM start the
// run with more than one rank (trainer/distributed/dist_env.h); a single process ignores this
// section. Ranks 0..learners-1 run the PPO update (rank 0 also evaluates and checkpoints); the
// rollout ranks generate with their copy of the policy.
// How a run reports its numbers as it goes (trainer/run/run_log.h); metrics.jsonl is always
// written.
struct LoggingSection {
  bool tensorboard = true;  // RUN/tensorboard/<stage>/ event files
};

struct DistributedSection {
  Backend backend = Backend::gloo;  // gloo on CPUs, nccl on GPUs
  int learners = 0;                 // 0 = every rank learns
  bool rollout_on_learners = true;  // false: only the ranks that do not learn generate
  double timeout_s = 300;           // a rank silent this long (dead or hung) stops every rank
};

struct RunConfig;
// data.split_seed, or the run's seed when it is 0: what draws the splits and samples.
uint64_t split_seed(const RunConfig& config);

struct RunConfig {
  std::string file;  // where it was loaded from (for messages)
  std::string name = "run";
  uint64_t seed = 1;
  Device device = Device::cpu;
  int threads = 0;  // intra-op threads; 0 = LibTorch's default
  Resume resume = Resume::automatic;
  std::vector<std::string> settings = {"sft"};  // any of sft, ppo, sft+ppo
  DataSection data;
  ModelSection model;
  LoraSection lora;
  TrainSection pretrain;  // disabled unless given (only sensible for a built model)
  TrainSection sft;
  PpoSection ppo;
  EvalSection eval;
  SelectionSection selection;
  InvalidCitations invalid_citations = InvalidCitations::penalize;
  LoggingSection logging;
  // After each evaluation, keep a stage's best checkpoint so far and its last K numbered ones
  // (0 keeps all; trainer/eval/checkpoint_retention.h). 3 bounds a long 7B run's disk.
  int checkpoint_keep_last = 3;
  bool distributed_enabled = false;  // the section was given
  DistributedSection distributed;
};

// Whether validation checks that the files a config names exist: off for a run directory's
// resolved config read back on another machine (trainer/run/run_dir.h), where only the run's
// choices matter.
enum class FileChecks { on, off };

// Reads, overrides (`key.path=value`, the value parsed as YAML) and validates a config.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});
RunConfig parse_run_config(const std::string& yaml_text, const std::string& file,
                           const std::vector<std::string>& overrides = {},
                           FileChecks files = FileChecks::on);

// The resolved config (every default filled in) as YAML that parse_run_config reads back.
std::string run_config_to_yaml(const RunConfig& config);

// True for a SynSciQA file (.csv or .json), which a run imports on load.
bool is_synsciqa_path(const std::string& path);

// The test set used for checkpoint selection.
const TestSetSpec& selection_test_set(const RunConfig& config);

}  // namespace citeforge::trainer
