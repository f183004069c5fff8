// `citeforge run` end to end on the tiny config: the run directory's contents, and that a run
// killed with SIGKILL and resumed ends bit-identical to an uninterrupted one.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/eval_archive.h"
#include "trainer/run/train_checkpoint.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {
const std::string kConfig = "tests/fixtures/configs/tiny.yaml";

std::string run_args(const fs::path& out, const std::string& extra = "") {
  return "run " + kConfig + " --out " + out.string() + " " + extra;
}
}  // namespace

TEST_CASE("run: SFT on a built model fills the run directory", "[trainer][pipeline]") {
  auto out = testing::temp_dir("run-sft") / "run";
  // With a reading split: its questions, answered with the documents named in words but never
  // cited, join pre-training, and so do copy drills.
  const std::string reading =
      "--set data.synth.pretrain=24 --set data.reading_sources=prose --set pretrain.copy_drills=16 "
      "--set pretrain.copy_drill_tokens=8";
  auto r = testing::run_citeforge(run_args(out, reading));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* f :
       {"config.resolved.yaml", "metrics.jsonl", "results.json", "selection.json",
        "base_model/config.json", "base_model/model.safetensors", "base_model/tokenizer.model",
        "checkpoints/sft-1/checksums.json", "checkpoints/sft-2/trainable.safetensors",
        "checkpoints/pretrain-1/state.json", "eval/base-0/validation.h5", "eval/sft-2/test_ood.h5",
        "data/train.jsonl", "data/pretrain.jsonl"})
    CHECK(fs::exists(out / f));
  auto results = nlohmann::json::parse(read_file((out / "results.json").string()));
  CHECK(results.size() == 6);  // (base-0, sft-1, sft-2) x (validation, test_ood)
  // The Table 2 layout per test set, then one line per selected checkpoint.
  CHECK(r.output.find("Table 2, validation (in-distribution):") != std::string::npos);
  CHECK(r.output.find("Table 2, test_ood (out-of-distribution):") != std::string::npos);
  CHECK(r.output.find("| SFT    |") != std::string::npos);
  CHECK(r.output.find("sft epoch ") != std::string::npos);
  CHECK(r.output.find(": validation f1 ") != std::string::npos);
  CHECK(r.output.find("and 24 reading questions answered with the documents named in words and "
                      "16 copy drills") != std::string::npos);
  // Rerunning a finished run does no work again and changes nothing.
  const std::string before = read_file((out / "results.json").string());
  auto again = testing::run_citeforge(run_args(out, reading));
  CHECK(again.exit_code == 0);
  CHECK(read_file((out / "results.json").string()) == before);
  CHECK(again.output.find("finished before this resume") != std::string::npos);
  // The same directory with another config is refused.
  auto other = testing::run_citeforge(run_args(out, "--set sft.lr=0.5"));
  CHECK(other.exit_code != 0);
  CHECK(other.output.find("different config (it differs in ") != std::string::npos);
  CHECK(other.output.find("sft.lr") != std::string::npos);
  // Threads change speed only: a run can be resumed with another number of them.
  auto threads = testing::run_citeforge(run_args(out, reading + " --set threads=2"));
  INFO(threads.output);
  CHECK(threads.exit_code == 0);
  CHECK(read_file((out / "results.json").string()) == before);
  // So does gradient checkpointing, which a run killed for memory resumes with.
  auto checkpointing =
      testing::run_citeforge(run_args(out, reading + " --set sft.gradient_checkpointing=true --set "
                                                     "pretrain.gradient_checkpointing=true"));
  INFO(checkpointing.output);
  CHECK(checkpointing.exit_code == 0);
  CHECK(read_file((out / "results.json").string()) == before);
  // And so does the prompts' shared prefix run once or in padded batches (a run begun before it
  // was the default continues under the binary that has it on).
  auto padded = testing::run_citeforge(run_args(
      out, reading + " --set eval.share_prompt_prefix=false --set ppo.share_prompt_prefix=false"
                     " --set sft.share_prompt_prefix=false"
                     " --set pretrain.share_prompt_prefix=false"));
  INFO(padded.output);
  CHECK(padded.exit_code == 0);
  CHECK(read_file((out / "results.json").string()) == before);
}

