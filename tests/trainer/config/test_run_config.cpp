#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "tests/support/minimal_config.h"
#include "tests/support/test_paths.h"
#include "trainer/config/run_config.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {
const std::string& kBase = testing::kMinimalRunConfig;

trainer::RunConfig parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return trainer::parse_run_config(text, "c.yaml", sets);
}
}  // namespace

TEST_CASE("a minimal config fills in the paper defaults", "[trainer][config]") {
  auto c = parse(kBase);
  CHECK(c.lora.r == 64);
  CHECK(c.lora.alpha == 16);
  CHECK(c.lora.dropout == Approx(0.1));
  CHECK(c.sft.lr == Approx(2e-4));
  CHECK(c.sft.beta2 == Approx(0.999));
  CHECK(c.sft.max_grad_norm == Approx(0.3));
  CHECK(c.sft.batch_size * c.sft.grad_accum == 32);
  CHECK(c.selection.test_set == "validation");  // the first in-distribution test set
  CHECK_FALSE(c.pretrain.enabled);
  CHECK(c.model.non_finite_weights == trainer::NonFiniteWeights::error);
  CHECK(parse(kBase, {"model.non_finite_weights=warn"}).model.non_finite_weights ==
        trainer::NonFiniteWeights::warn);
  CHECK_THROWS_WITH(parse(kBase, {"model.non_finite_weights=ignore"}),
                    Contains("model.non_finite_weights") && Contains("error or warn"));
}

TEST_CASE("the resolved config reads back as the same config", "[trainer][config]") {
  auto c = parse(kBase, {"sft.lr=0.001", "settings=[sft, ppo, sft+ppo]", "pretrain.epochs=2"});
  CHECK(c.sft.lr == Approx(0.001));
  CHECK(c.pretrain.enabled);
  CHECK(c.pretrain.epochs == 2);
  const std::string yaml = trainer::run_config_to_yaml(c);
  auto again = parse(yaml);
  CHECK(trainer::run_config_to_yaml(again) == yaml);
  CHECK(again.settings == std::vector<std::string>{"sft", "ppo", "sft+ppo"});
  CHECK(again.data.test_sets.size() == 2);
  CHECK(again.data.test_sets[1].ood);
}

TEST_CASE("config errors name the file, line and key path", "[trainer][config][errors]") {
  CHECK_THROWS_WITH(parse(kBase + "sft: {lerning_rate: 1}\n"),
                    Contains("c.yaml") && Contains("sft.lerning_rate") && Contains("unknown key"));
  CHECK_THROWS_WITH(parse(kBase + "sft: {epochs: three}\n"),
                    Contains("sft.epochs") && Contains("expected an integer"));
  CHECK_THROWS_WITH(parse(kBase + "lora: {r: 0}\n"), Contains("lora.r") && Contains(">= 1"));
  CHECK_THROWS_WITH(parse(kBase + "sft: {schedule: linear}\n"),
                    Contains("sft.schedule") && Contains("constant or cosine"));
  CHECK_THROWS_WITH(parse(kBase, {"data.train=/no/such/file.jsonl"}),
                    Contains("data.train") && Contains("file not found"));
  CHECK_THROWS_WITH(parse(kBase, {"settings=[sft+ppo, sft]"}),
                    Contains("settings") && Contains("list sft before it"));
  CHECK_THROWS_WITH(parse(kBase, {"settings=[dpo]"}), Contains("unknown setting 'dpo'"));
  CHECK_THROWS_WITH(parse(kBase, {"selection.test_set=nope"}),
                    Contains("selection.test_set") && Contains("not a test set"));
  CHECK_THROWS_WITH(parse(kBase, {"model.path=/tmp"}),
                    Contains("model") && Contains("exactly one"));
  CHECK_THROWS_WITH(parse(kBase, {"ppo.minibatch_size=5"}), Contains("ppo.minibatch_size"));
  CHECK_THROWS_WITH(parse(kBase + "sft: {enabled: false}\n"),
                    Contains("sft.enabled") && Contains("never read"));
  // pretrain.enabled is a real switch: false keeps the section but skips pre-training.
  CHECK_FALSE(parse(kBase + "pretrain: {epochs: 1, enabled: false}\n").pretrain.enabled);
  CHECK_THROWS_WITH(parse(kBase + "pretrain: {epochs: 1, max_examples: 10}\n"),
                    Contains("pretrain.max_examples") && Contains("not used"));
  CHECK_THROWS_WITH(parse(kBase, {"model.tokenizer=c.yaml"}),
                    Contains("model.tokenizer") && Contains("not both"));
  CHECK_THROWS_WITH(parse(kBase + "ppo: {kl_horizon: 10000}\n"),
                    Contains("ppo.kl_horizon") && Contains("kl_horizon_iterations"));
  CHECK_THROWS_WITH(parse(kBase, {"ppo.kl_horizon_iterations=0"}),
                    Contains("ppo.kl_horizon_iterations"));
  CHECK_THROWS_WITH(parse(kBase, {"ppo.lr_schedule=cosine"}),
                    Contains("ppo.lr_schedule") && Contains("constant or linear"));
  CHECK_THROWS_WITH(parse(kBase, {"ppo.max_logprob_gap=-1"}), Contains("ppo.max_logprob_gap"));
  CHECK_THROWS_WITH(parse(kBase, {"ppo.missing_eos_penalty=-0.5"}),
                    Contains("ppo.missing_eos_penalty"));
  CHECK_THROWS_WITH(parse(kBase, {"pretrain.copy_drill_tokens=1"}),
                    Contains("pretrain.copy_drill_tokens"));
  CHECK_THROWS_WITH(parse(kBase, {"sft.copy_drills=10"}),
                    Contains("sft.copy_drills") && Contains("only pre-training"));
  CHECK_THROWS_WITH(parse(kBase, {"sft.copy_drill_tokens=64"}),
                    Contains("sft.copy_drill_tokens") && Contains("only pre-training"));
  CHECK_THROWS_WITH(parse(kBase, {"data.reading_sources=footnotes"}),
                    Contains("data.reading_sources") && Contains("none or prose"));
  CHECK_THROWS_WITH(parse(kBase, {"data.holdout=5"}),
                    Contains("data.holdout") && Contains("path: holdout"));
  CHECK_THROWS_WITH(parse(kBase, {"data.test_sets=[{name: v, path: holdout}]"}),
                    Contains("data.test_sets[0].path") && Contains("needs data.holdout"));
  CHECK_THROWS_WITH(parse(kBase, {"data.holdout=2",
                                  "data.test_sets=[{name: a, path: holdout}, {name: b, "
                                  "path: holdout}]"}),
                    Contains("data.test_sets[1].path") && Contains("only one"));
  CHECK_THROWS_WITH(parse(kBase, {"data.test_sets=[{name: v, path: 'synth:test', sample: -1}]"}),
                    Contains("data.test_sets[0].sample"));
  CHECK_THROWS_WITH(parse(kBase, {"data.test_sets=[{name: 'v@rtg', path: 'synth:test'}]"}),
                    Contains("data.test_sets[0].name") && Contains("'+' or '@'"));
  CHECK_THROWS_WITH(parse(kBase, {"eval.scenarios=[rtg, rtg]"}),
                    Contains("eval.scenarios[1]") && Contains("listed twice"));
  CHECK_THROWS_WITH(parse(kBase, {"eval.scenarios=[rtg]", "eval.retrieval_k=0"}),
                    Contains("eval.retrieval_k"));
  // The retrieval depth is written back only with scenarios, so older runs' configs stay as
  // they were.
  CHECK(trainer::run_config_to_yaml(parse(kBase)).find("retrieval_k") == std::string::npos);
  CHECK(
      trainer::run_config_to_yaml(parse(kBase, {"eval.scenarios=[gtr]"})).find("retrieval_k: 3") !=
      std::string::npos);
  CHECK(parse(kBase, {"data.holdout=3", "data.test_sets=[{name: v, path: holdout, sample: 2}]"})
            .data.test_sets[0]
            .sample == 2);
  CHECK_THROWS_WITH(parse(kBase + "sft: {epochs: 1\n"), Contains("c.yaml") && Contains("line"));
  CHECK_THROWS_WITH(parse(kBase, {"noequals"}), Contains("key.path=value"));
  CHECK_THROWS_WITH(trainer::load_run_config("/no/such.yaml"), Contains("config file not found"));
}

