#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "data/answers.h"
#include "data/example.h"
#include "tests/support/test_paths.h"
#include "trainer/cli/commands.h"
#include "trainer/eval/eval_archive.h"

using namespace citeforge;
using citeforge::testing::temp_dir;
using nlohmann::json;

namespace {

// Two numeric examples: "a" has R = {1}, "b" has no relevant source.
std::string write_examples(const std::filesystem::path& dir) {
  data::Example a, b;
  a.id = "a";
  a.question = "qa";
  a.sources = {{1, "d1", "t", data::Label::relevant}, {2, "d2", "t", data::Label::irrelevant}};
  a.references = {{"teacher", "Yes [1]."}};
  b.id = "b";
  b.question = "qb";
  b.sources = {{1, "d1", "t", data::Label::irrelevant}};
  b.references = {{"teacher", "Nothing answers this."}};
  auto path = (dir / "examples.jsonl").string();
  data::write_examples_jsonl(path, {a, b});
  return path;
}

// Ordered, so the test sees the keys in the order they were written.
std::vector<nlohmann::ordered_json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::ordered_json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    out.push_back(nlohmann::ordered_json::parse(line));
  return out;
}

std::string error_of(const trainer::Args& args) {
  try {
    trainer::command_score(args);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("no error");
  return "";
}

}  // namespace

TEST_CASE("score --answers writes per_example.jsonl and summary.json", "[score]") {
  auto dir = temp_dir("score");
  std::string examples = write_examples(dir);
  std::string answers = (dir / "answers.jsonl").string();
  // a: cites 1 (relevant) and 2 (irrelevant) and a bogus 7; b: cites 1 (irrelevant).
  data::write_answers_jsonl(answers, {{"a", "One [1]. Two [2]. Seven [7]."}, {"b", "It is [1]."}});
  std::string out = (dir / "out").string();
  REQUIRE(trainer::command_score({"--data", examples, "--answers", answers, "--out", out}) == 0);

  auto rows = read_jsonl(out + "/per_example.jsonl");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["id"] == "a");
  CHECK(rows[0]["precision"].get<double>() == Approx(1.0 / 3));  // 1 / (|D| = 2 + I = 1)
  CHECK(rows[0]["recall"].get<double>() == 1);
  CHECK(rows[0]["f1"].get<double>() == Approx(0.5));
  CHECK(rows[0]["reward"].get<double>() == Approx(2.0 / 3));
  CHECK(rows[0]["answer_length"] == 6);
  CHECK(rows[0]["distinct_citations"] == 2);
  CHECK(rows[0]["invalid_citations"] == 1);
  CHECK(rows[0]["source_quality"] == 0);
  CHECK(rows[0]["format_quality"].get<double>() == Approx(2.0 / 3));
  CHECK(rows[1]["precision"] == 0);
  CHECK_FALSE(rows[0].contains("overlap_precision"));
  std::vector<std::string> keys;
  for (const auto& [key, value] : rows[0].items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"id", "precision", "recall", "f1", "reward",
                                         "answer_length", "distinct_citations", "invalid_citations",
                                         "source_quality", "source_quality_paper", "format_quality",
                                         "chance_precision", "chance_recall", "chance_f1",
                                         "chance_reward", "chance_source_quality",
                                         "chance_source_quality_paper"});

  json summary = json::parse(read_file(out + "/summary.json"));
  CHECK(summary["precision"]["mean"].get<double>() == Approx(1.0 / 6));
  CHECK(summary["precision"]["count"] == 2);
  CHECK(summary["recall"]["mean"].get<double>() == Approx(0.5));
  CHECK(summary["answer_length"]["mean"].get<double>() == Approx(4.5));
  CHECK(summary["precision"]["ci_low"].get<double>() <= summary["precision"]["mean"].get<double>());
  CHECK(summary["precision"]["ci_high"].get<double>() >=
        summary["precision"]["mean"].get<double>());
  CHECK(summary.size() == 17);  // 16 metrics and the paired tests
  CHECK(summary["paired"]["chance"]["f1"]["count"] == 2);
  CHECK_FALSE(summary["paired"].contains("base"));
}