TEST_CASE("run: SFT killed mid-epoch resumes to bit-identical adapters",
          "[trainer][pipeline][resume]") {
  auto root = testing::temp_dir("run-kill");
  auto straight =
      testing::run_citeforge(run_args(root / "straight", "--set pretrain.enabled=false"));
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);
  // 48 examples / batch 4 = 12 micro-batches = 6 steps per epoch; a checkpoint every 2 steps.
  // Killed after step 3, the run loses step 3 and redoes it from the step-2 checkpoint.
  auto killed = testing::run_citeforge(run_args(root / "killed", "--set pretrain.enabled=false"),
                                       "CITEFORGE_KILL_AT=sft:3");
  CHECK(killed.killed);
  CHECK(fs::exists(root / "killed/checkpoints/sft-last"));
  CHECK_FALSE(fs::exists(root / "killed/checkpoints/sft-1"));
  auto resumed = testing::run_citeforge(run_args(root / "killed", "--set pretrain.enabled=false"));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resuming") != std::string::npos);
  for (const char* f :
       {"checkpoints/sft-1/trainable.safetensors", "checkpoints/sft-2/trainable.safetensors",
        "checkpoints/sft-2/optimizer.safetensors"})
    CHECK(read_file((root / "straight" / f).string()) == read_file((root / "killed" / f).string()));
  CHECK(read_file((root / "straight/results.json").string()) ==
        read_file((root / "killed/results.json").string()));
}

TEST_CASE("run: PPO after SFT killed mid-run resumes to the same results",
          "[trainer][pipeline][resume][ppo]") {
  auto root = testing::temp_dir("run-ppo-kill");
  const std::string extra = "--set pretrain.enabled=false --set 'settings=[sft, ppo, sft+ppo]'";
  auto straight = testing::run_citeforge(run_args(root / "straight", extra));
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);
  auto killed =
      testing::run_citeforge(run_args(root / "killed", extra), "CITEFORGE_KILL_AT=sft+ppo:3");
  CHECK(killed.killed);
  auto resumed = testing::run_citeforge(run_args(root / "killed", extra));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(read_file((root / "straight/results.json").string()) ==
        read_file((root / "killed/results.json").string()));
  CHECK(read_file((root / "straight/checkpoints/sft+ppo-2/trainable.safetensors").string()) ==
        read_file((root / "killed/checkpoints/sft+ppo-2/trainable.safetensors").string()));
  for (const char* f : {"tables", "selection.json", "eval/ppo-2/validation.h5"})
    CHECK(fs::exists(root / "straight" / f));
  // Each phase of an iteration is said as it ends, not only the iteration's summary.
  for (const char* phase :
       {"[ppo] iteration 2/4: rollout of ", "[sft+ppo] iteration 4/4: rollout of ",
        "iteration 1/4: log-probs, reference and values of ", "iteration 3/4: minibatch update 1/"})
    CHECK(straight.output.find(phase) != std::string::npos);

  // What a PPO user looks for is in the run's own metrics.jsonl, every logged iteration of
  // both PPO settings, and its curves are drawn (scripts/setup.sh installs gnuplot).
  int ppo_records = 0;
  std::istringstream lines(read_file((root / "straight/metrics.jsonl").string()));
  for (std::string line; std::getline(lines, line);) {
    auto record = nlohmann::json::parse(line);
    const std::string stage = record.value("stage", "");
    if ((stage != "ppo" && stage != "sft+ppo") || record.contains("event")) continue;
    ++ppo_records;
    for (const char* key : {"reward_mean",
                            "precision_mean",
                            "recall_mean",
                            "truncated_share",
                            "kl_k1",
                            "kl_k3",
                            "entropy",
                            "clip_fraction",
                            "value_clip_fraction",
                            "approx_kl",
                            "explained_variance",
                            "answer_words",
                            "return_mean",
                            "return_std",
                            "advantage_mean",
                            "advantage_std",
                            "lr",
                            "tokens_per_s",
                            "beta",
                            "logprob_gap_max"}) {
      INFO(stage << " iteration " << record.value("iteration", -1) << " lacks " << key);
      CHECK(record.contains(key));
    }
  }
  CHECK(ppo_records == 8);  // 4 iterations of each PPO setting, logged every iteration
  for (const char* f : {"plots/ppo_reward.png", "plots/ppo_kl.png"})
    CHECK(fs::exists(root / "straight" / f));
}

