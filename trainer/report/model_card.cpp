#include "trainer/report/model_card.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "common/file_io.h"
#include "trainer/eval/paired.h"
#include "trainer/eval/selection.h"
#include "trainer/report/tables.h"
#include "trainer/report/text_table.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

namespace {

std::string stage_of(const std::string& checkpoint_name) {
  const auto dash = checkpoint_name.rfind('-');
  return dash == std::string::npos ? checkpoint_name : checkpoint_name.substr(0, dash);
}

// What the base is called in the card: its hub id, else its own name, else the file or
// directory the run named (an imported GGUF's cache directory says less), else the directory's.
std::string base_title(const ModelCardFacts& f) {
  if (!f.base.hub_id.empty()) return f.base.hub_id;
  if (!f.base.name.empty()) return f.base.name;
  if (f.config && !f.config->model.path.empty())
    return fs::path(f.config->model.path).lexically_normal().filename().string();
  return fs::path(f.base_dir).lexically_normal().filename().string();
}

std::string training_data(const RunConfig& c) {
  if (c.data.synth_enabled)
    return "citeforge's synthetic world (data.synth.seed " + std::to_string(c.data.synth.seed) +
           ")";
  return fs::path(c.data.train).stem().string();
}

std::string front_matter(const ModelCardFacts& f) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "base_model" << YAML::Value << base_title(f);
  y << YAML::Key << "library_name" << YAML::Value << (f.merged ? "transformers" : "peft");
  if (!f.base.license.empty()) {
    y << YAML::Key << "license" << YAML::Value << f.base.license;
  } else {
    // The hub's form for a licence it has no identifier for; the body says it is unknown.
    y << YAML::Key << "license" << YAML::Value << "other";
    y << YAML::Key << "license_name" << YAML::Value << ("license of " + base_title(f));
  }
  y << YAML::Key << "pipeline_tag" << YAML::Value << "text-generation";
  y << YAML::Key << "tags" << YAML::Value << YAML::BeginSeq << "citeforge"
    << "lora";
  if (f.config && f.config->model.quantization == Quantization::nf4) y << "qlora";
  if (f.merged) y << "merged";
  y << "citations"
    << "retrieval-augmented-generation" << YAML::EndSeq;
  if (f.config)
    y << YAML::Key << "datasets" << YAML::Value << YAML::BeginSeq << training_data(*f.config)
      << YAML::EndSeq;
  y << YAML::EndMap;
  return "---\n" + std::string(y.c_str()) + "\n---\n";
}

void write_base_section(std::ostringstream& out, const ModelCardFacts& f) {
  out << "## Base model\n\n";
  out << "- " << (f.base.name.empty() ? base_title(f) : f.base.name);
  if (!f.base.hub_id.empty() && f.base.hub_id != f.base.name) out << " (`" << f.base.hub_id << "`)";
  out << ", loaded from `" << f.base_dir << "`";
  if (f.config) out << " (the run's `model.path`: `" << f.config->model.path << "`)";
  out << ".\n";
  if (f.base.license.empty())
    out << "- Licence: the base names none in its card or metadata; this model is bound by the "
           "base's terms, which you must look up before using it.\n";
  else
    out << "- Licence: `" << f.base.license << "`, as the base's card or metadata gives it.\n";
  out << "\n";
}

void write_training_section(std::ostringstream& out, const ModelCardFacts& f) {
  out << "## Training\n\n";
  const std::string what = f.merged ? "The base model with a LoRA adapter merged into its weights"
                                    : "A LoRA adapter (Python peft format)";
  out << what << ": r " << f.lora_r << ", alpha " << fixed(f.lora_alpha, 0) << ", on "
      << f.adapted_layers << " linear layers, trained by citeforge to answer from given documents "
      << "and cite them.\n\n";
  if (!f.config) {
    out << "The checkpoint `" << f.checkpoint
        << "` is not inside a citeforge run directory, so how it was trained and how it scored "
           "are not known to this card.\n\n";
    return;
  }
  const RunConfig& c = *f.config;
  out << "- Checkpoint `" << f.checkpoint_name << "` of run `" << f.run->name() << "` (setting `"
      << stage_of(f.checkpoint_name) << "`; the run's settings: ";
  for (size_t i = 0; i < c.settings.size(); ++i) out << (i ? ", " : "") << c.settings[i];
  out << "), seed " << c.seed << ".\n";
  out << "- Base weights: " << choice_name(c.model.quantization) << " quantisation, compute in "
      << choice_name(c.model.dtype) << "; LoRA dropout " << fixed(c.lora.dropout, 2) << ".\n";
  out << "- Data: " << training_data(c) << ", prompt template `" << c.data.prompt_template
      << "`, chat format `" << c.model.chat_format << "`.\n";
  out << "- SFT: " << c.sft.epochs << " epochs, lr " << exact(c.sft.lr) << ", batch "
      << c.sft.batch_size << " x " << c.sft.grad_accum << " accumulation, sequences up to "
      << c.sft.max_seq_len << " tokens.\n";
  const std::string stage = stage_of(f.checkpoint_name);
  if (stage == "ppo" || stage == "sft+ppo")
    out << "- PPO: " << c.ppo.iterations << " iterations of " << c.ppo.batch_size
        << " prompts, reward (citation precision + recall) / 2, KL coefficient "
        << exact(c.ppo.kl_coef) << " against the frozen reference, temperature "
        << exact(c.ppo.temperature) << ", up to " << c.ppo.max_new_tokens << " new tokens.\n";
  out << "\n<details><summary>The run's resolved config (<code>config.resolved.yaml</code>)"
         "</summary>\n\n```yaml\n"
      << f.config_text << (f.config_text.empty() || f.config_text.back() == '\n' ? "" : "\n")
      << "```\n\n</details>\n\n";
}