TEST_CASE("score --baseline tests the answers against another set, paired by id",
          "[score][paired]") {
  auto dir = temp_dir("score-baseline");
  std::string examples = write_examples(dir);
  std::string answers = (dir / "answers.jsonl").string(),
              teacher = (dir / "teacher.jsonl").string();
  data::write_answers_jsonl(answers, {{"a", "One [1]. Two [2]. Seven [7]."}, {"b", "It is [1]."}});
  // The baseline in the other order: a correct citation (F1 1) and a correct abstention (F1 1).
  data::write_answers_jsonl(teacher, {{"b", "Nothing answers this."}, {"a", "Yes [1]."}});
  std::string out = (dir / "out").string();
  REQUIRE(trainer::command_score({"--data", examples, "--answers", answers, "--baseline", teacher,
                                  "--out", out}) == 0);
  json summary = json::parse(read_file(out + "/summary.json"));
  // F1 0.5 and 0 against 1 and 1: differences -0.5 and -1, mean -0.75; of the four sign
  // patterns two reach |1.5|, so p = 0.5.
  const json& f1 = summary["paired"]["base"]["f1"];
  CHECK(f1["difference"].get<double>() == Approx(-0.75));
  CHECK(f1["count"] == 2);
  CHECK(f1["p"].get<double>() == Approx(0.5));
  CHECK(f1["ci_high"].get<double>() <= -0.5);
  // A baseline answering an example the data file lacks is the same error as --answers gives.
  data::write_answers_jsonl(teacher, {{"a", "Yes [1]."}, {"zz", "?"}});
  CHECK_THROWS_WITH(
      trainer::command_score({"--data", examples, "--answers", answers, "--baseline", teacher}),
      Catch::Contains("teacher.jsonl") && Catch::Contains("zz"));
}

TEST_CASE("score --answers reads a run's evaluation archive, which may answer a subset",
          "[score]") {
  auto dir = temp_dir("score-archive");
  std::string examples = write_examples(dir);
  trainer::EvalRecord record;
  record.stage = "sft+ppo";
  record.epoch = 1;
  record.test_set = "validation";
  record.checkpoint = "checkpoints/sft+ppo-1";
  record.ids = {"a"};  // a seeded sample: b was not evaluated
  record.prompts = {"prompt of a"};
  record.generations = {"One [1]. Two [2]. Seven [7]."};
  const std::string archive = (dir / "validation.h5").string();
  trainer::write_eval_archive(archive, record);
  std::string out = (dir / "out").string();
  REQUIRE(trainer::command_score({"--data", examples, "--answers", archive, "--out", out}) == 0);
  auto rows = read_jsonl(out + "/per_example.jsonl");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["id"] == "a");
  CHECK(rows[0]["precision"].get<double>() == Approx(1.0 / 3));

  // An id the data file lacks is an error naming the archive and the id.
  record.ids = {"a", "zz"};
  record.prompts = {"p", "p"};
  record.generations = {"x", "y"};
  trainer::write_eval_archive(archive, record);
  const std::string error = error_of({"--data", examples, "--answers", archive});
  CHECK_THAT(error, Catch::Contains("validation.h5") && Catch::Contains("'zz'"));
}

TEST_CASE("score --invalid-citations ignore drops I from the formulas", "[score]") {
  auto dir = temp_dir("score");
  std::string examples = write_examples(dir);
  std::string answers = (dir / "answers.jsonl").string();
  data::write_answers_jsonl(answers, {{"a", "One [1]. Seven [7]."}, {"b", "Seven [7]."}});
  std::string out = (dir / "out").string();
  REQUIRE(trainer::command_score({"--data", examples, "--answers", answers, "--out", out,
                                  "--invalid-citations", "ignore"}) == 0);
  auto rows = read_jsonl(out + "/per_example.jsonl");
  CHECK(rows[0]["precision"] == 1);
  CHECK(rows[0]["invalid_citations"] == 1);  // still reported
  CHECK(rows[1]["precision"] == 1);          // "cites nothing" with no relevant source
  CHECK(rows[1]["source_quality"] == 1);
}

TEST_CASE("score --reference scores a named reference, --overlap-reference adds overlap",
          "[score]") {
  auto dir = temp_dir("score");
  std::string examples = write_examples(dir);
  std::string out = (dir / "out").string();
  REQUIRE(trainer::command_score({"--data", examples, "--reference", "teacher", "--out", out,
                                  "--overlap-reference", "teacher"}) == 0);
  auto rows = read_jsonl(out + "/per_example.jsonl");
  CHECK(rows[0]["precision"] == 1);
  CHECK(rows[0]["recall"] == 1);
  CHECK(rows[1]["precision"] == 1);  // correct abstention
  CHECK(rows[0]["overlap_precision"] == 1);
  CHECK(rows[1]["overlap_recall"] == 1);
  json summary = json::parse(read_file(out + "/summary.json"));
  CHECK(summary["reward"]["mean"] == 1);
  CHECK(summary["reward"]["ci_low"] == 1);
  CHECK(summary.size() == 19);  // 16 metrics, the two overlaps and the paired tests
}

