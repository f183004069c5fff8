#include <catch2/catch.hpp>
#include <fstream>

#include "common/error.h"
#include "common/yaml_fields.h"
#include "data/synth.h"
#include "data/synth_vocab.h"
#include "tests/support/test_paths.h"

using namespace citeforge::data;
using citeforge::parse_yaml_text;

namespace {

SynthConfig parse(const std::string& text) {
  return synth_config_from_yaml(parse_yaml_text(text, "synth.yaml"), "synth.yaml");
}

}  // namespace

TEST_CASE("synth config: every key is optional and read with its type") {
  SynthConfig c = parse("seed: 42\ntrain: 10\nteacher_precision: 0.7\nood_topics: [star, dish]\n");
  CHECK(c.seed == 42);
  CHECK(c.train == 10);
  CHECK(c.validation == 200);
  CHECK(c.teacher_precision == 0.7);
  CHECK(c.ood_topics == std::vector<std::string>{"star", "dish"});
  CHECK(parse("{}").train == 2000);
}

TEST_CASE("synth config: YAML round trip of the resolved configuration") {
  SynthConfig c;
  c.seed = 9;
  c.no_relevant_rate = 0.1;
  c.irrelevant = 3;
  c.questions_per_entity = 1;
  c.id_topics = {"bird", "town"};
  SynthConfig back = parse(synth_config_to_yaml(c));
  CHECK(back.questions_per_entity == 1);
  CHECK(back.seed == 9);
  CHECK(back.no_relevant_rate == 0.1);
  CHECK(back.irrelevant == 3);
  CHECK(back.id_topics == c.id_topics);
  CHECK(back.ood_topics == default_ood_topics());
  CHECK(synth_config_to_yaml(back) == synth_config_to_yaml(parse(synth_config_to_yaml(back))));
}

TEST_CASE("synth config: errors name the file, line and key") {
  CHECK_THROWS_WITH(parse("seed: 1\ntrian: 5\n"),
                    Catch::Contains("synth.yaml") && Catch::Contains("line 2") &&
                        Catch::Contains("trian") && Catch::Contains("unknown key"));
  CHECK_THROWS_WITH(parse("train: lots\n"), Catch::Contains("line 1") &&
                                                Catch::Contains("key train") &&
                                                Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(parse("seed: -3\n"), Catch::Contains("non-negative"));
  CHECK_THROWS_WITH(parse("ood_topics: star\n"), Catch::Contains("list of strings"));
  CHECK_THROWS_WITH(parse("no_relevant_rate: 1.5\n"), Catch::Contains("no_relevant_rate"));
  CHECK_THROWS_WITH(parse("train: [1\n"), Catch::Contains("invalid YAML"));
  CHECK_THROWS_WITH(parse("- a\n- b\n"), Catch::Contains("expected a mapping"));
}

TEST_CASE("synth config: load from a file and prefix keys when nested") {
  auto dir = citeforge::testing::temp_dir("synth-config");
  const auto path = (dir / "synth.yaml").string();
  std::ofstream(path) << "seed: 3\ntest_ood: 0\n";
  SynthConfig c = load_synth_config(path);
  CHECK(c.seed == 3);
  CHECK(c.test_ood == 0);
  CHECK_THROWS_WITH(load_synth_config((dir / "missing.yaml").string()),
                    Catch::Contains("missing.yaml"));

  YAML::Node root = parse_yaml_text("synth:\n  seed: 1\n  bogus: 2\n", "demo.yaml");
  CHECK_THROWS_WITH(synth_config_from_yaml(root["synth"], "demo.yaml", "synth."),
                    Catch::Contains("synth.bogus"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("synth vocab: templates fill and frames keep proper names capitalised") {
  CHECK(fill_fact("{V} are the food of the {e}.", "Kalo", "seeds") ==
        "Seeds are the food of the Kalo.");
  CHECK(apply_frame("Records show that {s}", "{s}", "The Kalo eats seeds.", "Kalo") ==
        "Records show that the Kalo eats seeds.");
  CHECK(apply_frame("Records show that {s}", "{s}", "Kalo is a town.", "Kalo") ==
        "Records show that Kalo is a town.");
  CHECK(apply_frame("{a}", "{a}", "The Kalo eats seeds.", "Kalo") == "The Kalo eats seeds.");
  for (const auto& topic : synth_topics()) {
    for (const auto& a : topic.attributes) {
      CHECK(a.statements.size() == 3);
      CHECK(a.values.size() >= 4);
      CHECK(a.question.find("{e}") != std::string::npos);
      CHECK(a.answer.find("{v}") != std::string::npos);
    }
  }
}
