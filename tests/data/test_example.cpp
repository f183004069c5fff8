#include <catch2/catch.hpp>
#include <fstream>

#include "common/error.h"
#include "common/file_io.h"
#include "data/example.h"
#include "tests/support/test_paths.h"

using namespace citeforge::data;
using citeforge::testing::temp_dir;

namespace {

Example sample() {
  Example e;
  e.id = "synsciqa_test-0042";
  e.origin = "SynSciQA_test";
  e.split = "test";
  e.question = "How does proteomics differ from genomics?";
  e.sources = {{1, "Cooley & Mitchell, 2007, p. 112", "Proteomics is \"dynamic\".\nSecond line.",
                Label::relevant},
               {2, "Other, 2001", "t\xC3\xA9xt", Label::seemingly_relevant},
               {3, "Third, 2002", "", Label::unknown}};
  e.citation_style = CitationStyle::named;
  e.labels = LabelKind::silver;
  e.references = {{"gpt-35", "It differs (Cooley & Mitchell, 2007, p. 112)."}, {"gpt-4", ""}};
  return e;
}

bool same(const Example& a, const Example& b) {
  if (a.sources.size() != b.sources.size()) return false;
  for (std::size_t i = 0; i < a.sources.size(); ++i) {
    const auto &x = a.sources[i], &y = b.sources[i];
    if (x.key != y.key || x.name != y.name || x.text != y.text || x.label != y.label) return false;
  }
  return a.id == b.id && a.origin == b.origin && a.split == b.split && a.question == b.question &&
         a.citation_style == b.citation_style && a.labels == b.labels &&
         a.references == b.references;
}

// Writes `lines` to a fresh examples.jsonl and returns the message of the error reading it.
std::string read_error(const std::vector<std::string>& lines) {
  auto path = (temp_dir("example") / "examples.jsonl").string();
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
  out.close();
  try {
    read_examples_jsonl(path);
  } catch (const citeforge::Error& e) {
    std::string message = e.what();
    REQUIRE(message.rfind(path + ": ", 0) == 0);  // names the file first
    return message.substr(path.size() + 2);
  }
  FAIL("no error");
  return "";
}

const std::string kGood =
    R"({"id": "a", "question": "q?", "sources": [{"key": 1, "name": "n", "text": "t", "label": "relevant"}], "citation_style": "numeric"})";

}  // namespace

TEST_CASE("labels, styles and label kinds round-trip through their spellings", "[example]") {
  for (Label l : {Label::relevant, Label::irrelevant, Label::seemingly_relevant, Label::unknown})
    CHECK(parse_label(to_string(l), "") == l);
  CHECK(std::string(to_string(Label::seemingly_relevant)) == "seemingly_relevant");
  CHECK(parse_citation_style("named", "") == CitationStyle::named);
  CHECK(parse_citation_style("numeric", "") == CitationStyle::numeric);
  CHECK(parse_label_kind("silver", "") == LabelKind::silver);
  CHECK_THROWS_WITH(parse_label("maybe", "record 3"), "record 3: unknown label 'maybe'");
  CHECK_THROWS_WITH(parse_citation_style("apa", "x"),
                    "x: unknown citation style 'apa' (numeric or named)");
  CHECK_THROWS_WITH(parse_label_kind("bronze", "x"),
                    "x: unknown label kind 'bronze' (gold or silver)");
}

TEST_CASE("examples JSONL round-trips every field", "[example]") {
  auto path = (temp_dir("example") / "out.jsonl").string();
  Example second = sample();
  second.id = "b";
  second.citation_style = CitationStyle::numeric;
  second.labels = LabelKind::gold;
  second.references.clear();
  write_examples_jsonl(path, {sample(), second});
  auto back = read_examples_jsonl(path);
  REQUIRE(back.size() == 2);
  CHECK(same(back[0], sample()));
  CHECK(same(back[1], second));
}

TEST_CASE("examples JSONL writes one line per example in the DESIGN field order", "[example]") {
  auto path = (temp_dir("example") / "out.jsonl").string();
  write_examples_jsonl(path, {sample()});
  std::string text = citeforge::read_file(path);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.rfind(
            R"({"id":"synsciqa_test-0042","origin":"SynSciQA_test","split":"test","question":)",
            0) == 0);
  CHECK(text.find(R"("sources":[{"key":1,"name":"Cooley & Mitchell, 2007, p. 112","text":)") !=
        std::string::npos);
  CHECK(text.find(R"("citation_style":"named","labels":"silver","references":{"gpt-35":)") !=
        std::string::npos);
}