TEST_CASE("score --reference of the answer silver labels came from: those metrics are n/a",
          "[score]") {
  // Silver labels are the teacher's own citations, so scoring the teacher against them would
  // print precision, recall and source quality of 1.0 whatever the teacher cited.
  auto dir = temp_dir("score");
  data::Example a;
  a.id = "a";
  a.question = "q";
  a.sources = {{1, "d1", "t", data::Label::relevant}, {2, "d2", "t", data::Label::irrelevant}};
  a.labels = data::LabelKind::silver;
  a.labels_from = "gpt-4";
  a.references = {{"gpt-4", "Yes [1]."}, {"gpt-35", "Yes [2]."}};
  const auto examples = (dir / "silver.jsonl").string();
  data::write_examples_jsonl(examples, {a});

  const auto out = (dir / "circular").string();
  REQUIRE(trainer::command_score({"--data", examples, "--reference", "gpt-4", "--out", out}) == 0);
  json summary = json::parse(read_file(out + "/summary.json"));
  for (const char* m : {"precision", "recall", "f1", "reward", "source_quality",
                        "source_quality_paper", "chance_precision", "chance_f1"}) {
    INFO(m);
    CHECK(summary[m]["mean"].is_null());
    CHECK_THAT(summary[m]["not_applicable"].get<std::string>(),
               Catch::Contains("derived from the 'gpt-4' answers being scored"));
  }
  CHECK(summary["distinct_citations"]["mean"] == 1);  // what does not use the labels stays
  CHECK(summary["answer_length"]["mean"] == 2);
  CHECK_FALSE(summary.contains("paired"));  // it would test the labels' source against itself
  auto rows = read_jsonl(out + "/per_example.jsonl");
  CHECK(rows[0]["precision"].is_null());
  CHECK(rows[0]["distinct_citations"] == 1);

  // Another answer scored against the same silver labels is not circular.
  const auto other = (dir / "other").string();
  REQUIRE(trainer::command_score({"--data", examples, "--reference", "gpt-35", "--out", other}) ==
          0);
  json other_summary = json::parse(read_file(other + "/summary.json"));
  CHECK(other_summary["precision"]["mean"] == 0);
  CHECK_FALSE(other_summary["precision"].contains("not_applicable"));
}

TEST_CASE("score: bad input is a one-line error", "[score]") {
  auto dir = temp_dir("score");
  std::string examples = write_examples(dir);
  std::string answers = (dir / "answers.jsonl").string();

  CHECK(error_of({"--data", examples})
            .rfind("score: give exactly one of --answers FILE or --reference NAME", 0) == 0);
  CHECK(error_of({"--data", examples, "--answers", answers, "--reference", "x"})
            .rfind("score: give exactly one of", 0) == 0);
  CHECK(error_of({"--reference", "teacher"}) ==
        "score: missing required option --data (citeforge score --help lists the options)");
  CHECK(error_of({"--data", examples, "--reference", "teacher", "extra"})
            .rfind("score: unexpected argument 'extra'", 0) == 0);
  CHECK(error_of({"--data", examples, "--reference", "teacher", "--bogus", "1"}) ==
        "score: unknown option --bogus (citeforge score --help lists the options)");
  CHECK(error_of({"--data", examples, "--reference", "teacher", "--invalid-citations", "drop"}) ==
        "--invalid-citations: expected 'penalize' or 'ignore', got 'drop'");
  CHECK(error_of({"--data", examples, "--reference", "gpt-4"}) ==
        examples + ": example 'a': no reference answer 'gpt-4' (it has: teacher)");
  CHECK(error_of({"--data", examples, "--reference", "teacher", "--overlap-reference", "gpt-4"}) ==
        examples +
            ": example 'a': no reference answer 'gpt-4' for --overlap-reference (it has: teacher)");

  data::write_answers_jsonl(answers, {{"a", "x"}, {"zzz", "y"}});
  CHECK(error_of({"--data", examples, "--answers", answers}) ==
        answers + ": id 'zzz': no such example in " + examples);
  data::write_answers_jsonl(answers, {{"b", "x"}});
  CHECK(error_of({"--data", examples, "--answers", answers}) ==
        answers + ": no answer for example 'a'");

  std::ofstream(answers)
      << "{\"id\": \"a\", \"answer\": \"x\"}\n{\"id\": \"a\", \"answer\": \"y\"}\n";
  CHECK(error_of({"--data", examples, "--answers", answers}) ==
        answers + ": line 2: field 'id': duplicate id 'a'");
  std::ofstream(answers) << "{\"id\": \"a\"}\n";
  CHECK(error_of({"--data", examples, "--answers", answers}) ==
        answers + ": line 1: field 'answer': missing");
  std::ofstream(answers) << "{\"id\": \"a\", \"answer\": 3}\n";
  CHECK(error_of({"--data", examples, "--answers", answers}) ==
        answers + ": line 1: field 'answer': expected a string");
  std::ofstream(answers) << "{\"id\": \"a\", \"text\": \"x\"}\n";
  CHECK(error_of({"--data", examples, "--answers", answers}) ==
        answers + ": line 1: field 'text': unknown field");
  std::ofstream(answers) << "\n{\"id\": \n";
  CHECK(error_of({"--data", examples, "--answers", answers})
            .rfind(answers + ": line 2: invalid JSON: ", 0) == 0);

  std::string empty = (dir / "empty.jsonl").string();
  std::ofstream(empty) << "\n";
  CHECK(error_of({"--data", empty, "--reference", "teacher"}) == empty + ": no examples to score");
}
