#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/file_io.h"
#include "data/example.h"
#include "data/example_stats.h"
#include "tests/support/test_paths.h"
#include "trainer/cli/commands.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

// Runs `citeforge data ARGS...` in-process and returns what it wrote to std::cout.
std::string run_data(const trainer::Args& args) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    int rc = trainer::command_data(args);
    std::cout.rdbuf(old);
    REQUIRE(rc == 0);
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  return captured.str();
}

std::string error_of(const trainer::Args& args) {
  try {
    run_data(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string write(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

// A small synthetic data set written by the command itself.
fs::path small_synth(const fs::path& dir) {
  const auto config =
      write(dir / "synth.yaml", "seed: 99\ntrain: 30\nvalidation: 6\ntest: 6\ntest_ood: 9\n");
  run_data({"synth", "--seed", "3", "--config", config, "--out", (dir / "world").string()});
  return dir / "world";
}

}  // namespace

TEST_CASE("data synth writes the splits with the sizes of its config and the seed of its flag") {
  auto dir = testing::temp_dir("cmd-synth");
  auto world = small_synth(dir);
  CHECK(data::read_examples_jsonl((world / "train.jsonl").string()).size() == 30);
  CHECK(data::read_examples_jsonl((world / "validation.jsonl").string()).size() == 6);
  CHECK(data::read_examples_jsonl((world / "test.jsonl").string()).size() == 6);
  auto ood = data::read_examples_jsonl((world / "test_ood.jsonl").string());
  CHECK(ood.size() == 9);
  CHECK(ood[0].origin == "synth_ood");
  const std::string resolved = read_file((world / "synth_config.yaml").string());
  CHECK(resolved.find("seed: 3\n") != std::string::npos);  // --seed overrides the config's 99
  CHECK(resolved.find("train: 30\n") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("data stats reports counts, sources per label and word lengths") {
  auto dir = testing::temp_dir("cmd-stats");
  data::Example a, b;
  a.id = "a";
  a.split = "test";
  a.origin = "toy";
  a.question = "Which one is red?";                                                // 4 words
  a.sources = {{1, "n1", "The apple is red.", data::Label::relevant},              // 4 words
               {2, "n2", "Grass is green.", data::Label::irrelevant},              // 3 words
               {3, "n3", "Blood and roses are red too.", data::Label::relevant}};  // 6 words
  a.references = {{"teacher", "The apple [1]."}};
  b.id = "b";
  b.split = "test";
  b.origin = "toy";
  b.question = "Why?";
  b.sources = {{1, "n1", "Nothing here.", data::Label::seemingly_relevant}};  // 2 words
  b.references = {{"teacher", "None of the documents answers this question."}, {"gold", "No."}};
  const auto path = (dir / "examples.jsonl").string();
  data::write_examples_jsonl(path, {a, b});

  const std::string text = run_data({"stats", path});
  CHECK_THAT(text, Catch::Contains("examples: 2\n"));
  CHECK_THAT(text, Catch::Contains("splits: test 2"));
  CHECK_THAT(text, Catch::Contains("references: gold 1, teacher 2"));
  CHECK_THAT(text, Catch::Contains("examples without a relevant source: 1"));
  CHECK_THAT(text, Catch::Contains("relevant per example"));
  CHECK_THAT(text, Catch::Contains("words per reference 'teacher'"));

  auto json = nlohmann::json::parse(run_data({"stats", path, "--json"}));
  CHECK(json["examples"] == 2);
  CHECK(json["sources_per_example"]["mean"].get<double>() == Approx(2.0));
  CHECK(json["sources_per_example"]["min"].get<double>() == 1);
  CHECK(json["sources_per_example"]["max"].get<double>() == 3);
  CHECK(json["per_example"]["relevant"]["mean"].get<double>() == Approx(1.0));
  CHECK(json["per_example"]["relevant"]["max"].get<double>() == 2);
  CHECK(json["words_per_source"]["mean"].get<double>() == Approx((4 + 3 + 6 + 2) / 4.0));
  CHECK(json["words_per_source"]["min"].get<double>() == 2);
  CHECK(json["words_per_question"]["max"].get<double>() == 4);
  CHECK(json["words_per_reference"]["teacher"]["mean"].get<double>() == Approx((3 + 7) / 2.0));

  CHECK_THAT(error_of({"stats"}), Catch::Contains("expected one example file"));
  CHECK_THAT(error_of({"stats", (dir / "missing.jsonl").string()}),
             Catch::Contains("missing.jsonl"));
  fs::remove_all(dir);
}

TEST_CASE("data stats on a synthetic split reflects its configuration") {
  auto dir = testing::temp_dir("cmd-stats-synth");
  auto world = small_synth(dir);
  auto json =
      nlohmann::json::parse(run_data({"stats", (world / "train.jsonl").string(), "--json"}));
  CHECK(json["examples"] == 30);
  CHECK(json["per_example"]["irrelevant"]["min"].get<double>() == 2);
  CHECK(json["per_example"]["irrelevant"]["max"].get<double>() == 2);
  CHECK(json["per_example"]["seemingly_relevant"]["mean"].get<double>() == Approx(2.0));
  CHECK(json["per_example"]["relevant"]["max"].get<double>() <= 3);
  CHECK(json["words_per_source"]["max"].get<double>() <= 16);
  fs::remove_all(dir);
}

TEST_CASE("data render prints the prompt of an example with its references") {
  auto dir = testing::temp_dir("cmd-render");
  auto world = small_synth(dir);
  const std::string train = (world / "train.jsonl").string();
  const std::string templates = testing::source_path("configs/templates");
  const std::string text =
      run_data({"render", train, "--templates", templates, "--id", "synth-train-00002"});
  CHECK_THAT(text, Catch::StartsWith("### synth-train-00002\n"));
  CHECK_THAT(text, Catch::Contains("\n[1]: "));
  CHECK_THAT(text, Catch::Contains("\nQuestion: "));
  CHECK_THAT(text, Catch::Contains("--- reference 'teacher': "));
  const std::string named = run_data(
      {"render", train, "--templates", templates, "--template", "evidence_named", "--limit", "2"});
  CHECK_THAT(named, Catch::Contains("[BEGIN OF SOURCES]"));
  CHECK_THAT(named, Catch::Contains("### synth-train-00001"));
  CHECK_THAT(error_of({"render", train, "--templates", templates, "--id", "nope"}),
             Catch::Contains("no example with id 'nope'"));
  fs::remove_all(dir);
}

TEST_CASE("data import rage writes the mixture examples") {
  auto dir = testing::temp_dir("cmd-rage");
  const auto corpus = write(dir / "corpus.jsonl",
                            "{\"_id\": \"d1\", \"title\": \"A\", \"text\": \"alpha river\"}\n"
                            "{\"_id\": \"d2\", \"title\": \"B\", \"text\": \"beta river\"}\n"
                            "{\"_id\": \"d3\", \"title\": \"C\", \"text\": \"gamma lake\"}\n"
                            "{\"_id\": \"d4\", \"title\": \"D\", \"text\": \"delta sea\"}\n");
  const auto queries =
      write(dir / "queries.jsonl", "{\"_id\": \"q1\", \"text\": \"alpha river?\"}\n");
  const auto qrels = write(dir / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n");
  const auto out = (dir / "out.jsonl").string();
  run_data({"import", "rage", "--corpus", corpus, "--queries", queries, "--relevant", qrels,
            "--seed", "5", "--num-irrelevant", "1", "--num-seemingly-relevant", "1", "--origin",
            "toy", "--out", out});
  auto examples = data::read_examples_jsonl(out);
  REQUIRE(examples.size() == 1);
  CHECK(examples[0].id == "toy-q1");
  CHECK(examples[0].sources.size() == 3);
  CHECK(examples[0].labels == data::LabelKind::silver);  // seemingly relevant were mined

  const auto bad = write(dir / "bad.tsv", "query-id\tcorpus-id\tscore\nq1\td9\t1\n");
  CHECK_THAT(error_of({"import", "rage", "--corpus", corpus, "--queries", queries, "--relevant",
                       bad, "--out", out}),
             Catch::Contains("bad.tsv: line 2") && Catch::Contains("unknown document 'd9'"));
  CHECK_THAT(error_of({"import", "rage", "--corpus", corpus, "--queries", queries, "--out", out}),
             Catch::Contains("--relevant"));
  fs::remove_all(dir);
}

TEST_CASE("data import jsonl validates and normalises") {
  auto dir = testing::temp_dir("cmd-jsonl");
  const auto input = write(dir / "in.jsonl",
                           "{\"question\": \"q?\", \"id\": \"x\", \"citation_style\": \"numeric\", "
                           "\"sources\": [{\"text\": \"t\", \"name\": \"n\"}]}\n");
  const auto out = (dir / "out.jsonl").string();
  run_data({"import", "jsonl", "--input", input, "--out", out});
  const std::string normalised = read_file(out);
  CHECK_THAT(normalised, Catch::StartsWith("{\"id\":\"x\""));
  auto back = data::read_examples_jsonl(out);
  REQUIRE(back.size() == 1);
  CHECK(back[0].sources[0].key == 1);

  const auto broken =
      write(dir / "broken.jsonl",
            "{\"id\": \"x\", \"question\": \"q\", \"citation_style\": \"numeric\", "
            "\"sources\": [{\"name\": \"n\", \"text\": \"t\", \"label\": \"maybe\"}]}\n");
  CHECK_THAT(error_of({"import", "jsonl", "--input", broken, "--out", out}),
             Catch::Contains("broken.jsonl: line 1") && Catch::Contains("sources[0].label"));
  fs::remove_all(dir);
}

TEST_CASE("data import synsciqa converts the real test file") {
  const auto input = testing::dataset_path("synsciqa/SynSciQA_test.csv");
  auto dir = testing::temp_dir("cmd-synsciqa");
  const auto out = (dir / "synsciqa_test.jsonl").string();
  run_data({"import", "synsciqa", "--input", input, "--golden",
            testing::dataset_path("synsciqa/SynSciQA_test_with_golden_sources.csv"), "--out", out});
  auto examples = data::read_examples_jsonl(out);
  CHECK(examples.size() == 539);
  CHECK(examples[0].citation_style == data::CitationStyle::named);
  fs::remove_all(dir);
}

TEST_CASE("data import synsciqa skips an unusable record, --strict refuses the file") {
  auto dir = testing::temp_dir("cmd-synsciqa-skip");
  const std::string good =
      "\"Given are the following sources: [BEGIN OF SOURCES]\nA, 2020: x.\n[END OF SOURCES]\n"
      "Can you respond to the question \"\"Why?\"\" by only relying on the sources.\"";
  const std::string empty =
      "\"Given are the following sources: [BEGIN OF SOURCES]\n[END OF SOURCES]\nCan you "
      "respond to the question \"\"nan\"\" by only relying on the sources.\"";
  const auto input = write(dir / "Published.csv", "instruction,gpt-4\n" + good +
                                                      ",\"It is x (A, 2020).\"\n" + empty + ",\n");
  const auto out = (dir / "out.jsonl").string();
  run_data({"import", "synsciqa", "--input", input, "--out", out});
  auto examples = data::read_examples_jsonl(out);
  REQUIRE(examples.size() == 1);
  CHECK(examples[0].labels_from == "gpt-4");
  CHECK_THAT(error_of({"import", "synsciqa", "--input", input, "--strict", "--out", out}),
             Catch::Contains("Published.csv: line 6 (record 1): field 'instruction'"));
  fs::remove_all(dir);
}

TEST_CASE("data: bad subcommands and options are one-line errors") {
  CHECK_THAT(error_of({"frobnicate"}), Catch::Contains("unknown subcommand 'frobnicate'"));
  CHECK_THAT(error_of({"import", "parquet"}),
             Catch::Contains("data import: unknown subcommand 'parquet' (synsciqa, rage, jsonl)"));
  CHECK_THAT(error_of({"synth", "--seed", "1"}), Catch::Contains("--out"));
  CHECK_THAT(error_of({"synth", "--out", "/tmp/x", "--sed", "1"}), Catch::Contains("--sed"));
  CHECK_THAT(error_of({"synth", "--out", "/tmp/x", "--seed", "-4"}), Catch::Contains("--seed"));
}
