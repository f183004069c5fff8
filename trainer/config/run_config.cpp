#include "trainer/config/run_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "attribution/citefix.h"
#include "common/error.h"
#include "common/file_io.h"
#include "common/number_text.h"
#include "common/yaml_fields.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"

namespace citeforge::trainer {
namespace {

// One schema, two directions: the same visit_* functions read a YAML tree into the structs
// (Reader) and write the structs back as YAML (Writer), so the resolved config can never
// drift from what the loader accepts.
struct Reader {
  YAML::Node node;
  std::string file, prefix;
  std::set<std::string> known;

  YAML::Node child(const std::string& key) {
    known.insert(key);
    return node.IsMap() ? node[key] : YAML::Node();
  }
  YamlPlace place(const std::string& key) const { return {file, prefix + key}; }

  void field(const std::string& key, std::string& v) {
    if (auto n = child(key)) v = yaml_string(n, place(key));
  }
  void field(const std::string& key, double& v) {
    if (auto n = child(key)) v = yaml_number(n, place(key));
  }
  void field(const std::string& key, bool& v) {
    if (auto n = child(key)) {
      const std::string text = yaml_string(n, place(key));
      if (text == "true")
        v = true;
      else if (text == "false")
        v = false;
      else
        yaml_fail(n, place(key), "expected true or false, got '" + text + "'");
    }
  }
  void field(const std::string& key, uint64_t& v) {
    if (auto n = child(key)) v = yaml_unsigned(n, place(key));
  }
  template <class Int>
  requires std::is_integral_v<Int>
  void field(const std::string& key, Int& v) {
    if (auto n = child(key)) {
      long long value = yaml_integer(n, place(key));
      if (value < std::numeric_limits<Int>::min() || value > std::numeric_limits<Int>::max())
        yaml_fail(n, place(key), "out of range");
      v = static_cast<Int>(value);
    }
  }
  void field(const std::string& key, std::vector<std::string>& v) {
    if (auto n = child(key)) v = yaml_string_list(n, place(key));
  }
  // A list written back only when it is not empty, so that adding the key to citeforge leaves
  // the resolved configs of existing runs as they were.
  void optional_list(const std::string& key, std::vector<std::string>& v) { field(key, v); }
  // A field written back only when `written` (a setting that only matters with another one).
  template <class T>
  void optional_field(const std::string& key, T& v, bool /*written*/) {
    field(key, v);
  }
  // A number that is either set or absent (written back only when set).
  void optional_number(const std::string& key, std::optional<double>& v) {
    if (!child(key)) return;
    double value = 0;
    field(key, value);
    v = value;
  }
  // A nested mapping; `present` (if given) records whether the key was there.
  template <class F>
  void section(const std::string& key, F&& visit, bool* present = nullptr) {
    YAML::Node n = child(key);
    if (present) *present = bool(n) && !n.IsNull();
    if (!n || n.IsNull()) return;
    Reader sub{n, file, prefix + key + ".", {}};
    if (!n.IsMap()) yaml_fail(n, place(key), "expected a mapping");
    visit(sub);
    sub.finish();
  }
  template <class T, class F>
  void list(const std::string& key, std::vector<T>& items, F&& visit) {
    YAML::Node n = child(key);
    if (!n) return;
    if (!n.IsSequence()) yaml_fail(n, place(key), "expected a list");
    items.clear();
    for (std::size_t i = 0; i < n.size(); ++i) {
      Reader sub{n[i], file, prefix + key + "[" + std::to_string(i) + "].", {}};
      if (!n[i].IsMap()) yaml_fail(n[i], place(key), "expected a mapping");
      items.emplace_back();
      visit(sub, items.back());
      sub.finish();
    }
  }
  // A key that citeforge no longer reads: naming it is an error that says what replaced it.
  void retired(const std::string& key, const std::string& why) {
    if (auto n = child(key)) yaml_fail(n, place(key), why);
  }
  void finish() const { require_known_keys(node, known, file, prefix); }
};
struct Writer {
  YAML::Node node{YAML::NodeType::Map};

