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
#include "models/gguf.h"
#include "models/tokenizer.h"
#include "trainer/config/run_config_validate.h"

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
  template <class E>
  requires std::is_enum_v<E>
  void field(const std::string& key, E& v) {
    if (auto n = child(key)) {
      const std::string text = yaml_string(n, place(key));
      const auto value = choice_from_name<E>(text);
      if (!value) yaml_fail(n, place(key), "must be " + choice_list<E>() + ", not '" + text + "'");
      v = *value;
    }
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
  template <class E>
  requires std::is_enum_v<E>
  void field(const std::string& key, E v) { node[key] = choice_name(v); }
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
  v.field("non_finite_weights", m.non_finite_weights);
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
  v.field("share_prompt_prefix", t.share_prompt_prefix);
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
  v.field("share_prompt_prefix", p.share_prompt_prefix);
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
  v.optional_field("split_seed", d.split_seed, d.split_seed != 0);
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
  v.field("share_prompt_prefix", e.share_prompt_prefix);  // always written: the default changed
  v.optional_list("corrections", e.corrections);
  v.optional_list("baselines", e.baselines);
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
  v.section("logging", [&](auto& s) { s.field("tensorboard", c.logging.tensorboard); });
  v.field("checkpoint_keep_last", c.checkpoint_keep_last);
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

}  // namespace

bool is_synsciqa_path(const std::string& path) {
  auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with(".csv") || ends_with(".json");
}

RunConfig parse_run_config(const std::string& yaml_text, const std::string& file,
                           const std::vector<std::string>& overrides, FileChecks files) {
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
  validate_run_config(config, files);
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

uint64_t split_seed(const RunConfig& config) {
  return config.data.split_seed != 0 ? config.data.split_seed : config.seed;
}

}  // namespace citeforge::trainer
