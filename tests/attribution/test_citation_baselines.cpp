// Citation baselines on hand-made answers whose right documents are known.
#include <catch2/catch.hpp>

#include "attribution/citation_baselines.h"
#include "data/citations.h"

using namespace citeforge;
using attribution::CitationBaseline;

namespace {

data::Example example(data::CitationStyle style = data::CitationStyle::numeric) {
  data::Example e;
  e.id = "q";
  e.question = "What happens?";
  e.citation_style = style;
  e.sources = {
      {1, "Reed, 2001", "Crabs molt their shells every spring.", data::Label::relevant},
      {2, "Olsen, 1999", "Volcanoes erupt when magma pressure builds up.", data::Label::irrelevant},
      {3, "Vang, 2010", "A violin has four strings tuned in fifths.", data::Label::relevant}};
  return e;
}

}  // namespace

TEST_CASE("cite_bm25 cites each sentence's best document, after removing the answer's citations",
          "[attribution][baselines]") {
  const std::string answer = "Crabs molt in spring [2]. The violin has four strings [1][2]. Hello.";
  CHECK(attribution::cite_by_baseline(example(), answer, CitationBaseline::bm25) ==
        "Crabs molt in spring [1]. The violin has four strings [3]. Hello.");
  // Named style: the source's name as the prompt gives it.
  CHECK(attribution::cite_by_baseline(
            example(data::CitationStyle::named), "Magma pressure builds (Reed, 2001).",
            CitationBaseline::bm25) == "Magma pressure builds (Olsen, 1999).");
}

TEST_CASE("cite_all and cite_first cite the same documents whatever the sentence says",
          "[attribution][baselines]") {
  const std::string answer = "Crabs molt [3]. Violins sing.";
  CHECK(attribution::cite_by_baseline(example(), answer, CitationBaseline::all) ==
        "Crabs molt [1][2][3]. Violins sing [1][2][3].");
  CHECK(attribution::cite_by_baseline(example(), answer, CitationBaseline::first) ==
        "Crabs molt [1]. Violins sing [1].");
  CHECK(attribution::cite_by_baseline(
            example(data::CitationStyle::named), "Crabs molt (Vang, 2010). Violins sing.",
            CitationBaseline::first) == "Crabs molt (Reed, 2001). Violins sing (Reed, 2001).");
  CHECK(attribution::cite_by_baseline(example(), "", CitationBaseline::all).empty());
  // What the rules cite parses back as valid citations of the prompt.
  const auto parsed =
      data::parse_citations(attribution::cite_by_baseline(example(data::CitationStyle::named),
                                                          answer, CitationBaseline::all),
                            example().sources, data::CitationStyle::named);
  CHECK(parsed.cited == std::set<int>{1, 2, 3});
  CHECK(parsed.invalid.empty());
}

TEST_CASE("citation baselines are named as configs and test sets spell them",
          "[attribution][baselines]") {
  for (auto b : attribution::citation_baselines())
    CHECK(attribution::find_citation_baseline(attribution::to_string(b)) == b);
  CHECK(attribution::find_citation_baseline("cite_most") == std::nullopt);
}
