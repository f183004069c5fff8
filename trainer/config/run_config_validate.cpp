// The checks a run config passes before anything runs, one function per section of the
// schema (run_config.cpp): ranges, choices, files that must exist, and how the sections go
// together. Every failure names the file and the key.
#include "trainer/config/run_config_validate.h"

#include <algorithm>
#include <set>

#include "attribution/citation_baselines.h"
#include "attribution/citefix.h"
#include "common/error.h"
#include "common/file_io.h"
#include "common/join.h"
#include "models/chat_format.h"
#include "models/gguf.h"
#include "models/tokenizer.h"

namespace citeforge::trainer {
namespace {

void require(bool ok, const std::string& file, const std::string& key, const std::string& what) {
  if (!ok) fail_at(file, "key " + key, what);
}

bool one_of(const std::string& v, std::initializer_list<const char*> options) {
  return std::any_of(options.begin(), options.end(), [&](const char* o) { return v == o; });
}

void validate_train(const TrainSection& t, const std::string& file, const std::string& p) {
  if (!t.enabled) return;
  require(t.epochs >= 1, file, p + "epochs", "must be >= 1");
  require(t.copy_drills >= 0, file, p + "copy_drills", "must be >= 0");
  require(t.copy_drill_tokens == 0 || t.copy_drill_tokens >= 2, file, p + "copy_drill_tokens",
          "must be 0 (all) or >= 2");
  require(t.lr > 0, file, p + "lr", "must be > 0");
  require(t.warmup_ratio >= 0 && t.warmup_ratio < 1, file, p + "warmup_ratio", "must be in [0, 1)");
  require(t.batch_size >= 1, file, p + "batch_size", "must be >= 1");
  require(t.grad_accum >= 1, file, p + "grad_accum", "must be >= 1");
  require(t.max_grad_norm >= 0, file, p + "max_grad_norm", "must be >= 0 (0 = no clipping)");
  require(t.weight_decay >= 0, file, p + "weight_decay", "must be >= 0");
  require(t.beta1 >= 0 && t.beta1 < 1, file, p + "beta1", "must be in [0, 1)");
  require(t.beta2 >= 0 && t.beta2 < 1, file, p + "beta2", "must be in [0, 1)");
  require(t.adam_eps > 0, file, p + "adam_eps", "must be > 0");
  require(t.log_every >= 1, file, p + "log_every", "must be >= 1");
  require(t.checkpoint_every >= 0, file, p + "checkpoint_every", "must be >= 0");
  require(t.max_seq_len >= 8, file, p + "max_seq_len", "must be >= 8");
  require(t.max_examples >= 0, file, p + "max_examples", "must be >= 0");
}

// name, device, threads, resume and the settings
void validate_top(const RunConfig& c) {
  const std::string& f = c.file;
  require(!c.name.empty(), f, "name", "must not be empty");
  require(c.threads >= 0, f, "threads", "must be >= 0");
  require(c.checkpoint_keep_last >= 0, f, "checkpoint_keep_last", "must be >= 0 (0 keeps all)");
  std::set<std::string> seen;
  for (const auto& s : c.settings) {
    require(one_of(s, {"sft", "ppo", "sft+ppo"}), f, "settings",
            "unknown setting '" + s + "' (known: sft, ppo, sft+ppo)");
    require(seen.insert(s).second, f, "settings", "setting '" + s + "' listed twice");
  }
  auto sft_at = std::find(c.settings.begin(), c.settings.end(), "sft");
  auto chained = std::find(c.settings.begin(), c.settings.end(), "sft+ppo");
  require(chained == c.settings.end() || sft_at < chained, f, "settings",
          "sft+ppo continues from the selected SFT checkpoint: list sft before it");
}

// model: a path or a build, its tokenizer, dtype, quantisation and chat format
void validate_model(RunConfig& c, FileChecks files) {
  const std::string& f = c.file;
  // Model.
  require(c.model.path.empty() != !c.model.build_enabled, f, "model",
          "give exactly one of model.path (an HF model directory) or model.build");
  const bool gguf = models::is_gguf_path(c.model.path);
  if (gguf && files == FileChecks::on)
    require(file_exists(c.model.path), f, "model.path",
            "GGUF file not found: '" + c.model.path + "'" +
                (c.model.path.rfind("weights/", 0) == 0 ? " (scripts/setup.sh links it)" : ""));
  else if (!c.model.path.empty() && files == FileChecks::on)
    require(file_exists(c.model.path + "/config.json"), f, "model.path",
            "no config.json in '" + c.model.path + "'");
  if (c.model.build_enabled) {
    const auto& b = c.model.build;
    require(b.hidden_size > 0 && b.intermediate_size > 0 && b.num_layers > 0, f, "model.build",
            "hidden_size, intermediate_size and num_layers must be > 0");
    require(b.num_heads > 0 && b.hidden_size % b.num_heads == 0, f, "model.build.num_heads",
            "must divide hidden_size");
    require(b.num_kv_heads > 0 && b.num_heads % b.num_kv_heads == 0, f, "model.build.num_kv_heads",
            "must divide num_heads");
    require(
        c.model.tokenizer_vocab > 0 || !c.model.tokenizer.empty(), f, "model.tokenizer_vocab",
        "a built model needs a tokenizer: set tokenizer_vocab (trained on the data) or tokenizer");
  }
  require(c.model.tokenizer_vocab == 0 || c.model.tokenizer.empty(), f, "model.tokenizer",
          "set either model.tokenizer (a file to use) or model.tokenizer_vocab (train one on the "
          "data), not both: the trained one would silently replace the file");
  // A model directory's own tokenizer (tokenizer.model, else tokenizer.json); a GGUF file's is
  // found after its import (trainer/recipe/recipe.cpp).
  // A directory with neither keeps the tokenizer.model path, which the check below reports.
  if (c.model.tokenizer.empty() && c.model.tokenizer_vocab == 0 && !gguf) {
    c.model.tokenizer = models::tokenizer_file_in(c.model.path);
    if (c.model.tokenizer.empty()) c.model.tokenizer = c.model.path + "/tokenizer.model";
  }
  if (!c.model.tokenizer.empty() && files == FileChecks::on)
    require(file_exists(c.model.tokenizer), f, "model.tokenizer",
            "file not found: '" + c.model.tokenizer + "'");
  require(c.model.tokenizer_vocab >= 0, f, "model.tokenizer_vocab", "must be >= 0");
  // No chat_format: the one the model's own template renders (models/chat_format.h), "plain"
  // for a model without a template (a base model, a built one).
  if (c.model.chat_format.empty() && (files == FileChecks::on || c.model.build_enabled)) {
    const std::string jinja =
        c.model.build_enabled ? "" : models::model_chat_template(c.model.path);
    c.model.chat_format = models::recognise_chat_format(jinja, c.model.path);
    if (c.model.chat_format.empty()) c.model.chat_format = "plain";
  }
  if (!c.model.chat_format.empty()) {
    const auto names = models::chat_template_names();
    require(std::find(names.begin(), names.end(), c.model.chat_format) != names.end(), f,
            "model.chat_format", "must be one of " + join(names, ", "));
  }
}

// lora
void validate_lora(const RunConfig& c) {
  const std::string& f = c.file;
  // LoRA.
  require(c.lora.r >= 1, f, "lora.r", "must be >= 1");
  require(c.lora.alpha > 0, f, "lora.alpha", "must be > 0");
  require(c.lora.dropout >= 0 && c.lora.dropout < 1, f, "lora.dropout", "must be in [0, 1)");
}

// data: the training file, the test sets, the holdout and the world
void validate_data(const RunConfig& c, FileChecks files) {
  const std::string& f = c.file;
  // Data.
  auto check_path = [&](const std::string& path, const std::string& key,
                        const std::string& golden = "") {
    if (!golden.empty()) {
      if (files == FileChecks::on)
        require(file_exists(golden), f, key + " golden", "file not found: '" + golden + "'");
      require(is_synsciqa_path(path), f, key + " golden",
              "golden labels apply to SynSciQA .csv/.json files only");
    }
    if (path.rfind("synth:", 0) == 0) {
      require(c.data.synth_enabled, f, key, "'" + path + "' needs a data.synth section");
      require(one_of(path.substr(6), {"train", "validation", "test", "test_ood"}), f, key,
              "unknown synth split in '" + path + "' (train, validation, test, test_ood)");
    } else {
      require(!path.empty(), f, key, "must not be empty");
      if (files == FileChecks::on)
        require(file_exists(path), f, key, "file not found: '" + path + "'");
    }
  };
  check_path(c.data.train, "data.train", c.data.train_golden);
  require(!c.data.test_sets.empty(), f, "data.test_sets", "at least one test set is needed");
  require(c.data.holdout >= 0, f, "data.holdout", "must be >= 0");
  std::set<std::string> names;
  int holdout_sets = 0;
  for (std::size_t i = 0; i < c.data.test_sets.size(); ++i) {
    const auto& t = c.data.test_sets[i];
    const std::string key = "data.test_sets[" + std::to_string(i) + "]";
    require(!t.name.empty(), f, key + ".name", "must not be empty");
    require(names.insert(t.name).second, f, key + ".name", "duplicate test set '" + t.name + "'");
    // '+' names a test set's corrected or baseline answers and '@' its scenarios
    // (eval.corrections, eval.baselines, eval.scenarios), so a name with them could collide.
    require(t.name.find_first_of("+@") == std::string::npos, f, key + ".name",
            "'" + t.name + "' must not contain '+' or '@'");
    require(t.sample >= 0, f, key + ".sample", "must be >= 0 (0 = the whole set)");
    if (t.path == "holdout") {
      require(c.data.holdout > 0, f, key + ".path",
              "'holdout' needs data.holdout: how many training examples to hold out");
      require(t.golden.empty(), f, key + ".golden",
              "a held-out split keeps the training file's labels");
      require(++holdout_sets == 1, f, key + ".path", "only one test set can be the holdout");
    } else {
      check_path(t.path, key + ".path", t.golden);
    }
  }
  require(c.data.holdout == 0 || holdout_sets == 1, f, "data.holdout",
          "the held-out examples need a test set with path: holdout, or they would be lost");
  if (c.data.synth_enabled) {
    try {
      data::validate_synth_config(c.data.synth);
    } catch (const Error& e) {
      fail_at(f, "key data.synth", e.what());
    }
  }
  require(!c.data.reference.empty(), f, "data.reference", "must not be empty");
}

// pretrain and sft
void validate_stages(const RunConfig& c) {
  const std::string& f = c.file;
  // Stages.
  validate_train(c.pretrain, f, "pretrain.");
  require(!c.pretrain.enabled || c.model.build_enabled, f, "pretrain",
          "pre-training is for a model built by the run (model.build)");
  require(c.pretrain.max_examples == 0, f, "pretrain.max_examples",
          "is not used: pre-training reads all of the world's text; size the world with data.synth "
          "instead");
  validate_train(c.sft, f, "sft.");
  require(c.sft.copy_drills == 0, f, "sft.copy_drills", "only pre-training uses copy drills");
  require(c.sft.copy_drill_tokens == 0, f, "sft.copy_drill_tokens",
          "only pre-training uses copy drills");
}

// ppo
void validate_ppo(const RunConfig& c) {
  const std::string& f = c.file;
  const auto& p = c.ppo;
  require(p.iterations >= 1, f, "ppo.iterations", "must be >= 1");
  require(p.batch_size >= 1, f, "ppo.batch_size", "must be >= 1");
  require(p.minibatch_size >= 1 && p.batch_size % p.minibatch_size == 0, f, "ppo.minibatch_size",
          "must be >= 1 and divide ppo.batch_size");
  require(p.ppo_epochs >= 1, f, "ppo.ppo_epochs", "must be >= 1");
  require(p.lr > 0, f, "ppo.lr", "must be > 0");
  require(p.temperature > 0, f, "ppo.temperature", "must be > 0");
  require(p.top_p > 0 && p.top_p <= 1, f, "ppo.top_p", "must be in (0, 1]");
  require(p.max_new_tokens >= 1, f, "ppo.max_new_tokens", "must be >= 1");
  require(p.gamma >= 0 && p.gamma <= 1, f, "ppo.gamma", "must be in [0, 1]");
  require(p.lam >= 0 && p.lam <= 1, f, "ppo.lambda", "must be in [0, 1]");
  require(p.clip_range > 0, f, "ppo.clip_range", "must be > 0");
  require(p.clip_range_value > 0, f, "ppo.clip_range_value", "must be > 0");
  require(p.kl_coef >= 0, f, "ppo.kl_coef", "must be >= 0");
  require(p.kl_target > 0, f, "ppo.kl_target", "must be > 0");
  require(p.kl_horizon_iterations > 0, f, "ppo.kl_horizon_iterations", "must be > 0");
  require(p.max_logprob_gap >= 0, f, "ppo.max_logprob_gap", "must be >= 0 (0 = no check)");
  require(p.missing_eos_penalty >= 0, f, "ppo.missing_eos_penalty", "must be >= 0");
  require(p.adam_eps > 0, f, "ppo.adam_eps", "must be > 0");
  require(p.eval_every >= 1 && p.checkpoint_every >= 1 && p.log_every >= 1, f, "ppo.eval_every",
          "eval_every, checkpoint_every and log_every must be >= 1");
}

// eval, selection and invalid_citations (the selected test set filled in)
void validate_eval(RunConfig& c) {
  const std::string& f = c.file;
  // Evaluation and selection.
  require(c.eval.max_new_tokens >= 1, f, "eval.max_new_tokens", "must be >= 1");
  require(c.eval.batch_size >= 1, f, "eval.batch_size", "must be >= 1");
  require(c.eval.max_examples >= 0, f, "eval.max_examples", "must be >= 0");
  require(c.eval.bootstrap_resamples >= 1, f, "eval.bootstrap_resamples", "must be >= 1");
  for (std::size_t i = 0; i < c.eval.corrections.size(); ++i) {
    const std::string& method = c.eval.corrections[i];
    try {
      attribution::parse_fix_method(method);
    } catch (const Error& e) {
      require(false, f, "eval.corrections[" + std::to_string(i) + "]", e.what());
    }
    require(std::count(c.eval.corrections.begin(), c.eval.corrections.end(), method) == 1, f,
            "eval.corrections[" + std::to_string(i) + "]", "'" + method + "' is listed twice");
  }
  for (std::size_t i = 0; i < c.eval.baselines.size(); ++i) {
    const std::string& name = c.eval.baselines[i];
    const std::string key = "eval.baselines[" + std::to_string(i) + "]";
    require(attribution::find_citation_baseline(name).has_value(), f, key,
            "unknown citation baseline '" + name + "' (cite_bm25, cite_all, cite_first)");
    require(std::count(c.eval.baselines.begin(), c.eval.baselines.end(), name) == 1, f, key,
            "'" + name + "' is listed twice");
  }
  for (std::size_t i = 0; i < c.eval.scenarios.size(); ++i) {
    const std::string& scenario = c.eval.scenarios[i];
    const std::string key = "eval.scenarios[" + std::to_string(i) + "]";
    require(scenario == "rtg" || scenario == "gtr", f, key,
            "unknown scenario '" + scenario +
                "' (rtg: retrieve-then-generate, gtr: generate-then-retrieve; the given "
                "documents are always evaluated)");
    require(
        std::count(c.eval.scenarios.begin(), c.eval.scenarios.begin() + long(i) + 1, scenario) == 1,
        f, key, "'" + scenario + "' is listed twice");
  }
  require(c.eval.retrieval_k >= 1, f, "eval.retrieval_k", "must be >= 1");
  require(one_of(c.selection.metric,
                 {"f1", "precision", "recall", "reward", "source_quality", "format_quality"}),
          f, "selection.metric",
          "must be one of f1, precision, recall, reward, source_quality, format_quality");
  if (c.selection.test_set.empty()) {
    auto it = std::find_if(c.data.test_sets.begin(), c.data.test_sets.end(),
                           [](const TestSetSpec& t) { return !t.ood; });
    require(it != c.data.test_sets.end(), f, "selection.test_set",
            "no in-distribution test set to select on; name one");
    c.selection.test_set = it->name;
  }
  std::set<std::string> names;
  for (const auto& t : c.data.test_sets) names.insert(t.name);
  require(names.count(c.selection.test_set) > 0, f, "selection.test_set",
          "'" + c.selection.test_set + "' is not a test set");
}

// distributed: what one process can check; the world size is known at start-up
// (trainer/distributed/dist_env.h)
void validate_distributed(const RunConfig& c) {
  const std::string& f = c.file;
  const auto& d = c.distributed;
  require(d.backend != Backend::nccl || c.device == Device::cuda, f, "distributed.backend",
          "nccl needs device: cuda (use gloo on CPUs)");
  require(d.learners >= 0, f, "distributed.learners", "must be >= 0 (0 = every rank)");
  require(d.rollout_on_learners || d.learners > 0, f, "distributed.rollout_on_learners",
          "false leaves no rank to roll out when every rank learns (learners: 0)");
  require(d.timeout_s > 0, f, "distributed.timeout_s", "must be > 0");
}

}  // namespace

void validate_run_config(RunConfig& c, FileChecks files) {
  validate_top(c);
  validate_model(c, files);
  validate_lora(c);
  validate_data(c, files);
  validate_stages(c);
  validate_ppo(c);
  validate_eval(c);
  validate_distributed(c);
}

}  // namespace citeforge::trainer