TEST_CASE("examples JSONL: optional fields take their defaults, blank lines are skipped",
          "[example]") {
  auto path = (temp_dir("example") / "in.jsonl").string();
  std::ofstream(path)
      << "\n"
      << R"({"id": "a", "question": "q", "sources": [{"name": "n", "text": "t"}, {"name": "m", "text": "u"}], "citation_style": "numeric"})"
      << "\n  \n";
  auto examples = read_examples_jsonl(path);
  REQUIRE(examples.size() == 1);
  const auto& e = examples[0];
  CHECK(e.sources[0].key == 1);
  CHECK(e.sources[1].key == 2);
  CHECK(e.sources[1].label == Label::unknown);
  CHECK(e.labels == LabelKind::gold);
  CHECK(e.references.empty());
  CHECK(e.origin.empty());
}

TEST_CASE("examples JSONL errors name the line and the field", "[example]") {
  std::string good_b = kGood;
  good_b.replace(good_b.find("\"a\""), 3, "\"b\"");
  CHECK(
      read_error(
          {kGood, good_b,
           R"({"id": "c", "question": "q", "sources": [{"name": "n", "text": "t"}, {"name": "m", "text": "u", "label": "maybe"}], "citation_style": "named"})"}) ==
      "line 3: field 'sources[1].label': unknown label 'maybe'");
  CHECK(read_error({R"({"id": "a", "sources": [], "citation_style": "named"})"}) ==
        "line 1: field 'question': missing");
  CHECK(read_error({R"({"id": 5, "question": "q", "sources": [], "citation_style": "named"})"}) ==
        "line 1: field 'id': expected a string, got number");
  CHECK(read_error({R"({"id": "a", "question": "q", "sources": {}, "citation_style": "named"})"}) ==
        "line 1: field 'sources': expected an array");
  CHECK(
      read_error(
          {R"({"id": "a", "question": "q", "sources": [{"text": "t"}], "citation_style": "named"})"}) ==
      "line 1: field 'sources[0].name': missing");
  CHECK(
      read_error(
          {R"({"id": "a", "question": "q", "sources": [{"key": 0, "name": "n", "text": "t"}], "citation_style": "named"})"}) ==
      "line 1: field 'sources[0].key': expected a positive integer, got 0");
  CHECK(
      read_error(
          {R"({"id": "a", "question": "q", "sources": [{"key": 2, "name": "n", "text": "t"}, {"key": 2, "name": "m", "text": "t"}], "citation_style": "named"})"}) ==
      "line 1: field 'sources[1].key': duplicate key 2");
  CHECK(read_error({R"({"id": "a", "question": "q", "sources": [], "citation_style": "apa"})"}) ==
        "line 1: field 'citation_style': unknown citation style 'apa' (numeric or named)");
  CHECK(
      read_error(
          {R"({"id": "a", "question": "q", "sources": [], "citation_style": "named", "labels": "bronze"})"}) ==
      "line 1: field 'labels': unknown label kind 'bronze' (gold or silver)");
  CHECK(
      read_error(
          {R"({"id": "a", "question": "q", "sources": [], "citation_style": "named", "refrences": {}})"}) ==
      "line 1: field 'refrences': unknown field");
  CHECK(
      read_error(
          {R"({"id": "a", "question": "q", "sources": [], "citation_style": "named", "references": {"gpt-4": 3}})"}) ==
      "line 1: field 'references.gpt-4': expected a string, got number");
  CHECK(read_error({kGood, kGood}) == "line 2: field 'id': duplicate id 'a'");
  CHECK(read_error({"[1, 2]"}) == "line 1: expected a JSON object");
  std::string bad_json = read_error({kGood, "{\"id\": "});
  CHECK(bad_json.rfind("line 2: invalid JSON: ", 0) == 0);
  CHECK(bad_json.find('\n') == std::string::npos);
  // Found by fuzz_data_files: a number past every integer and float type is the JSON library's
  // out_of_range, which escaped as an internal error.
  std::string overflow = read_error({kGood, "60534919700000000000000000000e53490"});
  CHECK(overflow.rfind("line 2: invalid JSON: ", 0) == 0);
  CHECK(overflow.find("number overflow") != std::string::npos);
}

TEST_CASE("examples JSONL: a missing file is an error naming it", "[example]") {
  CHECK_THROWS_WITH(read_examples_jsonl("/nonexistent/examples.jsonl"),
                    "/nonexistent/examples.jsonl: cannot open for reading");
}