TEST_CASE("run: a non-finite loss stops training, names the step and keeps the last checkpoint",
          "[trainer][pipeline][fault]") {
  auto root = testing::temp_dir("run-nan");
  for (const auto& [stage, settings] :
       {std::pair<std::string, std::string>{"ppo", "[ppo]"}, {"sft", "[sft]"}}) {
    INFO(stage);
    const auto out = root / stage;
    auto r = testing::run_citeforge(
        run_args(out, "--set pretrain.enabled=false --set 'settings=" + settings + "'"),
        "CITEFORGE_NAN_AT=" + stage + ":3");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("non-finite loss") != std::string::npos);
    CHECK(r.output.find(stage == "ppo" ? "iteration 3" : "step 3") != std::string::npos);
    // The checkpoint before the failure is whole and says where training stood.
    const auto last = (out / "checkpoints" / (stage + "-last")).string();
    trainer::verify_checkpoint(last);
    auto state = nlohmann::json::parse(read_file(last + "/state.json"));
    CHECK(state["global_step"] == 2);
  }
}

TEST_CASE("run: a device out of memory is one line naming the stage, batch and lengths",
          "[trainer][pipeline][fault]") {
  auto root = testing::temp_dir("run-oom");
  // CITEFORGE_OOM_AT raises the error PyTorch's CUDA allocator raises, stack trace and all.
  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"eval:1", "[sft]", "eval base-0 validation: answering a batch of 8 prompts of up to "},
      {"sft:2", "[sft]", "sft epoch 1 step 2: a micro-batch of 4 sequences x "},
      {"ppo/rollout:2", "[ppo]", "ppo iteration 2: the rollout of 4 prompts with 8 new tokens"},
      {"ppo/update:1", "[ppo]",
       "ppo iteration 1: the update in minibatches of 2 answers, the "
       "longest prompt + answer "}};
  int k = 0;
  for (const auto& [point, settings, what] : cases) {
    INFO(point);
    auto r = testing::run_citeforge(
        run_args(root / std::to_string(k++),
                 "--set pretrain.enabled=false --set 'settings=" + settings + "'"),
        "CITEFORGE_OOM_AT=" + point);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    const auto at = r.output.find("citeforge run: error: " + what);
    REQUIRE(at != std::string::npos);
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    CHECK(line.find(": out of memory (CUDA out of memory. Tried to allocate 2.00 GiB.") !=
          std::string::npos);
    CHECK(line.find("this process has 78.12 GiB memory in use.") != std::string::npos);
    CHECK(r.output.find("Exception raised from") == std::string::npos);
    CHECK(r.output.find("frame #") == std::string::npos);
  }
}

TEST_CASE("the SynSciQA SFT config runs on stories260K, prompts cut to its context",
          "[trainer][pipeline][synsciqa]") {
  auto out = testing::temp_dir("run-synsciqa") / "run";
  auto r = testing::run_citeforge("run configs/synsciqa/stories260k_sft_smoke.yaml --out " +
                                  out.string() +
                                  " --set sft.max_examples=8 --set sft.epochs=1"
                                  " --set eval.max_examples=4");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("imported 669 SynSciQA examples") != std::string::npos);
  CHECK(r.output.find("their middle (sources) was cut") != std::string::npos);
  auto results = nlohmann::json::parse(read_file((out / "results.json").string()));
  CHECK(results.size() == 4);  // (base-0, sft-1) x (synsciqa_test, gensearch_test)
  CHECK(fs::exists(out / "eval/sft-1/gensearch_test.h5"));
}

