#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/prompt_template.h"
#include "data/synsciqa.h"
#include "data/synth.h"
#include "tests/support/test_paths.h"

using namespace citeforge::data;

namespace {

PromptTemplate load(const std::string& name) {
  return find_prompt_template(name, citeforge::testing::source_path("configs/templates"));
}

Example sample_named() {
  Example e;
  e.id = "x";
  e.question = "How does proteomics differ from genomics?";
  e.citation_style = CitationStyle::named;
  e.sources = {{1, "Cooley & Mitchell, 2007, p. 112", "Proteomics studies proteins: all of them.",
                Label::relevant},
               {2, "Anderson et al., 2021, p.23", "The electromagnetic force is familiar.",
                Label::irrelevant},
               {3, "Cooley & Mitchell, 2007, p. 112", "Same name, other text.", Label::irrelevant}};
  return e;
}

void check_same_sources(const std::vector<Source>& got, const std::vector<Source>& want,
                        bool names) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK(got[i].key == want[i].key);
    CHECK(got[i].text == want[i].text);
    if (names) CHECK(got[i].name == want[i].name);
  }
}

}  // namespace

TEST_CASE("rage_numeric renders documents as [n]: text and the question last") {
  PromptTemplate t = load("rage_numeric");
  CHECK(t.name == "rage_numeric");
  CHECK(t.citation_style == CitationStyle::numeric);
  Example e = sample_named();
  const std::string prompt = render_prompt(t, e);
  CHECK(prompt.find("[1]: Proteomics studies proteins: all of them.\n[2]: The electromagnetic") !=
        std::string::npos);
  CHECK(prompt.find("Question: How does proteomics differ from genomics?\nAnswer:") !=
        std::string::npos);
  CHECK(prompt.find("{") == std::string::npos);
}

TEST_CASE(
    "numeric templates: rendering a synthetic example and parsing it back gives its sources") {
  SynthConfig config;
  config.train = 40;
  config.validation = config.test = config.test_ood = 5;
  const auto dataset = generate_synth(config);
  for (const char* name : {"rage_numeric", "rage_numeric_query_first", "rage_numeric_key_last"}) {
    INFO(name);
    PromptTemplate t = load(name);
    for (const auto& split : dataset.splits) {
      for (const Example& e : split.examples) {
        ParsedPrompt parsed = parse_rendered_prompt(t, render_prompt(t, e));
        CHECK(parsed.question == e.question);
        check_same_sources(parsed.sources, e.sources, false);
      }
    }
  }
  // Key last: each document line ends with its number.
  Example e = dataset.splits.front().examples.front();
  CHECK(render_prompt(load("rage_numeric_key_last"), e).find(e.sources[0].text + " [1]\n") !=
        std::string::npos);
}

TEST_CASE("rage_numeric_query_first states the question before and after the documents") {
  PromptTemplate t = load("rage_numeric_query_first");
  Example e = sample_named();
  const std::string prompt = render_prompt(t, e);
  const std::string question = "Question: How does proteomics differ from genomics?";
  const auto first = prompt.find(question), documents = prompt.find("[1]: Proteomics");
  REQUIRE(first == 0);
  REQUIRE(documents != std::string::npos);
  CHECK(prompt.find(question + "\nAnswer:", documents) != std::string::npos);
  ParsedPrompt parsed = parse_rendered_prompt(t, prompt);
  CHECK(parsed.question == e.question);
  check_same_sources(parsed.sources, e.sources, false);
  // The two copies must agree, or the text was not rendered from this template.
  std::string tampered = prompt;
  tampered.replace(prompt.rfind("genomics"), 8, "genetics");
  CHECK_THROWS_WITH(parse_rendered_prompt(t, tampered),
                    Catch::Contains("rage_numeric_query_first") && Catch::Contains("does not fit"));
}

TEST_CASE("evidence_named: round trip through the template and through the SynSciQA parser") {
  PromptTemplate t = load("evidence_named");
  CHECK(t.citation_style == CitationStyle::named);
  Example e = sample_named();
  const std::string prompt = render_prompt(t, e);
  CHECK(prompt.rfind("Given are the following sources: [BEGIN OF SOURCES]\n"
                     "Cooley & Mitchell, 2007, p. 112: Proteomics",
                     0) == 0);

  ParsedPrompt parsed = parse_rendered_prompt(t, prompt);
  CHECK(parsed.question == e.question);
  check_same_sources(parsed.sources, e.sources, true);

  // The importer of the real data set reads our rendering like one of its own instructions.
  ParsedInstruction synsciqa = parse_synsciqa_instruction(prompt);
  CHECK(synsciqa.question == e.question);
  REQUIRE(synsciqa.sources.size() == e.sources.size());
  for (std::size_t i = 0; i < e.sources.size(); ++i) {
    CHECK(synsciqa.sources[i].name == e.sources[i].name);
    CHECK(synsciqa.sources[i].text == e.sources[i].text);
  }
  CHECK(synsciqa.warnings.empty());
  CHECK(synsciqa.rules.rfind("by only relying on the sources.", 0) == 0);
}

