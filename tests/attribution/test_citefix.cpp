// Citation correction (CiteFix) on hand-made answers whose right documents are known.
#include <catch2/catch.hpp>

#include "attribution/citefix.h"
#include "common/error.h"
#include "data/citations.h"

using namespace citeforge;
using attribution::FixMethod;
using attribution::FixOptions;
using Catch::Matchers::Contains;

namespace {

data::Example example(std::vector<std::pair<std::string, std::string>> sources,
                      data::CitationStyle style = data::CitationStyle::numeric,
                      std::string question = "What happens?") {
  data::Example e;
  e.id = "q";
  e.question = std::move(question);
  e.citation_style = style;
  int key = 0;
  for (auto& [name, text] : sources) e.sources.push_back({++key, name, text, data::Label::unknown});
  return e;
}

const data::Example kThree = example({{"", "Crabs molt their shells every spring."},
                                      {"", "Volcanoes erupt when magma pressure builds up."},
                                      {"", "A violin has four strings tuned in fifths."}});

std::string fix(const data::Example& e, const std::string& answer, FixOptions options = {}) {
  return attribution::fix_citations(e, answer, options).answer;
}

}  // namespace

TEST_CASE("factual points end at their citations, and adjacent groups form one point",
          "[attribution][citefix]") {
  const std::string answer = "Crabs molt [1][2]. Magma builds [3], [1] and violins sing [9]. Done.";
  auto points = attribution::factual_points(
      answer, data::parse_citations(answer, kThree.sources, data::CitationStyle::numeric));
  REQUIRE(points.size() == 3);
  CHECK(answer.substr(points[0].text_begin, points[0].text_end - points[0].text_begin) ==
        "Crabs molt ");
  CHECK(points[0].cited == std::vector<int>{1, 2});
  CHECK(points[1].cited == std::vector<int>{1, 3});  // "[3], [1]": one point
  CHECK(answer.substr(points[2].text_begin, points[2].text_end - points[2].text_begin) ==
        " and violins sing ");
  CHECK(points[2].cited.empty());
  CHECK(points[2].invalid == 1);  // [9] names no source
}

TEST_CASE("keyword matching moves each point's citation to the document it came from",
          "[attribution][citefix]") {
  auto fixed = attribution::fix_citations(
      kThree, "Crabs molt their shells in spring [2]. A violin has four strings [1].", {});
  CHECK(fixed.answer == "Crabs molt their shells in spring [1]. A violin has four strings [3].");
  CHECK(fixed.points == 2);
  CHECK(fixed.changed == 2);
  // A point keeps how many documents it cited.
  CHECK(fix(kThree, "Crabs molt in spring while magma pressure makes volcanoes erupt [3][1].") ==
        "Crabs molt in spring while magma pressure makes volcanoes erupt [1][2].");
  // A citation to a document that does not exist is re-assigned too.
  CHECK(fix(kThree, "Violins have four strings [7].") == "Violins have four strings [3].");
  // Right citations, in the answer's own spelling, stay as they are.
  CHECK(fix(kThree, "Volcanoes erupt [2]. Text after the last citation stays.") ==
        "Volcanoes erupt [2]. Text after the last citation stays.");
}

TEST_CASE("citation correction leaves alone what it has no evidence about",
          "[attribution][citefix]") {
  // No citation at all.
  CHECK(fix(kThree, "Crabs molt in spring.") == "Crabs molt in spring.");
  // A point that shares no word with any document keeps its citation (stop words do not count).
  CHECK(fix(kThree, "It is what it was [2].") == "It is what it was [2].");
  // No sources.
  CHECK(fix(example({}), "Crabs molt [1].") == "Crabs molt [1].");
  // An empty document is never chosen, even to fill a point's count.
  auto with_empty = example({{"", ""}, {"", "Crabs molt their shells."}});
  CHECK(fix(with_empty, "Crabs molt [1][2].") == "Crabs molt [2].");
  CHECK(fix(example({{"", ""}, {"", "  "}}), "Crabs molt [1].") == "Crabs molt [1].");
}

TEST_CASE("named citations are corrected to the right source's name", "[attribution][citefix]") {
  auto e = example({{"Smith, 2019, p. 4", "Volcanoes erupt when magma pressure builds up."},
                    {"Jones, 2020, p. 2", "Crabs molt their shells every spring."}},
                   data::CitationStyle::named);
  CHECK(fix(e, "Crabs molt every spring (Smith, 2019, p. 4).") ==
        "Crabs molt every spring (Jones, 2020, p. 2).");
  CHECK(fix(e, "Crabs molt every spring (Brown, 2001).") ==
        "Crabs molt every spring (Jones, 2020, p. 2).");
  // The result parses back to the intended source.
  const auto again = fix(e, "Magma pressure makes volcanoes erupt (Jones, 2020, p. 2).");
  CHECK(data::parse_citations(again, e.sources, e.citation_style).cited == std::set<int>{1});
}

TEST_CASE("keyword + BM25 breaks a keyword tie toward the document that answers the question",
          "[attribution][citefix]") {
  auto e = example({{"", "Salmon swim upstream to spawn in rivers."},
                    {"", "Salmon swim upstream; hatcheries in Norway release them."}},
                   data::CitationStyle::numeric, "Why do hatcheries in Norway release salmon?");
  const std::string answer = "Salmon swim upstream [1].";
  // Both documents share three keywords with the point: keyword matching keeps the citation.
  CHECK(fix(e, answer) == answer);
  FixOptions bm25{FixMethod::keyword_bm25, 0.25};
  CHECK(fix(e, answer, bm25) == "Salmon swim upstream [2].");
  auto scores = attribution::point_scores(e, "Salmon swim upstream", bm25);
  REQUIRE(scores.size() == 2);
  // Three shared keywords each, plus the question's BM25, which favours document 2.
  CHECK(scores[0] > 3.0);
  CHECK(scores[1] > scores[0]);
  // Weight 0 is keyword matching.
  CHECK(fix(e, answer, {FixMethod::keyword_bm25, 0.0}) == answer);
}

TEST_CASE("an unknown correction method is an error that lists the methods",
          "[attribution][citefix]") {
  CHECK_THROWS_WITH(attribution::parse_fix_method("bm42"),
                    Contains("bm42") && Contains("keyword, keyword_bm25, bertscore, attention, "
                                                 "ask_model"));
  CHECK(attribution::parse_fix_method("ask_model") == FixMethod::ask_model);
  CHECK(attribution::needs_model(FixMethod::attention));
  CHECK_FALSE(attribution::needs_model(FixMethod::keyword_bm25));
  // The lexical entry point refuses a model method instead of scoring without the model.
  CHECK_THROWS_WITH(attribution::fix_citations(kThree, "Crabs [2].", {FixMethod::bertscore}),
                    Contains("needs the model"));
  CHECK(attribution::parse_fix_method("keyword_bm25") == FixMethod::keyword_bm25);
}