TEST_CASE("a run holds a seeded validation split out of training and samples a test set",
          "[trainer][pipeline][synsciqa]") {
  auto run = [](const fs::path& out) {
    return testing::run_citeforge(
        "run configs/synsciqa/stories260k_sft_smoke.yaml --out " + out.string() +
        " --set data.holdout=8 --set 'data.test_sets=[{name: validation, path: holdout}, {name: "
        "gensearch_test, path: datasets/synsciqa/GenSearch_test.csv, ood: true, sample: 6}]'"
        " --set selection.test_set=validation --set sft.max_examples=8 --set sft.epochs=1");
  };
  const auto dir = testing::temp_dir("run-holdout");
  auto r = run(dir / "a");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // 669 SynSciQA++ examples: 8 held out, 661 left to train on.
  CHECK(r.output.find("data: train 661, validation 8 (held out of train), gensearch_test 6 "
                      "(seeded sample)") != std::string::npos);
  const auto held = read_file((dir / "a/data/holdout.jsonl").string());
  CHECK(std::count(held.begin(), held.end(), '\n') == 8);
  auto results = nlohmann::json::parse(read_file((dir / "a/results.json").string()));
  CHECK(results.size() == 4);  // (base-0, sft-1) x (validation, gensearch_test)
  // The split and the sample come from the seed: a second run draws the same ones.
  auto again = run(dir / "b");
  REQUIRE(again.exit_code == 0);
  CHECK(read_file((dir / "b/data/holdout.jsonl").string()) == held);
  CHECK(read_file((dir / "b/results.json").string()) ==
        read_file((dir / "a/results.json").string()));
}

TEST_CASE("the built-model demo config runs end to end, with chance references",
          "[trainer][pipeline][demo]") {
  auto out = testing::temp_dir("run-demo-built") / "run";
  auto r = testing::run_citeforge("run configs/demo_built.yaml --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* f : {"base_model/tokenizer_config.json", "selection.json",
                        "tables/table2_test.md", "eval/sft+ppo-2/test_ood.h5"})
    CHECK(fs::exists(out / f));
  auto results = nlohmann::json::parse(read_file((out / "results.json").string()));
  // base-0, sft-1, sft-2, ppo-1, ppo-2, sft+ppo-1, sft+ppo-2 on three test sets.
  CHECK(results.size() == 21);
  for (const auto& record : results)
    for (const char* m : {"chance_precision", "chance_recall", "chance_f1", "chance_reward"})
      CHECK(record["metrics"].contains(m));
  CHECK(r.output.find("| Tuning  | Epoch |                F1 | F1 chance |") != std::string::npos);
  fs::remove_all(out.parent_path());
}

TEST_CASE("run: an evaluation killed between batches resumes from its partial answers",
          "[trainer][pipeline][resume]") {
  auto root = testing::temp_dir("run-eval-kill");
  const std::string extra =
      "--set pretrain.enabled=false --set sft.epochs=1 --set eval.batch_size=3";
  auto straight = testing::run_citeforge(run_args(root / "straight", extra));
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);
  // Killed after the first batch of 3 answers of the base model's validation set.
  auto killed =
      testing::run_citeforge(run_args(root / "killed", extra), "CITEFORGE_KILL_AT=eval:1");
  CHECK(killed.killed);
  const auto partial = root / "killed/eval/base-0/validation.partial.jsonl";
  REQUIRE(fs::exists(partial));
  CHECK_FALSE(fs::exists(root / "killed/eval/base-0/validation.h5"));
  auto resumed = testing::run_citeforge(run_args(root / "killed", extra));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resuming: 3 of 8 answers kept") != std::string::npos);
  CHECK_FALSE(fs::exists(partial));  // removed once the archive is written
  CHECK(read_file((root / "straight/results.json").string()) ==
        read_file((root / "killed/results.json").string()));
}