  void field(const std::string& key, const std::string& v) { node[key] = v; }
  void field(const std::string& key, double v) { node[key] = number_text(v); }
  void field(const std::string& key, bool v) { node[key] = v ? "true" : "false"; }
  template <class Int>
  requires std::is_integral_v<Int>
  void field(const std::string& key, Int v) { node[key] = std::to_string(v); }
  void field(const std::string& key, const std::vector<std::string>& v) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& s : v) seq.push_back(s);
    seq.SetStyle(YAML::EmitterStyle::Flow);
    node[key] = seq;
  }
  void optional_list(const std::string& key, const std::vector<std::string>& v) {
    if (!v.empty()) field(key, v);
  }
  template <class T>
  void optional_field(const std::string& key, const T& v, bool written) {
    if (written) field(key, v);
  }
  void optional_number(const std::string& key, const std::optional<double>& v) {
    if (v) field(key, *v);
  }
  template <class F>
  void section(const std::string& key, F&& visit, bool* present = nullptr) {
    if (present && !*present) return;
    Writer sub;
    visit(sub);
    node[key] = sub.node;
  }
  template <class T, class F>
  void list(const std::string& key, std::vector<T>& items, F&& visit) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (auto& item : items) {
      Writer sub;
      visit(sub, item);
      seq.push_back(sub.node);
    }
    node[key] = seq;
  }
  void retired(const std::string&, const std::string&) {}
};

template <class V>
void visit_build(V& v, ModelBuild& b) {
  v.field("hidden_size", b.hidden_size);
  v.field("intermediate_size", b.intermediate_size);
  v.field("num_layers", b.num_layers);
  v.field("num_heads", b.num_heads);
  v.field("num_kv_heads", b.num_kv_heads);
  v.field("max_positions", b.max_positions);
  v.field("rope_theta", b.rope_theta);
  v.field("tie_word_embeddings", b.tie_word_embeddings);
}

template <class V>
void visit_model(V& v, ModelSection& m) {
  v.field("path", m.path);
  v.section(
      "build", [&](auto& s) { visit_build(s, m.build); }, &m.build_enabled);
  v.field("tokenizer", m.tokenizer);
  v.field("tokenizer_vocab", m.tokenizer_vocab);
  v.field("dtype", m.dtype);
  v.field("quantization", m.quantization);
  v.field("chat_format", m.chat_format);
}

template <class V>
void visit_lora(V& v, LoraSection& l) {
  v.field("r", l.r);
  v.field("alpha", l.alpha);
  v.field("dropout", l.dropout);
  v.field("target_modules", l.target_modules);
}

// Pre-training runs when its section is present and `enabled` is not false (so a test or a
// --set can switch it off); SFT runs when `settings` lists sft, so `sft.enabled` would be a key
// that silently does nothing and is refused.
template <class V>
void visit_train(V& v, TrainSection& t, bool has_switch) {
  if (has_switch)
    v.field("enabled", t.enabled);
  else
    v.retired("enabled", "was never read: SFT runs when `settings` lists sft; remove the key");
  v.field("epochs", t.epochs);
  v.field("lr", t.lr);
  v.field("schedule", t.schedule);
  v.field("warmup_ratio", t.warmup_ratio);
  v.field("batch_size", t.batch_size);
  v.field("grad_accum", t.grad_accum);
  v.field("max_grad_norm", t.max_grad_norm);
  v.field("weight_decay", t.weight_decay);
  v.field("beta1", t.beta1);
  v.field("beta2", t.beta2);
  v.field("adam_eps", t.adam_eps);
  v.field("log_every", t.log_every);
  v.field("checkpoint_every", t.checkpoint_every);
  v.field("max_seq_len", t.max_seq_len);
  v.field("max_examples", t.max_examples);
  v.field("gradient_checkpointing", t.gradient_checkpointing);
  v.field("copy_drills", t.copy_drills);
  v.field("copy_drill_tokens", t.copy_drill_tokens);
}

