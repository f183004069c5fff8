#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/error.h"
#include "data/rage_import.h"
#include "tests/support/test_paths.h"

using namespace citeforge::data;
namespace fs = std::filesystem;

namespace {

// A tiny BEIR-style data set: two queries about rivers and birds, a corpus of ten documents.
struct Fixture {
  fs::path dir = citeforge::testing::temp_dir("rage");
  RageFiles files;

  Fixture() {
    write("corpus.jsonl",
          R"({"_id": "d1", "title": "Nile", "text": "The Nile is the longest river in Africa."}
{"_id": "d2", "title": "Amazon", "text": "The Amazon river carries the most water."}
{"_id": "d3", "title": "Robin", "text": "The robin is a small bird with a red breast."}
{"_id": "d4", "title": "Danube", "text": "The Danube river flows through Vienna."}
{"_id": "d5", "title": "", "text": "Rivers in Africa include the Congo and the Niger."}
{"_id": "d6", "title": "Crow", "text": "Crows are clever black birds."}
{"_id": "d7", "title": "Bread", "text": "Bread is baked from flour and water."}
{"_id": "d8", "title": "Tea", "text": "Tea is a drink made from leaves."}
{"_id": 9, "title": "Sparrow", "text": "The sparrow is a small brown bird."}
{"_id": "d10", "title": "Salt", "text": "Salt is mined or taken from the sea."}
)");
    write("queries.jsonl", R"({"_id": "q1", "text": "What is the longest river in Africa?"}
{"_id": "q2", "text": "Which small bird has a red breast?"}
{"_id": "q3", "text": "An unjudged query"}
)");
    write("relevant.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\nq2\td9\t0\n");
    write("irrelevant.tsv",
          "query-id\tcorpus-id\tscore\nq1\td7\t1\nq1\td8\t1\nq1\td10\t1\nq1\td6\t1\n"
          "q2\td7\t1\nq2\td8\t1\nq2\td10\t1\nq2\td2\t1\n");
    write("seemingly.tsv",
          "query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td4\t1\nq1\td5\t1\nq1\td1\t1\n"
          "q2\t9\t1\nq2\td6\t1\n");
    files.corpus = path("corpus.jsonl");
    files.queries = path("queries.jsonl");
    files.relevant = path("relevant.tsv");
    files.irrelevant = path("irrelevant.tsv");
    files.seemingly_relevant = path("seemingly.tsv");
  }
  ~Fixture() { fs::remove_all(dir); }