TEST_CASE(
    "run: eval.corrections scores every evaluation's answers corrected, as their own test "
    "sets, and can be added to an existing run",
    "[trainer][pipeline][citefix]") {
  auto root = testing::temp_dir("run-corrections");
  const std::string extra = "--set pretrain.enabled=false --set sft.epochs=1";
  auto plain = testing::run_citeforge(run_args(root / "run", extra));
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  const std::string with = extra + " --set 'eval.corrections=[keyword, attention]'";
  auto corrected = testing::run_citeforge(run_args(root / "run", with));
  INFO(corrected.output);
  REQUIRE(corrected.exit_code == 0);
  CHECK(corrected.output.find("new evaluations are added") != std::string::npos);
  // The base model is evaluated on every run, and the last checkpoint's evaluation is checked
  // again on resuming, each with its own weights loaded: their answers get the new corrections
  // from the archive.
  for (const char* f : {"eval/base-0/validation+keyword.h5", "eval/base-0/test_ood+attention.h5",
                        "eval/sft-1/validation+keyword.h5"})
    CHECK(fs::exists(root / "run" / f));
  CHECK(corrected.output.find("validation+attention") != std::string::npos);
  CHECK(corrected.output.find("ms per answer") != std::string::npos);

  // From the start, every evaluation is corrected; the tables name the corrected test sets.
  auto fresh = testing::run_citeforge(run_args(root / "fresh", with));
  INFO(fresh.output);
  REQUIRE(fresh.exit_code == 0);
  for (const char* f : {"eval/sft-1/validation+keyword.h5", "eval/sft-1/test_ood+attention.h5"})
    CHECK(fs::exists(root / "fresh" / f));
  auto results = nlohmann::json::parse(read_file((root / "fresh/results.json").string()));
  CHECK(results.size() == 12);  // (base-0, sft-1) x (2 test sets) x (plain, keyword, attention)
  CHECK(fresh.output.find("Table 2, test_ood+keyword") != std::string::npos);

  auto unknown =
      testing::run_citeforge(run_args(root / "bad", extra + " --set 'eval.corrections=[bm42]'"));
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.output.find("eval.corrections[0]") != std::string::npos);
}

TEST_CASE(
    "run: eval.baselines re-cites the base model's answers by rule, as rows of Table 2, and every "
    "result carries its paired tests",
    "[trainer][pipeline][baselines][paired]") {
  auto root = testing::temp_dir("run-baselines");
  auto r = testing::run_citeforge(run_args(root / "run",
                                           "--set pretrain.enabled=false --set sft.epochs=1 --set "
                                           "'eval.baselines=[cite_bm25, cite_all, cite_first]'"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The base model's answers only: a rule needs no trained model.
  for (const char* f : {"eval/base-0/validation+cite_bm25.h5", "eval/base-0/test_ood+cite_all.h5",
                        "eval/base-0/test_ood+cite_first.h5"})
    CHECK(fs::exists(root / "run" / f));
  CHECK_FALSE(fs::exists(root / "run/eval/sft-1/validation+cite_bm25.h5"));
  // (base-0: 2 sets x 4) + (sft-1: 2 sets).
  auto results = nlohmann::json::parse(read_file((root / "run/results.json").string()));
  CHECK(results.size() == 10);
  for (const auto& record : results) {
    INFO(record["stage"] << " " << record["test_set"]);
    CHECK(record["paired"]["chance"].contains("f1"));
    const std::string test_set = record["test_set"];
    const bool baseline = test_set.find('+') != std::string::npos;
    CHECK(record["paired"].contains("base") == (record["stage"] == "sft"));
    CHECK(record["paired"].contains("uncorrected") == baseline);
  }
  // The rows sit under the base row of their test set's Table 2, with their paired tests; they
  // are not test sets of their own.
  const std::string table = read_file((root / "run/tables/table2_test_ood.md").string());
  CHECK(table.find("| Base + cite_bm25 ") != std::string::npos);
  CHECK(table.find("Holm-adjusted over the") != std::string::npos);
  CHECK_FALSE(fs::exists(root / "run/tables/table2_test_ood+cite_all.md"));
  CHECK(r.output.find("| Base + cite_first ") != std::string::npos);

  auto unknown = testing::run_citeforge(
      run_args(root / "bad", "--set pretrain.enabled=false --set 'eval.baselines=[cite_most]'"));
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.output.find("eval.baselines[0]") != std::string::npos);
}

TEST_CASE(
    "run --seeds runs the config once per training seed on the same questions, and --worlds once "
    "per synthetic world, then summarises across seeds",
    "[trainer][pipeline][seeds]") {
  auto root = testing::temp_dir("run-seeds");
  const std::string extra = "--set pretrain.enabled=false --set sft.epochs=1 --seeds 1,2";
  auto r = testing::run_citeforge(run_args(root / "sweep", extra));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("seed sweep: run 2 of 2, world 3, seed 2") != std::string::npos);
  for (const char* f : {"seed1/results.json", "seed2/selection.json", "seeds.md", "seeds.json"})
    CHECK(fs::exists(root / "sweep" / f));
  // The same questions for both seeds, each seed its own training seed.
  CHECK(read_file((root / "sweep/seed1/data/validation.jsonl").string()) ==
        read_file((root / "sweep/seed2/data/validation.jsonl").string()));
  const std::string resolved = read_file((root / "sweep/seed2/config.resolved.yaml").string());
  CHECK(resolved.find("seed: 2") != std::string::npos);
  CHECK(resolved.find("split_seed: 7") != std::string::npos);  // tiny.yaml's own seed
  const std::string summary = read_file((root / "sweep/seeds.md").string());
  CHECK(summary.find("2 runs: training seeds 1, 2; synthetic worlds (data.synth.seed) 3") !=
        std::string::npos);
  CHECK(summary.find("## world 3, validation") != std::string::npos);
  CHECK(summary.find("| SFT     |     2 |") != std::string::npos);
  auto json = nlohmann::json::parse(read_file((root / "sweep/seeds.json").string()));
  REQUIRE(json.size() >= 4);  // (base, sft) x (validation, test_ood)
  CHECK(json[0]["seeds"].size() == 2);
  CHECK(json[0]["metrics"]["f1"]["values"].size() == 2);

  auto worlds = testing::run_citeforge(run_args(
      root / "worlds", "--set pretrain.enabled=false --set sft.epochs=1 --seeds 1 --worlds 3,4"));
  INFO(worlds.output);
  REQUIRE(worlds.exit_code == 0);
  CHECK(read_file((root / "worlds/world3/seed1/data/validation.jsonl").string()) !=
        read_file((root / "worlds/world4/seed1/data/validation.jsonl").string()));
  CHECK(read_file((root / "worlds/seeds.md").string()).find("## world 4, test_ood") !=
        std::string::npos);

  for (const auto& [flags, message] :
       std::vector<std::pair<std::string, std::string>>{{"--worlds 3", "--worlds needs --seeds"},
                                                        {"--seeds 1,x", "not a list of integers"},
                                                        {"--seeds 2,2", "lists 2 twice"}}) {
    auto bad = testing::run_citeforge(run_args(root / "bad", flags));
    INFO(bad.output);
    CHECK(bad.exit_code != 0);
    CHECK(bad.output.find(message) != std::string::npos);
  }
}