TEST_CASE("every shipped config is named like its file and says how to run it",
          "[trainer][config]") {
  int configs = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(testing::source_path("configs"))) {
    const auto path = entry.path();
    if (path.extension() != ".yaml" || path.parent_path().filename() == "templates") continue;
    const auto relative = std::filesystem::relative(path, testing::source_path("")).string();
    INFO(relative);
    const std::string text = read_file(path.string());
    CHECK(YAML::Load(text)["name"].as<std::string>() == path.stem().string());
    CHECK(text.find("run " + relative) != std::string::npos);  // the command in the header
    ++configs;
  }
  CHECK(configs >= 8);
}

TEST_CASE("the shipped configs load", "[trainer][config]") {
  auto built = trainer::load_run_config(testing::source_path("configs/demo_built.yaml"));
  CHECK(built.model.build_enabled);
  CHECK(built.settings.size() == 3);
  // The embedded default names the GGUF that scripts/setup.sh links, relative to the root.
  const auto root = std::filesystem::current_path();
  std::filesystem::current_path(testing::source_path(""));
  auto demo = trainer::load_run_config("configs/demo.yaml");
  std::filesystem::current_path(root);
  CHECK(demo.model.path == "weights/SmolLM2-135M-Instruct.Q4_1.gguf");
  CHECK(demo.model.quantization == trainer::Quantization::nf4);
  CHECK(demo.model.chat_format == "smollm2");
  CHECK(demo.settings.size() == 3);
  // The SynSciQA configs run from the repository root (their data paths are relative to it);
  // the 7B ones name a model directory a user downloads, replaced here by a small real model.
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(testing::source_path(""));
  struct Restore {
    std::filesystem::path dir;
    ~Restore() { std::filesystem::current_path(dir); }
  } restore{previous};
  auto smoke = trainer::load_run_config("configs/synsciqa/stories260k_sft_smoke.yaml");
  CHECK(smoke.data.test_sets.at(1).ood);
  const std::string small = "model.path=" + testing::fixture_path("models/stories260K");
  for (const char* name :
       {"llama2_7b_chat_qlora", "mistral_7b_instruct_qlora", "mistral_7b_instruct_sft_ppo"}) {
    INFO(name);
    auto c = trainer::load_run_config(std::string("configs/synsciqa/") + name + ".yaml", {small});
    CHECK(c.model.quantization == trainer::Quantization::nf4);
    CHECK(c.lora.r == 64);
    CHECK(c.lora.alpha == 16);
    CHECK(c.sft.lr == 2e-4);
    CHECK(c.sft.batch_size * c.sft.grad_accum == 32);
    CHECK(c.sft.max_grad_norm == 0.3);
  }
}