// The paired comparison with chance, with its own p-value (a card's rows are not one family).
std::string chance_cell(const ResultRecord& r, const std::string& metric) {
  const auto* c = find_comparison(r.paired, "chance", metric);
  return paired_cell(c, c ? c->test.p_value : std::nan(""));
}

void write_evaluation_section(std::ostringstream& out, const ModelCardFacts& f) {
  if (!f.config) return;
  out << "## Evaluation\n\n";
  if (f.mine.empty()) {
    out << "The run's `results.json` holds no evaluation of `" << f.checkpoint_name
        << "` (runs evaluate after each epoch or every `ppo.eval_every` iterations; a `-last` "
           "checkpoint is the stage's latest state, evaluated under its epoch's name).\n\n";
    return;
  }
  out << (f.selected ? "The run selected this checkpoint for its setting"
                     : "The run did not select this checkpoint for its setting")
      << " (selection on `" << f.config->selection.metric << "`"
      << (f.config->selection.test_set.empty() ? ""
                                               : " over `" + f.config->selection.test_set + "`")
      << ").\n\n";
  TextTable t{{"test set", "F1 [95% CI]", "chance", "F1 − chance (paired)", "base F1",
               "precision [95% CI]", "chance", "recall [95% CI]", "chance", "n"},
              {false, true, true, true, true, true, true, true, true, true},
              {}};
  for (const auto& r : f.mine) {
    const ResultRecord* base = nullptr;
    for (const auto& b : f.base_results)
      if (b.test_set == r.test_set) base = &b;
    const auto f1 = metric_of(&r, "f1");
    t.rows.push_back({r.test_set, percent_with_interval(f1), percent(metric_of(&r, "chance_f1")),
                      chance_cell(r, "f1"), percent(metric_of(base, "f1")),
                      percent_with_interval(metric_of(&r, "precision")),
                      percent(metric_of(&r, "chance_precision")),
                      percent_with_interval(metric_of(&r, "recall")),
                      percent(metric_of(&r, "chance_recall")), std::to_string(f1.count)});
  }
  out << to_markdown(t) << "\n";
  out << "Citation F1, precision and recall (RAGE's) in percent with 95% bootstrap intervals over "
         "questions. Chance is citing as many of the given documents at random, exact per "
         "question; \"F1 − chance\" is the paired per-question difference in points with its "
         "95% interval and sign-flip p-value (per comparison, not adjusted for the rows). A "
         "checkpoint beats chance on a set only where that interval excludes 0. From `"
      << f.run->results() << "`.\n\n";
}

void write_reproduce_section(std::ostringstream& out, const ModelCardFacts& f) {
  if (!f.config) return;
  out << "## Reproduce\n\n```sh\nciteforge run " << f.run->config()
      << " --out runs/reproduced\nciteforge export --checkpoint runs/reproduced/"
      << RunDir::relative_checkpoint(f.checkpoint_name) << " --format "
      << (f.merged ? "merged" : "peft") << " --out exported\n```\n\n"
      << "A run on another machine or device may differ in the last bits of its numerics, and "
         "so in its answers.\n";
}

}  // namespace

ModelCardFacts gather_model_card_facts(const std::string& checkpoint, const std::string& base_dir,
                                       bool merged, int64_t adapter_r, double adapter_alpha,
                                       size_t adapted) {
  ModelCardFacts f;
  f.merged = merged;
  f.checkpoint = checkpoint;
  f.base_dir = base_dir;
  f.base = models::read_base_facts(base_dir);
  f.lora_r = adapter_r;
  f.lora_alpha = adapter_alpha;
  f.adapted_layers = adapted;
  f.run = run_of_checkpoint(checkpoint);
  if (!f.run) return f;
  f.config = read_resolved_config(*f.run);
  if (!f.config) {
    f.run.reset();
    return f;
  }
  f.config_text = read_file(f.run->config());
  f.checkpoint_name = fs::path(checkpoint).lexically_normal().filename().string();
  if (f.checkpoint_name.empty())
    f.checkpoint_name = fs::path(checkpoint).lexically_normal().parent_path().filename().string();
  const std::string relative = RunDir::relative_checkpoint(f.checkpoint_name);
  if (fs::exists(f.run->results()))
    for (const auto& r : read_results(f.run->results())) {
      if (uncorrected_test_set(r.test_set)) continue;  // corrected and baseline answers
      if (r.checkpoint == relative) f.mine.push_back(r);
      if (r.stage == "base") f.base_results.push_back(r);
    }
  if (fs::exists(f.run->selection()))
    for (const auto& s : read_selection(f.run->selection()))
      if (s.checkpoint == relative) f.selected = true;
  return f;
}

std::string model_card(const ModelCardFacts& f) {
  std::ostringstream out;
  out << front_matter(f) << "\n# " << base_title(f);
  if (f.config)
    out << ", " << stage_title(stage_of(f.checkpoint_name)) << " (`" << f.checkpoint_name << "`)";
  out << ": citing its sources with citeforge\n\n";
  write_base_section(out, f);
  write_training_section(out, f);
  write_evaluation_section(out, f);
  write_reproduce_section(out, f);
  return out.str();
}

}  // namespace citeforge::trainer