TEST_CASE(
    "run: eval.scenarios evaluates the test sets again with retrieved passages (RTG) and "
    "closed-book answers cited by retrieval (GTR), and can be added to an existing run",
    "[trainer][pipeline][retrieval]") {
  auto root = testing::temp_dir("run-scenarios");
  const std::string extra = "--set pretrain.enabled=false --set sft.epochs=1";
  auto plain = testing::run_citeforge(run_args(root / "run", extra));
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  const std::string with = extra + " --set 'eval.scenarios=[rtg, gtr]' --set eval.retrieval_k=2";
  auto added = testing::run_citeforge(run_args(root / "run", with));
  INFO(added.output);
  REQUIRE(added.exit_code == 0);
  CHECK(added.output.find("new evaluations are added") != std::string::npos);
  // The selection's test set keeps its given documents only; the others get both scenarios.
  for (const char* f : {"eval/base-0/test_ood@rtg.h5", "eval/base-0/test_ood@gtr.h5",
                        "eval/sft-1/test_ood@rtg.h5", "eval/sft-1/test_ood@gtr.h5"})
    CHECK(fs::exists(root / "run" / f));
  CHECK_FALSE(fs::exists(root / "run/eval/base-0/validation@rtg.h5"));
  CHECK(added.output.find("test_ood@rtg 8 (BM25 top 2 of") != std::string::npos);
  CHECK(added.output.find("sentences found no passage") != std::string::npos);
  CHECK(added.output.find("Table 2, test_ood@gtr (out-of-distribution, generate-then-retrieve)") !=
        std::string::npos);
  auto results = nlohmann::json::parse(read_file((root / "run/results.json").string()));
  CHECK(results.size() == 8);  // (base-0, sft-1) x (validation, test_ood, @rtg, @gtr)
  // Once scenarios are there, their retrieval depth is part of the run.
  auto deeper = testing::run_citeforge(run_args(
      root / "run", extra + " --set 'eval.scenarios=[rtg, gtr]' --set eval.retrieval_k=3"));
  CHECK(deeper.exit_code != 0);
  CHECK(deeper.output.find("differs in eval.retrieval_k") != std::string::npos);

  auto unknown =
      testing::run_citeforge(run_args(root / "bad", extra + " --set 'eval.scenarios=[rag]'"));
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.output.find("eval.scenarios[0]") != std::string::npos);
}