template <class V>
void visit_ppo(V& v, PpoSection& p) {
  v.field("iterations", p.iterations);
  v.field("batch_size", p.batch_size);
  v.field("minibatch_size", p.minibatch_size);
  v.field("ppo_epochs", p.ppo_epochs);
  v.field("lr", p.lr);
  v.field("max_grad_norm", p.max_grad_norm);
  v.field("temperature", p.temperature);
  v.field("top_p", p.top_p);
  v.field("max_new_tokens", p.max_new_tokens);
  v.field("gamma", p.gamma);
  v.field("lambda", p.lam);
  v.field("clip_range", p.clip_range);
  v.field("clip_range_value", p.clip_range_value);
  v.field("value_coef", p.value_coef);
  v.field("entropy_coef", p.entropy_coef);
  v.field("kl_coef", p.kl_coef);
  v.field("kl_estimator", p.kl_estimator);
  v.field("adaptive_kl", p.adaptive_kl);
  v.field("kl_target", p.kl_target);
  v.field("kl_horizon_iterations", p.kl_horizon_iterations);
  v.retired("kl_horizon",
            "ppo.kl_horizon counted sequences and is gone; set ppo.kl_horizon_iterations "
            "(= the old value / ppo.batch_size) instead");
  v.field("kl_stop", p.kl_stop);
  v.field("max_logprob_gap", p.max_logprob_gap);
  v.field("missing_eos_penalty", p.missing_eos_penalty);
  v.field("adam_eps", p.adam_eps);
  v.field("lr_schedule", p.lr_schedule);
  v.field("eval_every", p.eval_every);
  v.field("checkpoint_every", p.checkpoint_every);
  v.field("log_every", p.log_every);
  v.field("max_examples", p.max_examples);
  v.field("gradient_checkpointing", p.gradient_checkpointing);
}

template <class V>
void visit_synth(V& v, data::SynthConfig& s) {
  data::visit_synth_fields(v, s);
}

template <class V>
void visit_data(V& v, DataSection& d) {
  v.section(
      "synth", [&](auto& s) { visit_synth(s, d.synth); }, &d.synth_enabled);
  v.field("train", d.train);
  v.field("train_golden", d.train_golden);
  v.field("holdout", d.holdout);
  v.list("test_sets", d.test_sets, [](auto& s, TestSetSpec& t) {
    s.field("name", t.name);
    s.field("path", t.path);
    s.field("golden", t.golden);
    s.field("ood", t.ood);
    s.field("sample", t.sample);
  });
  v.field("template", d.prompt_template);
  v.field("templates_dir", d.templates_dir);
  v.field("reference", d.reference);
  v.field("reading_sources", d.reading_sources);
}

template <class V>
void visit_eval(V& v, EvalSection& e) {
  v.field("max_new_tokens", e.max_new_tokens);
  v.field("batch_size", e.batch_size);
  v.field("max_examples", e.max_examples);
  v.field("bootstrap_resamples", e.bootstrap_resamples);
  v.optional_list("corrections", e.corrections);
  v.optional_list("scenarios", e.scenarios);
  v.optional_field("retrieval_k", e.retrieval_k, !e.scenarios.empty());
  v.optional_number("attributability_threshold", e.attributability_threshold);
}

template <class V>
void visit_distributed(V& v, DistributedSection& d) {
  v.field("backend", d.backend);
  v.field("learners", d.learners);
  v.field("rollout_on_learners", d.rollout_on_learners);
  v.field("timeout_s", d.timeout_s);
}