  std::string path(const std::string& name) const { return (dir / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return path(name);
  }
};

RageImportOptions options() {
  RageImportOptions o;
  o.mixture.seed = 4;
  return o;
}

std::map<Label, std::set<std::string>> by_label(const Example& e) {
  std::map<Label, std::set<std::string>> out;
  for (const auto& s : e.sources) out[s.label].insert(s.text);
  return out;
}

std::string error_of(const RageFiles& files) {
  try {
    import_rage(files, options());
  } catch (const citeforge::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("rage import: every mapping from files gives gold examples with full mixtures") {
  Fixture f;
  RageReport report;
  auto examples = import_rage(f.files, options(), &report);
  CHECK(report.documents == 10);
  CHECK(report.queries == 3);
  CHECK(report.relevant_pairs == 2);
  CHECK(report.non_positive_scores == 1);
  CHECK(report.queries_without_relevant == 1);
  CHECK_FALSE(report.mined_seemingly_relevant);
  CHECK_FALSE(report.sampled_irrelevant);
  REQUIRE(examples.size() == 2);

  const Example& q1 = examples[0];
  CHECK(q1.id == "rage-q1");
  CHECK(q1.origin == "rage");
  CHECK(q1.split == "test");
  CHECK(q1.question == "What is the longest river in Africa?");
  CHECK(q1.citation_style == CitationStyle::numeric);
  CHECK(q1.labels == LabelKind::gold);
  auto labels = by_label(q1);
  CHECK(labels[Label::relevant] ==
        std::set<std::string>{"The Nile is the longest river in Africa."});
  CHECK(labels[Label::irrelevant].size() == 3);
  // d1 is listed as seemingly relevant too; relevant wins, leaving three candidates.
  CHECK(labels[Label::seemingly_relevant].size() == 3);
  CHECK_FALSE(labels[Label::seemingly_relevant].count("The Nile is the longest river in Africa."));
  for (std::size_t i = 0; i < q1.sources.size(); ++i)
    CHECK(q1.sources[i].key == static_cast<int>(i) + 1);
  // Source names are titles, or the document id when a document has none.
  std::set<std::string> names;
  for (const auto& s : q1.sources) names.insert(s.name);
  CHECK(names.count("Nile"));
  CHECK(names.count("d5"));

  // A numeric JSON id (9) matches the qrels' "9"; the score-0 row for d9 is no relevance.
  auto q2 = by_label(examples[1]);
  CHECK(q2[Label::relevant].size() == 1);
  CHECK(q2[Label::seemingly_relevant].count("The sparrow is a small brown bird."));

  // Reproducible from the seed.
  auto again = import_rage(f.files, options());
  for (std::size_t i = 0; i < examples.size(); ++i)
    for (std::size_t k = 0; k < examples[i].sources.size(); ++k)
      CHECK(again[i].sources[k].text == examples[i].sources[k].text);
}

TEST_CASE("rage import: missing seemingly relevant mapping is mined with BM25") {
  Fixture f;
  f.files.seemingly_relevant.reset();
  RageImportOptions o = options();
  o.mined_seemingly_relevant = 2;  // the two nearest neighbours; the mixture takes both
  o.mixture.seemingly_relevant = 2;
  RageReport report;
  auto examples = import_rage(f.files, o, &report);
  CHECK(report.mined_seemingly_relevant);
  CHECK(report.seemingly_relevant_pairs == 4);
  REQUIRE(examples.size() == 2);
  CHECK(examples[0].labels == LabelKind::silver);
  // BM25 neighbours of "What is the longest river in Africa?" other than the answer itself: the
  // other Africa document first, then a river document; never the relevant one.
  auto q1 = by_label(examples[0]);
  REQUIRE(q1[Label::seemingly_relevant].size() == 2);
  CHECK(q1[Label::seemingly_relevant].count("Rivers in Africa include the Congo and the Niger."));
  for (const auto& text : q1[Label::seemingly_relevant])
    CHECK((text.find("river") != std::string::npos || text.find("Africa") != std::string::npos));
  CHECK_FALSE(q1[Label::seemingly_relevant].count("The Nile is the longest river in Africa."));
  auto q2 = by_label(examples[1]);
  CHECK(q2[Label::seemingly_relevant].count("The sparrow is a small brown bird."));
}

TEST_CASE("rage import: missing irrelevant mapping is sampled from the corpus") {
  Fixture f;
  f.files.irrelevant.reset();
  RageReport report;
  auto examples = import_rage(f.files, options(), &report);
  CHECK(report.sampled_irrelevant);
  for (const auto& e : examples) {
    auto labels = by_label(e);
    CHECK(labels[Label::irrelevant].size() == 3);
    std::set<std::string> all;
    for (const auto& s : e.sources) CHECK(all.insert(s.text).second);  // no document twice
  }
}

TEST_CASE("rage import: qrels as CSV or JSONL give the same examples as TSV") {
  Fixture f;
  auto tsv = import_rage(f.files, options());
  f.files.relevant = f.write("relevant.csv", "query-id,corpus-id,score\nq1,d1,1\nq2,d3,1\n");
  f.files.irrelevant = f.write("irrelevant.jsonl",
                               "{\"query-id\": \"q1\", \"corpus-id\": \"d7\", \"score\": 1}\n"
                               "{\"query-id\": \"q1\", \"corpus-id\": \"d8\", \"score\": 1}\n"
                               "{\"query-id\": \"q1\", \"corpus-id\": \"d10\", \"score\": 1}\n"
                               "{\"query-id\": \"q1\", \"corpus-id\": \"d6\"}\n"
                               "{\"query-id\": \"q2\", \"corpus-id\": \"d7\", \"score\": 1}\n"
                               "{\"query-id\": \"q2\", \"corpus-id\": \"d8\", \"score\": 1}\n"
                               "{\"query-id\": \"q2\", \"corpus-id\": \"d10\", \"score\": 1}\n"
                               "{\"query-id\": \"q2\", \"corpus-id\": \"d2\", \"score\": 1}\n");
  auto mixed = import_rage(f.files, options());
  REQUIRE(mixed.size() == tsv.size());
  for (std::size_t i = 0; i < tsv.size(); ++i) {
    REQUIRE(mixed[i].sources.size() == tsv[i].sources.size());
    for (std::size_t k = 0; k < tsv[i].sources.size(); ++k) {
      CHECK(mixed[i].sources[k].text == tsv[i].sources[k].text);
      CHECK(mixed[i].sources[k].label == tsv[i].sources[k].label);
    }
  }
}

TEST_CASE("rage import: malformed inputs name file, line and field") {
  Fixture f;
  SECTION("unknown document id in a qrels line") {
    f.files.relevant =
        f.write("relevant.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\tdX\t1\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("relevant.tsv: line 3") &&
                                      Catch::Contains("corpus-id") &&
                                      Catch::Contains("unknown document 'dX'"));
  }
  SECTION("unknown query id in a qrels line") {
    f.files.irrelevant = f.write("irrelevant.tsv", "query-id\tcorpus-id\tscore\nq9\td1\t1\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("irrelevant.tsv: line 2") &&
                                      Catch::Contains("query-id") &&
                                      Catch::Contains("unknown query 'q9'"));
  }
  SECTION("missing column in the qrels header") {
    f.files.relevant = f.write("relevant.tsv", "query-id\tdoc\tscore\nq1\td1\t1\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("relevant.tsv: line 1") &&
                                      Catch::Contains("missing column 'corpus-id'"));
  }
  SECTION("a qrels row with too few cells") {
    f.files.relevant = f.write("relevant.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n");
    CHECK_THAT(error_of(f.files),
               Catch::Contains("relevant.tsv: line 2") && Catch::Contains("tab-separated"));
  }
  SECTION("a score that is not a number") {
    f.files.relevant = f.write("relevant.csv", "query-id,corpus-id,score\nq1,d1,high\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("relevant.csv: line 2") &&
                                      Catch::Contains("score") && Catch::Contains("'high'"));
  }
  SECTION("bad JSON in the corpus") {
    f.files.corpus =
        f.write("corpus.jsonl", "{\"_id\": \"d1\", \"text\": \"ok\"}\n{\"_id\": \"d2\", \n");
    CHECK_THAT(error_of(f.files),
               Catch::Contains("corpus.jsonl: line 2") && Catch::Contains("invalid JSON"));
  }
  SECTION("a query without text") {
    f.files.queries =
        f.write("queries.jsonl", "{\"_id\": \"q1\", \"text\": \"x\"}\n{\"_id\": \"q2\"}\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("queries.jsonl: line 2") &&
                                      Catch::Contains("field 'text': missing"));
  }
  SECTION("a field of the wrong type") {
    f.files.corpus = f.write("corpus.jsonl", "{\"_id\": \"d1\", \"text\": [1, 2]}\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("line 1") && Catch::Contains("field 'text'") &&
                                      Catch::Contains("array"));
  }
  SECTION("a duplicate document id") {
    f.files.corpus = f.write(
        "corpus.jsonl", "{\"_id\": \"d1\", \"text\": \"a\"}\n{\"_id\": \"d1\", \"text\": \"b\"}\n");
    CHECK_THAT(error_of(f.files), Catch::Contains("corpus.jsonl: line 2") &&
                                      Catch::Contains("duplicate document id 'd1'"));
  }
  SECTION("an unknown file type") {
    f.files.relevant = f.write("relevant.parquet", "x");
    CHECK_THAT(error_of(f.files),
               Catch::Contains("relevant.parquet") && Catch::Contains("unknown file type"));
  }
  SECTION("a missing file") {
    f.files.queries = f.path("nope.jsonl");
    CHECK_THAT(error_of(f.files), Catch::Contains("nope.jsonl"));
  }
}