TEST_CASE(
    "run: eval.attributability_threshold adds attributability, judged by the base model, "
    "to every evaluation and to Table 1",
    "[trainer][pipeline][attributability]") {
  auto root = testing::temp_dir("run-attributability");
  const std::string extra = "--set pretrain.enabled=false --set sft.epochs=1";
  auto plain = testing::run_citeforge(run_args(root / "run", extra));
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  // Added to a finished run: the evaluations done again on resuming (the base model's, the
  // last checkpoint's) have it only if they had not been archived; a fresh run has it all.
  auto fresh = testing::run_citeforge(
      run_args(root / "fresh", extra + " --set eval.attributability_threshold=-0.5"));
  INFO(fresh.output);
  REQUIRE(fresh.exit_code == 0);
  CHECK(fresh.output.find("[attributability base-0 validation]") != std::string::npos);
  auto results = nlohmann::json::parse(read_file((root / "fresh/results.json").string()));
  REQUIRE(results.size() == 4);
  for (const auto& r : results) {
    INFO(r.dump());
    CHECK(r["metrics"].contains("attributability"));
    CHECK(r["metrics"].contains("chance_attributability"));
  }
  const std::string table1 = read_file((root / "fresh/tables/table1_source_quality.md").string());
  CHECK(table1.find("attr. chance") != std::string::npos);
  const std::string plain_table1 =
      read_file((root / "run/tables/table1_source_quality.md").string());
  CHECK(plain_table1.find("attr.") == std::string::npos);
  // The threshold can be added to an existing run, and once both have one it must match.
  auto added = testing::run_citeforge(
      run_args(root / "run", extra + " --set eval.attributability_threshold=-0.5"));
  CHECK(added.exit_code == 0);
  auto changed = testing::run_citeforge(
      run_args(root / "run", extra + " --set eval.attributability_threshold=0.5"));
  CHECK(changed.exit_code != 0);
  CHECK(changed.output.find("eval.attributability_threshold") != std::string::npos);
}

TEST_CASE("run: evaluation that prefills the prompts' shared prefix once gives the same answers",
          "[trainer][pipeline][prefix]") {
  // eval.share_prompt_prefix changes how the prompts are prefilled (their common start once, the
  // rests packed without padding on a CPU), not what is answered: after one SFT epoch the greedy
  // answers of every evaluation, and so every score, are those of the padded batches.
  const auto dir = testing::temp_dir("run-eval-prefix");
  const std::string sft = "--set sft.epochs=1 ";
  auto padded = testing::run_citeforge(
      run_args(dir / "padded", sft + "--set eval.share_prompt_prefix=false"));
  INFO(padded.output);
  REQUIRE(padded.exit_code == 0);
  auto shared = testing::run_citeforge(run_args(dir / "shared", sft));  // on by default
  INFO(shared.output);
  REQUIRE(shared.exit_code == 0);
  const auto resolved = [&](const char* run) {
    return read_file((dir / run / "config.resolved.yaml").string());
  };
  CHECK(resolved("shared").find("share_prompt_prefix: false") == std::string::npos);
  CHECK(resolved("padded").find("share_prompt_prefix: false") != std::string::npos);
  size_t answer_bytes = 0;
  for (const char* eval : {"base-0", "sft-1"})
    for (const char* test : {"validation", "test_ood"}) {
      const auto name = std::string("eval/") + eval + "/" + test + ".h5";
      const auto a = trainer::read_eval_archive((dir / "padded" / name).string());
      const auto b = trainer::read_eval_archive((dir / "shared" / name).string());
      INFO(name);
      CHECK(b.generations == a.generations);
      for (const auto& g : a.generations) answer_bytes += g.size();
    }
  CHECK(answer_bytes > 200);  // answers of some length, not all empty
  CHECK(read_file((dir / "shared" / "results.json").string()) ==
        read_file((dir / "padded" / "results.json").string()));
  fs::remove_all(dir);
}