template <class V>
void visit_run(V& v, RunConfig& c) {
  v.field("name", c.name);
  v.field("seed", c.seed);
  v.field("device", c.device);
  v.field("threads", c.threads);
  v.field("resume", c.resume);
  v.field("settings", c.settings);
  v.section("data", [&](auto& s) { visit_data(s, c.data); });
  v.section("model", [&](auto& s) { visit_model(s, c.model); });
  v.section("lora", [&](auto& s) { visit_lora(s, c.lora); });
  v.section(
      "pretrain", [&](auto& s) { visit_train(s, c.pretrain, true); }, &c.pretrain.enabled);
  v.section("sft", [&](auto& s) { visit_train(s, c.sft, false); });
  v.section("ppo", [&](auto& s) { visit_ppo(s, c.ppo); });
  v.section("eval", [&](auto& s) { visit_eval(s, c.eval); });
  v.section("selection", [&](auto& s) {
    s.field("metric", c.selection.metric);
    s.field("test_set", c.selection.test_set);
  });
  v.field("invalid_citations", c.invalid_citations);
  v.section(
      "distributed", [&](auto& s) { visit_distributed(s, c.distributed); }, &c.distributed_enabled);
}

// Applies "a.b.c=value": the value is parsed as YAML, so lists and mappings work too.
void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--set " + assignment + ": expected key.path=value");
  const std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error("--set " + path + ": invalid YAML value: " + e.msg);
  }
  std::vector<std::string> keys;
  for (std::size_t begin = 0;;) {
    auto dot = path.find('.', begin);
    keys.push_back(path.substr(begin, dot - begin));
    if (keys.back().empty()) throw Error("--set " + path + ": empty key component");
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  // yaml-cpp nodes are handles: walk with fresh handles, never reassign one (that would copy
  // over the node it points at).
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next = chain.back()[keys[i]];
    if (next.IsDefined() && !next.IsNull() && !next.IsMap())
      throw Error("--set " + path + ": '" + keys[i] + "' is not a mapping");
    if (!next.IsDefined() || next.IsNull()) chain.back()[keys[i]] = YAML::Node(YAML::NodeType::Map);
    chain.push_back(chain.back()[keys[i]]);
  }
  chain.back()[keys.back()] = value;
}

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
  require(one_of(t.schedule, {"constant", "cosine"}), file, p + "schedule",
          "must be constant or cosine, got '" + t.schedule + "'");
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

