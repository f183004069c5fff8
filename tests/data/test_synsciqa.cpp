#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "data/synsciqa.h"
#include "tests/support/test_paths.h"

using namespace citeforge::data;
using citeforge::testing::dataset_path;
using citeforge::testing::temp_dir;

namespace {

// An instruction in the exact layout of the real files.
std::string instruction(const std::vector<std::string>& source_lines, const std::string& question) {
  std::string s = "Given are the following sources: [BEGIN OF SOURCES]\n";
  for (std::size_t i = 0; i < source_lines.size(); ++i)
    s += source_lines[i] + (i + 1 < source_lines.size() ? " \n" : "");
  return s + "  [END OF SOURCES] \n\nCan you respond to the question \"" + question +
         "\" by only relying on the sources. Ignore all sources that do not provide an answer to "
         "the question.                    Answer the question concisly and avoid being verbose. "
         "\n   ";
}

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string write(const std::string& name, const std::string& content) {
  auto path = (temp_dir("synsciqa") / name).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string error_of(const std::string& input,
                     const std::optional<std::string>& golden = std::nullopt) {
  try {
    import_synsciqa(input, golden, nullptr, /*strict=*/true);
  } catch (const citeforge::Error& e) {
    return e.what();
  }
  FAIL("no error");
  return "";
}

const std::string kI1 =
    instruction({"Smith et al., 2019, p. 54: Alpha text.", "Jones, 2020, p.3: Beta: text."},
                "What is \"alpha\"?");
const std::string kI2 = instruction({"Brown, 2018: Gamma.", "Author, Year, Page: Delta."}, "Why?");

}  // namespace

TEST_CASE("synsciqa instruction: sources, question with quotes, rules", "[synsciqa]") {
  auto p = parse_synsciqa_instruction(kI1);
  REQUIRE(p.sources.size() == 2);
  CHECK(p.sources[0].name == "Smith et al., 2019, p. 54");
  CHECK(p.sources[0].text == "Alpha text.");
  CHECK(p.sources[1].name == "Jones, 2020, p.3");
  CHECK(p.sources[1].text == "Beta: text.");  // only the first ": " separates the name
  CHECK(p.question == "What is \"alpha\"?");
  CHECK(p.rules.rfind("by only relying on the sources.", 0) == 0);
  CHECK(p.warnings.empty());
}

TEST_CASE("synsciqa instruction: a line without a name continues the previous source",
          "[synsciqa]") {
  auto p = parse_synsciqa_instruction(
      "[BEGIN OF SOURCES]\nstray line\nA, 2001: one\nmore of one\n[END OF SOURCES] \"Q?\"");
  REQUIRE(p.sources.size() == 1);
  CHECK(p.sources[0].text == "one\nmore of one");
  REQUIRE(p.warnings.size() == 2);
  CHECK(p.warnings[0] == "line without 'NAME: ' before any source dropped: 'stray line'");
}

TEST_CASE("synsciqa instruction: malformed instructions are errors", "[synsciqa]") {
  CHECK_THROWS_WITH(parse_synsciqa_instruction("no markers \"Q\""),
                    "no '[BEGIN OF SOURCES]' marker");
  CHECK_THROWS_WITH(parse_synsciqa_instruction("[BEGIN OF SOURCES]\nA: b\n\"Q\""),
                    "no '[END OF SOURCES]' marker after '[BEGIN OF SOURCES]'");
  CHECK_THROWS_WITH(parse_synsciqa_instruction("[BEGIN OF SOURCES]\n \n[END OF SOURCES] \"Q\""),
                    "no source between '[BEGIN OF SOURCES]' and '[END OF SOURCES]'");
  CHECK_THROWS_WITH(parse_synsciqa_instruction("[BEGIN OF SOURCES]\nA: b\n[END OF SOURCES] Q?"),
                    "no question in double quotes after '[END OF SOURCES]'");
  CHECK_THROWS_WITH(parse_synsciqa_instruction("[BEGIN OF SOURCES]\nA: b\n[END OF SOURCES] \" \""),
                    "the quoted question is empty");
}

TEST_CASE("synsciqa: a small CSV with a golden file", "[synsciqa]") {
  std::string input = write(
      "Tiny_test.csv", "gpt-4,instruction,gpt-35\n" + csv_quote("A (Smith et al., 2019, p. 54).") +
                           "," + csv_quote(kI1) + ",\"\"\n" + csv_quote("None.") + "," +
                           csv_quote(kI2) + "," + csv_quote("B (Brown, 2018).") + "\n");
  // Golden rows in another order, instructions with extra surrounding whitespace.
  std::string golden = write("Tiny_golden.csv",
                             ",question,right_source,other_source,instruction\n"
                             "0,Why?,\"['Brown, 2018', 'Nowhere, 1999']\",[]," +
                                 csv_quote("\n\n" + kI2 + "  ") +
                                 "\n"
                                 "1,What?," +
                                 csv_quote("['Smith et al., 2019, p.54']") + "," +
                                 csv_quote("[\"Jones, 2020, p.3\"]") + "," + csv_quote(kI1) + "\n");
  SynsciqaReport report;
  auto ex = import_synsciqa(input, golden, &report);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].id == "tiny_test-0000");
  CHECK(ex[1].id == "tiny_test-0001");
  CHECK(ex[0].origin == "Tiny_test");
  CHECK(ex[0].split == "test");
  CHECK(ex[0].citation_style == CitationStyle::named);
  CHECK(ex[0].labels == LabelKind::gold);
  CHECK(ex[0].question == "What is \"alpha\"?");
  CHECK(ex[0].sources[0].key == 1);
  CHECK(ex[0].sources[0].label ==
        Label::relevant);  // "p.54" in the golden list, "p. 54" in the prompt
  CHECK(ex[0].sources[1].label == Label::irrelevant);
  CHECK(ex[0].references ==
        std::map<std::string, std::string>{{"gpt-4", "A (Smith et al., 2019, p. 54)."}});
  CHECK(ex[1].sources[0].label == Label::relevant);
  CHECK(ex[1].sources[1].label == Label::unknown);  // "Author, Year, Page" is in neither list
  CHECK(ex[1].references.size() == 2);
  CHECK(report.rows == 2);
  CHECK(report.imported == 2);
  CHECK(report.empty_answers == 1);
  CHECK(report.unlabelled_sources == 1);
  CHECK(report.unmatched_golden_names == 1);
  CHECK(report.no_relevant == 0);
  CHECK(report.silver_from.empty());
  REQUIRE(report.problems.size() == 3);
  CHECK(report.problems[0] == input + ": line 2 (record 0): empty 'gpt-35' answer not kept");
  CHECK(report.problems[2] ==
        golden + ": line 2: golden name 'Nowhere, 1999' matches no source of tiny_test-0001");
}