TEST_CASE("a prompt that does not fit the template is an error naming it") {
  PromptTemplate t = load("rage_numeric");
  CHECK_THROWS_WITH(parse_rendered_prompt(t, "Hello"), Catch::Contains("rage_numeric"));
  Example e = sample_named();
  std::string prompt = render_prompt(t, e);
  prompt.replace(prompt.find("[2]:"), 4, "[x]:");
  CHECK_THROWS_WITH(parse_rendered_prompt(t, prompt), Catch::Contains("source 2"));
}

TEST_CASE("an example without sources renders and parses back empty") {
  PromptTemplate t = load("rage_numeric");
  Example e;
  e.question = "Why?";
  ParsedPrompt parsed = parse_rendered_prompt(t, render_prompt(t, e));
  CHECK(parsed.question == "Why?");
  CHECK(parsed.sources.empty());
}

TEST_CASE("template files are validated with file and key in the message") {
  const std::string good =
      "name: t\ncitation_style: numeric\nprompt: \"{sources} Q: {question}\"\n"
      "source: \"[{key}] {text}\"\n";
  PromptTemplate t = parse_prompt_template(good, "t.yaml");
  CHECK(t.source_separator == "\n");

  auto fails = [](const std::string& yaml) {
    try {
      parse_prompt_template(yaml, "t.yaml");
    } catch (const citeforge::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(
      fails(
          "name: t\ncitation_style: numeric\nprompt: \"{question}\"\nsource: \"[{key}] {text}\"\n"),
      Catch::Contains("t.yaml") && Catch::Contains("{sources}"));
  CHECK_THAT(fails("name: t\ncitation_style: numeric\nprompt: \"{question} {sources} {question} "
                   "{question}\"\nsource: \"[{key}] {text}\"\n"),
             Catch::Contains("{question} once or twice"));
  CHECK_THAT(fails("name: t\ncitation_style: numeric\nprompt: \"{sources} {question} {answer}\"\n"
                   "source: \"[{key}] {text}\"\n"),
             Catch::Contains("unknown placeholder {answer}"));
  CHECK_THAT(fails("name: t\ncitation_style: numeric\nprompt: \"{sources}{question}\"\n"
                   "source: \"[{key}] {text}\"\n"),
             Catch::Contains("need text between them"));
  CHECK_THAT(fails("name: t\ncitation_style: named\nprompt: \"{sources} {question}\"\n"
                   "source: \"[{key}] {text}\"\n"),
             Catch::Contains("{name}"));
  CHECK_THAT(fails("name: t\ncitation_style: roman\nprompt: \"{sources} {question}\"\n"
                   "source: \"[{key}] {text}\"\n"),
             Catch::Contains("citation_style") && Catch::Contains("roman"));
  CHECK_THAT(fails("name: t\ncitation_style: numeric\nprompt: \"{sources} {question}\"\n"),
             Catch::Contains("key source") && Catch::Contains("missing"));
  CHECK_THAT(fails(good + "colour: red\n"), Catch::Contains("line 5") && Catch::Contains("colour"));
  CHECK_THAT(fails(good + "source_separator: \"\"\n"), Catch::Contains("source_separator"));
  // Literal braces that are not {word} stay text.
  PromptTemplate braces = parse_prompt_template(
      "name: t\ncitation_style: numeric\nprompt: \"{ JSON } {sources} Q: {question}\"\n"
      "source: \"[{key}] {text}\"\n",
      "t.yaml");
  Example e;
  e.question = "q";
  e.sources = {{1, "", "a", Label::relevant}};
  CHECK(render_prompt(braces, e) == "{ JSON } [1] a Q: q");
}

TEST_CASE("find_prompt_template accepts a name or a path") {
  auto by_path = find_prompt_template(
      citeforge::testing::source_path("configs/templates/evidence_named.yaml"), "/nonexistent");
  CHECK(by_path.name == "evidence_named");
  CHECK_THROWS_WITH(find_prompt_template("no_such_template", "/nonexistent"),
                    Catch::Contains("no_such_template.yaml"));
}