void validate(RunConfig& c) {
  const std::string& f = c.file;
  require(!c.name.empty(), f, "name", "must not be empty");
  require(one_of(c.device, {"cpu", "cuda"}), f, "device", "must be cpu or cuda");
  require(c.threads >= 0, f, "threads", "must be >= 0");
  require(one_of(c.resume, {"auto", "never"}), f, "resume", "must be auto or never");
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
  // Model.
  require(c.model.path.empty() != !c.model.build_enabled, f, "model",
          "give exactly one of model.path (an HF model directory) or model.build");
  const bool gguf = models::is_gguf_path(c.model.path);
  if (gguf)
    require(file_exists(c.model.path), f, "model.path",
            "GGUF file not found: '" + c.model.path + "'" +
                (c.model.path.rfind("weights/", 0) == 0 ? " (scripts/setup.sh links it)" : ""));
  else if (!c.model.path.empty())
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
  if (!c.model.tokenizer.empty())
    require(file_exists(c.model.tokenizer), f, "model.tokenizer",
            "file not found: '" + c.model.tokenizer + "'");
  require(c.model.tokenizer_vocab >= 0, f, "model.tokenizer_vocab", "must be >= 0");
  require(one_of(c.model.dtype, {"float32", "bfloat16"}), f, "model.dtype",
          "must be float32 or bfloat16");
  require(one_of(c.model.quantization, {"none", "nf4"}), f, "model.quantization",
          "must be none or nf4");
  {
    std::string known;
    for (const auto& name : models::chat_template_names())
      known += (known.empty() ? "" : ", ") + name;
    const auto names = models::chat_template_names();
    require(std::find(names.begin(), names.end(), c.model.chat_format) != names.end(), f,
            "model.chat_format", "must be one of " + known);
  }
  // LoRA.
  require(c.lora.r >= 1, f, "lora.r", "must be >= 1");
  require(c.lora.alpha > 0, f, "lora.alpha", "must be > 0");
  require(c.lora.dropout >= 0 && c.lora.dropout < 1, f, "lora.dropout", "must be in [0, 1)");
  // Data.
  auto check_path = [&](const std::string& path, const std::string& key,
                        const std::string& golden = "") {
    if (!golden.empty()) {
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
    // '+' names a test set's corrected answers and '@' its scenarios (eval.corrections,
    // eval.scenarios), so a name with them could collide with those.
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
  require(c.data.reading_sources == "none" || c.data.reading_sources == "prose", f,
          "data.reading_sources", "must be none or prose, not '" + c.data.reading_sources + "'");
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
  require(one_of(p.kl_estimator, {"k1", "k3"}), f, "ppo.kl_estimator", "must be k1 or k3");
  require(p.kl_target > 0, f, "ppo.kl_target", "must be > 0");
  require(p.kl_horizon_iterations > 0, f, "ppo.kl_horizon_iterations", "must be > 0");
  require(p.max_logprob_gap >= 0, f, "ppo.max_logprob_gap", "must be >= 0 (0 = no check)");
  require(p.missing_eos_penalty >= 0, f, "ppo.missing_eos_penalty", "must be >= 0");
  require(p.adam_eps > 0, f, "ppo.adam_eps", "must be > 0");
  require(one_of(p.lr_schedule, {"constant", "linear"}), f, "ppo.lr_schedule",
          "must be constant or linear");
  require(p.eval_every >= 1 && p.checkpoint_every >= 1 && p.log_every >= 1, f, "ppo.eval_every",
          "eval_every, checkpoint_every and log_every must be >= 1");
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
  require(names.count(c.selection.test_set) > 0, f, "selection.test_set",
          "'" + c.selection.test_set + "' is not a test set");
  require(one_of(c.invalid_citations, {"penalize", "ignore"}), f, "invalid_citations",
          "must be penalize or ignore");
  // Distributed (the world size is known only at start-up: trainer/dist/dist_env.h checks the
  // rest).
  const auto& d = c.distributed;
  require(one_of(d.backend, {"gloo", "nccl"}), f, "distributed.backend", "must be gloo or nccl");
  require(d.backend != "nccl" || c.device == "cuda", f, "distributed.backend",
          "nccl needs device: cuda (use gloo on CPUs)");
  require(d.learners >= 0, f, "distributed.learners", "must be >= 0 (0 = every rank)");
  require(d.rollout_on_learners || d.learners > 0, f, "distributed.rollout_on_learners",
          "false leaves no rank to roll out when every rank learns (learners: 0)");
  require(d.timeout_s > 0, f, "distributed.timeout_s", "must be > 0");
}

}  // namespace

bool is_synsciqa_path(const std::string& path) {
  auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with(".csv") || ends_with(".json");
}

RunConfig parse_run_config(const std::string& yaml_text, const std::string& file,
                           const std::vector<std::string>& overrides) {
  YAML::Node root = parse_yaml_text(yaml_text, file);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const auto& o : overrides) apply_override(root, o);
  RunConfig config;
  config.file = file;
  config.pretrain.enabled = false;
  Reader reader{root, file, "", {}};
  if (!root.IsMap()) yaml_fail(root, {file, ""}, "expected a mapping at the top level");
  visit_run(reader, config);
  reader.finish();
  validate(config);
  return config;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (!file_exists(path)) fail_at(path, "", "config file not found");
  return parse_run_config(read_file(path), path, overrides);
}

std::string run_config_to_yaml(const RunConfig& config) {
  RunConfig copy = config;
  Writer writer;
  visit_run(writer, copy);
  YAML::Emitter out;
  out << writer.node;
  return std::string(out.c_str()) + "\n";
}

const TestSetSpec& selection_test_set(const RunConfig& config) {
  for (const auto& t : config.data.test_sets)
    if (t.name == config.selection.test_set) return t;
  throw Error(config.file + ": selection.test_set '" + config.selection.test_set +
              "' is not a test set");
}

}  // namespace citeforge::trainer
