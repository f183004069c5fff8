// The README.md that `citeforge export` writes beside an adapter or a merged model: a model card
// in the Hugging Face format (YAML front matter, then Markdown), saying what the model is
// built on, how it was trained, how its checkpoint scored next to chance and the base, and the
// commands that reproduce it. Everything in it is read from the checkpoint's run directory; an
// adapter outside a run gets a card that says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/base_card.h"
#include "trainer/config/run_config.h"
#include "trainer/eval/results.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

struct ModelCardFacts {
  bool merged = false;          // a merged model; otherwise a peft adapter
  std::string checkpoint;       // the exported checkpoint directory, as given
  std::string base_dir;         // the base model directory the export loaded
  models::BaseModelFacts base;  // what the base says about itself
  int64_t lora_r = 0;
  double lora_alpha = 0;
  size_t adapted_layers = 0;
  // The run the checkpoint belongs to, when it has one.
  std::optional<RunDir> run;
  std::optional<RunConfig> config;
  std::string config_text;                 // the run's config.resolved.yaml
  std::string checkpoint_name;             // e.g. "sft-2"
  std::vector<ResultRecord> mine;          // the run's evaluations of this checkpoint
  std::vector<ResultRecord> base_results;  // the base model's on the same test sets
  bool selected = false;  // the run's selection picked this checkpoint for its setting
};

// Reads what a card says from the checkpoint's run (config, results.json, selection.json) and
// the base directory. `adapter_r`, `adapter_alpha` and `adapted` describe the loaded adapter.
ModelCardFacts gather_model_card_facts(const std::string& checkpoint, const std::string& base_dir,
                                       bool merged, int64_t adapter_r, double adapter_alpha,
                                       size_t adapted);

// The card's text.
std::string model_card(const ModelCardFacts& facts);

}  // namespace citeforge::trainer
