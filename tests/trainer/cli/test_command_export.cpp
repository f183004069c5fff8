// citeforge export and generate --adapter on a checkpoint of a real (tiny) run: the peft export
// and the merged model decode exactly what the checkpoint decodes, and bad input is a named
// error.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file_io.h"
#include "models/base_card.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/results.h"
#include "trainer/report/text_table.h"

using citeforge::testing::run_citeforge;
namespace fs = std::filesystem;

namespace {

// The continuation: the output without the "[generate] ..." report lines.
std::string generated(const std::string& args) {
  auto r = run_citeforge(args);
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::string text, line;
  std::istringstream in(r.output);
  while (std::getline(in, line))
    if (line.rfind("[generate]", 0) != 0) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("export peft and merged decode like the checkpoint", "[trainer][cli][export]") {
  auto root = citeforge::testing::temp_dir("export");
  auto run = run_citeforge("run tests/fixtures/configs/tiny.yaml --out " + (root / "run").string() +
                           " --set pretrain.enabled=false --set sft.epochs=1 --set sft.lr=0.01");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto base = (root / "run/base_model").string();
  const auto checkpoint = (root / "run/checkpoints/sft-1").string();
  CHECK(fs::exists(checkpoint + "/adapter_model.safetensors"));
  CHECK(fs::exists(checkpoint + "/adapter_config.json"));
  const std::string prompt =
      " --prompt 'Question: What does the bird eat?' --greedy "
      "--max-new-tokens 12";
  const std::string from_checkpoint =
      generated("generate --model " + base + " --adapter " + checkpoint + prompt);
  CHECK(from_checkpoint != generated("generate --model " + base + prompt));  // the adapter matters

  auto peft = run_citeforge("export --checkpoint " + checkpoint + " --format peft --out " +
                            (root / "peft").string());
  INFO(peft.output);
  REQUIRE(peft.exit_code == 0);
  // A peft folder names no run, so generate would quantise its base to NF4 on a CPU; the
  // checkpoint's run kept it dense (tiny.yaml), and like is compared with like.
  const std::string dense = " --quantization none";
  CHECK(generated("generate --model " + base + " --adapter " + (root / "peft").string() + dense +
                  prompt) == from_checkpoint);
  // A second export to the same place is refused rather than mixed into the first; the work
  // folder a killed export left beside it is removed by the next export there.
  auto again = run_citeforge("export --checkpoint " + checkpoint + " --format peft --out " +
                             (root / "peft").string());
  CHECK(again.exit_code == 1);
  CHECK(again.output.find("exists and is not empty") != std::string::npos);
  pid_t gone = 4194000;
  while (::kill(gone, 0) == 0 || errno != ESRCH) --gone;
  const auto abandoned = root / (".peft2.exporting-" + std::to_string(gone));
  fs::create_directories(abandoned);
  std::ofstream(abandoned / "adapter_model.safetensors") << "half";
  auto after_kill = run_citeforge("export --checkpoint " + checkpoint + " --format peft --out " +
                                  (root / "peft2").string());
  CHECK(after_kill.exit_code == 0);
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(fs::exists(root / "peft2" / "adapter_model.safetensors"));
  for (const auto& entry : fs::directory_iterator(root))
    CHECK(entry.path().filename().string().find(".exporting-") == std::string::npos);
  auto merged = run_citeforge("export --checkpoint " + checkpoint + " --format merged --out " +
                              (root / "merged").string());
  REQUIRE(merged.exit_code == 0);
  CHECK(fs::exists(root / "merged/tokenizer.model"));
  CHECK(generated("generate --model " + (root / "merged").string() + dense + prompt) ==
        from_checkpoint);

  // A corrupted checkpoint is refused before anything is exported.
  {
    std::fstream f(checkpoint + "/adapter_model.safetensors",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-2, std::ios::end);
    f.put('\x55');
  }
  auto bad = run_citeforge("export --checkpoint " + checkpoint + " --format peft --out " +
                           (root / "bad").string());
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("adapter_model.safetensors") != std::string::npos);
  CHECK(bad.output.find("checksum mismatch") != std::string::npos);
  auto wrong = run_citeforge("export --checkpoint " + checkpoint + " --format onnx --out x");
  CHECK(wrong.exit_code == 1);
}

TEST_CASE("export writes a model card with the run's training and scores",
          "[trainer][cli][export][card]") {
  auto root = citeforge::testing::temp_dir("export_card");
  auto run = run_citeforge("run tests/fixtures/configs/tiny.yaml --out " + (root / "run").string() +
                           " --set pretrain.enabled=false --set sft.epochs=1");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto checkpoint = (root / "run/checkpoints/sft-1").string();
  for (const std::string format : {"peft", "merged"}) {
    INFO(format);
    const auto out = root / format;
    auto exported = run_citeforge("export --checkpoint " + checkpoint + " --format " + format +
                                  " --out " + out.string());
    INFO(exported.output);
    REQUIRE(exported.exit_code == 0);
    const std::string card = citeforge::read_file((out / "README.md").string());
    INFO(card);
    const auto meta = YAML::Load(citeforge::models::front_matter(card));
    // The run builds its base, which names no licence: the hub's "other" form says so.
    CHECK(meta["library_name"].as<std::string>() == (format == "peft" ? "peft" : "transformers"));
    CHECK(meta["base_model"].as<std::string>() == "base_model");
    CHECK(meta["license"].as<std::string>() == "other");
    CHECK(meta["license_name"].as<std::string>() == "license of base_model");
    CHECK(meta["tags"][0].as<std::string>() == "citeforge");
    CHECK(meta["datasets"][0].as<std::string>().find("synthetic world") != std::string::npos);
    CHECK(card.find("Checkpoint `sft-1`") != std::string::npos);
    CHECK(card.find("citeforge run " + (root / "run/config.resolved.yaml").string()) !=
          std::string::npos);
    // Every test set's F1 row carries results.json's numbers for this checkpoint.
    int rows = 0;
    for (const auto& r : citeforge::trainer::read_results((root / "run/results.json").string())) {
      if (r.checkpoint != "checkpoints/sft-1" || r.test_set.find('+') != std::string::npos)
        continue;
      const auto* f1 = citeforge::trainer::find_metric(r, "f1");
      REQUIRE(f1);
      CHECK(card.find("| " + r.test_set) != std::string::npos);
      CHECK(card.find(citeforge::trainer::percent_with_interval(*f1)) != std::string::npos);
      ++rows;
    }
    CHECK(rows >= 2);
  }

  // The built base's SentencePiece tokenizer has no GGUF form here yet: one line, no file.
  auto gguf = run_citeforge("export --checkpoint " + checkpoint + " --format gguf --out " +
                            (root / "m.gguf").string());
  CHECK(gguf.exit_code == 1);
  CHECK(gguf.output.find("SentencePiece is not exported yet") != std::string::npos);
  CHECK_FALSE(fs::exists(root / "m.gguf"));

  // An adapter outside a run: a card that says it knows nothing of its training.
  fs::copy(checkpoint, root / "loose");
  auto loose = run_citeforge("export --checkpoint " + (root / "loose").string() +
                             " --format peft --out " + (root / "loose_out").string() + " --model " +
                             (root / "run/base_model").string());
  INFO(loose.output);
  REQUIRE(loose.exit_code == 0);
  const std::string card = citeforge::read_file((root / "loose_out/README.md").string());
  CHECK(card.find("not inside a citeforge run directory") != std::string::npos);
  CHECK(card.find("## Evaluation") == std::string::npos);
}