std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump();
}

TEST_CASE("synsciqa: silver labels from the teacher answer", "[synsciqa]") {
  std::string input = write(
      "Tiny++.json", "[{\"instruction\": " + json_string(kI1) +
                         ", \"response\": \"A (Smith et al., 2019). B (Nobody, 2011, p. 2).\"},\n"
                         " {\"instruction\": " +
                         json_string(kI2) + ", \"response\": \"No source answers this.\"}]");
  SynsciqaReport report;
  auto ex = import_synsciqa(input, std::nullopt, &report);
  REQUIRE(ex.size() == 2);
  CHECK(ex[0].id == "tiny++-0000");
  CHECK(ex[0].split == "train");
  CHECK(ex[0].labels == LabelKind::silver);
  CHECK(ex[0].sources[0].label == Label::relevant);  // cited by the abbreviated name
  CHECK(ex[0].sources[1].label == Label::irrelevant);
  CHECK(ex[1].sources[0].label == Label::irrelevant);  // the teacher cites nothing
  CHECK(ex[1].sources[1].label == Label::irrelevant);
  CHECK(ex[0].references.count("response"));
  CHECK(report.silver_from == "response");
  CHECK(report.no_relevant == 1);
  CHECK(report.unresolved_citations == 1);
  REQUIRE(report.problems.size() == 1);
  CHECK(report.problems[0] ==
        input + ": record 0: 'response' cites 'nobody 2011 p 2', which matches no source");
}

