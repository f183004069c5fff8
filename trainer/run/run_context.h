// What a run knows, in three parts built one after the other by the pipeline
// (trainer/recipe/recipe.cpp), so that a step can be handed only the part it reads:
//   RunSetup   before anything is read: the resolved config, the run directory, the device and
//              dtype, the process group;
//   RunData    the examples and how prompts are written (load_data, the base model's tokenizer);
//   RunPolicy  the model being trained (load_policy).
// A stage that needs all three (SFT, PPO, evaluation) takes the RunContext that holds them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/example.h"
#include "models/llama.h"
#include "models/lora.h"
#include "models/tokenizer.h"
#include "retrieval/corpus.h"
#include "retrieval/scenarios.h"
#include "rewards/metrics.h"
#include "trainer/config/run_config.h"
#include "trainer/run/prompt_format.h"
#include "trainer/run/run_dir.h"
#include "trainer/run/run_log.h"

namespace citeforge::trainer {

struct TestSet {
  TestSetSpec spec;
  std::vector<data::Example> examples;  // already cut to eval.max_examples
  // eval.scenarios: rtg sets hold their examples with retrieved sources already; gtr sets hold
  // them as given and are answered closed-book, then cited from `corpus`.
  retrieval::Scenario scenario = retrieval::Scenario::given;
  std::shared_ptr<const retrieval::Corpus> corpus;
  std::shared_ptr<const data::PromptTemplate> closed_book;  // gtr: configs/templates/closed_book
};

struct DistRun;  // trainer/distributed/dist_run.h

struct RunSetup {
  RunConfig config;
  RunDir dir;
  RunLog log;  // metrics.jsonl and TensorBoard (run_log.h)
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kFloat32;
  DistRun* dist = nullptr;  // set when several processes run this config together
};

struct RunData {
  std::vector<data::Example> train;
  std::vector<data::Example> pretrain_reading;  // data.synth.pretrain: prompts to pre-train on
  std::vector<TestSet> test_sets;
  std::unique_ptr<models::Tokenizer> tokenizer;
  PromptFormat format;
  rewards::MetricOptions metric_options;
};

struct RunPolicy {
  std::string base_model_dir;  // HF layout
  models::LlamaForCausalLM model{nullptr};
  models::LoraConfig lora;
};

struct RunContext {
  RunSetup setup;
  RunData data;
  RunPolicy policy;
};

}  // namespace citeforge::trainer