TEST_CASE("synsciqa: silver labels for a CSV come from gpt-4, the stronger teacher", "[synsciqa]") {
  std::string input = write("T.csv", "instruction,gpt-35,gpt-4\n" + csv_quote(kI1) + "," +
                                         csv_quote("X (Jones, 2020, p.3).") + "," +
                                         csv_quote("X (Smith et al., 2019, p.54).") + "\n");
  SynsciqaReport report;
  auto ex = import_synsciqa(input, std::nullopt, &report);
  CHECK(report.silver_from == "gpt-4");
  CHECK(ex.at(0).sources[0].label == Label::relevant);
  CHECK(ex.at(0).sources[1].label == Label::irrelevant);
}

TEST_CASE("synsciqa: malformed inputs give one-line errors naming file and line or record",
          "[synsciqa]") {
  std::string broken =
      write("B.csv", "instruction,gpt-4\n" + csv_quote(kI1) + ",ok\n\"no closing quote,x\n");
  CHECK(error_of(broken) ==
        broken + ": line 8: unterminated quoted field (the quote opened here is never closed)");

  std::string no_column = write("C.csv", "prompt,gpt-4\nx,y\n");
  CHECK(error_of(no_column) ==
        no_column + ": line 1: missing column 'instruction' (header has 'prompt', 'gpt-4')");

  std::string no_answers = write("N.csv", "instruction\n" + csv_quote(kI1) + "\n");
  CHECK(error_of(no_answers) ==
        no_answers + ": line 1: no answer column (expected 'gpt-35', 'gpt-4' or 'response')");

  std::string no_sources =
      write("S.csv", "instruction,gpt-4\n" + csv_quote(kI1) + ",a\n" +
                         csv_quote("[BEGIN OF SOURCES]\n[END OF SOURCES] \"Q?\"") + ",b\n");
  CHECK(error_of(no_sources) == no_sources +
                                    ": line 8 (record 1): field 'instruction': no source between "
                                    "'[BEGIN OF SOURCES]' and '[END OF SOURCES]'");

  std::string bad_json = write("J.json", "[{\"instruction\": \"x\",\n \"response\": }]");
  std::string message = error_of(bad_json);
  CHECK(message.rfind(bad_json + ": line 2: invalid JSON: ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);

  std::string not_list = write("L.json", "{\"instruction\": \"x\"}");
  CHECK(error_of(not_list) == not_list + ": expected a JSON list of {instruction, response}");
  std::string missing = write("M.json", "[{\"instruction\": " + json_string(kI1) +
                                            ", \"response\": \"\"}, {\"response\": \"r\"}]");
  CHECK(error_of(missing) == missing + ": record 1: field 'instruction': missing");
  std::string wrong_type = write("W.json", "[{\"instruction\": 3, \"response\": \"r\"}]");
  CHECK(error_of(wrong_type) == wrong_type + ": record 0: field 'instruction': expected a string");
  std::string no_response = write("R.json", "[{\"instruction\": " + json_string(kI1) + "}]");
  CHECK(error_of(no_response) ==
        no_response + ": record 0: no answer field (expected 'response', 'gpt-4' or 'gpt-35')");

  std::string text = write("X.txt", "");
  CHECK(error_of(text) == text + ": unsupported file type '.txt' (expected .csv or .json)");
  CHECK(error_of("/nonexistent/A.csv") == "/nonexistent/A.csv: cannot open for reading");
}

TEST_CASE("synsciqa: an unusable record is skipped and named, or refused under strict",
          "[synsciqa]") {
  // The layout of a published test file whose last record lost its sources and whose question
  // is the "nan" pandas writes for an empty cell.
  const std::string nan_record = instruction({}, "nan");
  std::string input =
      write("Published_test.csv", "instruction,gpt-35,gpt-4\n" + csv_quote(kI1) + ",a,b\n" +
                                      csv_quote(kI2) + ",c,d\n" + csv_quote(nan_record) + ",,\n");
  SynsciqaReport report;
  auto ex = import_synsciqa(input, std::nullopt, &report);
  REQUIRE(ex.size() == 2);
  CHECK(report.rows == 3);
  CHECK(report.imported == 2);
  REQUIRE(report.skipped.size() == 1);
  CHECK(report.skipped[0] == input +
                                 ": line 14 (record 2): skipped: field 'instruction': no source "
                                 "between '[BEGIN OF SOURCES]' and '[END OF SOURCES]'");
  CHECK(ex[1].id == "published_test-0001");
  CHECK(error_of(input) == input +
                               ": line 14 (record 2): field 'instruction': no source between "
                               "'[BEGIN OF SOURCES]' and '[END OF SOURCES]'");

  // Sources present but the question is "nan": skipped too.
  std::string nan_only =
      write("Nan.csv", "instruction,gpt-4\n" + csv_quote(kI1) + ",a\n" +
                           csv_quote(instruction({"A, 2020: x."}, "nan")) + ",b\n");
  report = {};
  CHECK(import_synsciqa(nan_only, std::nullopt, &report).size() == 1);
  REQUIRE(report.skipped.size() == 1);
  CHECK(report.skipped[0].find("(record 1): skipped: field 'instruction': the question is "
                               "\"nan\"") != std::string::npos);
  CHECK(error_of(nan_only).find("the question is \"nan\"") != std::string::npos);

  // A file with nothing usable is an error even when not strict.
  std::string nothing =
      write("Nothing.csv", "instruction,gpt-4\n" + csv_quote(nan_record) + ",b\n");
  try {
    import_synsciqa(nothing, std::nullopt, nullptr);
    FAIL("no error");
  } catch (const citeforge::Error& e) {
    CHECK(std::string(e.what()).rfind(nothing + ": no usable record (1 skipped; the first: ", 0) ==
          0);
  }
}

TEST_CASE("synsciqa: silver labels name the answer they come from", "[synsciqa]") {
  std::string input = write("T.csv", "instruction,gpt-35,gpt-4\n" + csv_quote(kI1) + "," +
                                         csv_quote("X (Jones, 2020, p.3).") + "," +
                                         csv_quote("X (Smith et al., 2019, p.54).") + "\n");
  auto ex = import_synsciqa(input, std::nullopt, nullptr);
  CHECK(ex.at(0).labels_from == "gpt-4");
  auto out = (temp_dir("synsciqa") / "silver.jsonl").string();
  write_examples_jsonl(out, ex);
  CHECK(read_examples_jsonl(out).at(0).labels_from == "gpt-4");
}

TEST_CASE("synsciqa: a golden file that does not match is an error", "[synsciqa]") {
  std::string input =
      write("G.csv", "instruction,gpt-4\n" + csv_quote(kI1) + ",a\n" + csv_quote(kI2) + ",b\n");
  std::string other = write(
      "Other_golden.csv", "instruction,right_source,other_source\n" + csv_quote(kI1) + ",[],[]\n");
  CHECK(error_of(input, other) ==
        input + ": line 8 (record 1): instruction not found in golden file '" + other +
            "' (is it the golden file of this input?)");
  std::string bad_list = write("Bad_golden.csv", "instruction,right_source,other_source\n" +
                                                     csv_quote(kI1) + ",\"['a', 'b'\",[]\n");
  CHECK(error_of(input, bad_list) == bad_list +
                                         ": line 2: field 'right_source': expected a Python list "
                                         "of strings: no closing ']' at column 10");
  std::string bad_item = write(
      "Item_golden.csv", "instruction,right_source,other_source\n" + csv_quote(kI1) + ",[],[a]\n");
  CHECK(error_of(input, bad_item) == bad_item +
                                         ": line 2: field 'other_source': expected a Python list "
                                         "of strings: expected a quoted string at column 2");
  std::string conflict =
      write("Twice_golden.csv", "instruction,right_source,other_source\n" + csv_quote(kI1) +
                                    ",['x'],[]\n" + csv_quote(" " + kI1) + ",['y'],[]\n");
  CHECK(error_of(input, conflict) ==
        conflict + ": line 8: same instruction as line 2 but different source lists");
  std::string missing_column = write("Col_golden.csv", "instruction,right_source\nx,[]\n");
  CHECK(error_of(input, missing_column) ==
        missing_column +
            ": line 1: missing column 'other_source' (header has 'instruction', 'right_source')");
}

TEST_CASE("synsciqa: the real SynSciQA_test imports fully with gold labels", "[synsciqa][shared]") {
  SynsciqaReport report;
  auto ex =
      import_synsciqa(dataset_path("synsciqa/SynSciQA_test.csv"),
                      dataset_path("synsciqa/SynSciQA_test_with_golden_sources.csv"), &report);
  CHECK(ex.size() == 539);
  CHECK(report.rows == 539);
  CHECK(report.imported == 539);
  CHECK(report.duplicate_names == 75);  // README: 75 of 539 prompts repeat a name
  CHECK(report.no_relevant == 85);      // README: 85 prompts have no relevant source
  CHECK(report.empty_answers == 0);
  CHECK(report.continuation_lines == 0);
  // 'Author, Year, Page' (4x) and 'Various scientists, ...' (2x) are in no golden list, and
  // one golden list names 'Given are the following sources', which is no source.
  CHECK(report.unlabelled_sources == 6);
  CHECK(report.unmatched_golden_names == 1);
  std::size_t sources = 0;
  for (const auto& e : ex) {
    CHECK(e.references.size() == 2);
    CHECK(e.labels == LabelKind::gold);
    CHECK(e.sources.size() >= 3);
    CHECK_FALSE(e.question.empty());
    sources += e.sources.size();
  }
  CHECK(sources > 539 * 3);
  CHECK(ex[0].question == "How does the immune system prevent organ transplant rejection?");
  CHECK(ex[0].sources[0].name ==
        "National Institute of Allergy and Infectious Diseases, 2020, p. 12");
  CHECK(ex[0].sources[0].label == Label::irrelevant);
}

TEST_CASE("synsciqa: the real GenSearch_test imports fully with gold labels",
          "[synsciqa][shared]") {
  SynsciqaReport report;
  auto ex =
      import_synsciqa(dataset_path("synsciqa/GenSearch_test.csv"),
                      dataset_path("synsciqa/GenSearch_test_with_golden_sources.csv"), &report);
  CHECK(ex.size() == 106);
  CHECK(report.no_relevant == 20);
  CHECK(report.unlabelled_sources == 0);
  CHECK(report.unmatched_golden_names == 0);
  CHECK(report.problems.empty());
  CHECK(ex[0].id == "gensearch_test-0000");
  CHECK(ex[0].question == "What are the prerequisites to become a chemistry teacher?");
}

TEST_CASE("synsciqa: the real SynSciQA++ imports fully with silver labels", "[synsciqa][shared]") {
  SynsciqaReport report;
  auto ex = import_synsciqa(dataset_path("synsciqa/SynSciQA++.json"), std::nullopt, &report);
  CHECK(ex.size() == 669);
  CHECK(report.duplicate_names == 83);  // README: 83 of 669
  // 88 teacher answers hold no citation at all (the README says 95; a count of answers without
  // any "(..., year...)" group gives 88 too).
  CHECK(report.no_relevant == 88);
  // The one unresolvable teacher citation: record 357 cites "Wan et al., 2018, p. 23" while
  // the prompt has "Wan et al., 2018, p. 32" and "Wan, 2018, p. 23".
  CHECK(report.unresolved_citations == 1);
  CHECK(report.silver_from == "response");
  for (const auto& e : ex) {
    CHECK(e.labels == LabelKind::silver);
    CHECK(e.split == "train");
    CHECK(e.references.size() == 1);
  }
  CHECK(ex[0].id == "synsciqa++-0000");
  CHECK(ex[0].question == "How does proteomics differ from genomics?");
}

TEST_CASE("synsciqa: imported examples survive a JSONL round trip", "[synsciqa][shared]") {
  auto ex =
      import_synsciqa(dataset_path("synsciqa/GenSearch_test.csv"),
                      dataset_path("synsciqa/GenSearch_test_with_golden_sources.csv"), nullptr);
  auto path = (temp_dir("synsciqa") / "gensearch.jsonl").string();
  write_examples_jsonl(path, ex);
  auto back = read_examples_jsonl(path);
  REQUIRE(back.size() == ex.size());
  for (std::size_t i = 0; i < ex.size(); ++i) {
    CHECK(back[i].id == ex[i].id);
    CHECK(back[i].references == ex[i].references);
    REQUIRE(back[i].sources.size() == ex[i].sources.size());
    for (std::size_t k = 0; k < ex[i].sources.size(); ++k) {
      CHECK(back[i].sources[k].text == ex[i].sources[k].text);
      CHECK(back[i].sources[k].label == ex[i].sources[k].label);
    }
  }
}
