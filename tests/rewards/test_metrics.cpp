#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>
#include <tuple>

#include "common/error.h"
#include "rewards/metrics.h"

using citeforge::data::CitationStyle;
using citeforge::data::Example;
using citeforge::data::Label;
using namespace citeforge::rewards;

namespace {

// Numeric example whose source k (1-based) has labels[k-1].
Example numeric_example(const std::vector<Label>& labels) {
  Example e;
  e.id = "t";
  e.citation_style = CitationStyle::numeric;
  for (std::size_t i = 0; i < labels.size(); ++i)
    e.sources.push_back(
        {static_cast<int>(i) + 1, "doc" + std::to_string(i + 1), "text", labels[i]});
  return e;
}

constexpr Label Rel = Label::relevant;
constexpr Label Irr = Label::irrelevant;
constexpr Label Seem = Label::seemingly_relevant;
constexpr Label Unk = Label::unknown;

MetricOptions ignoring() {
  MetricOptions o;
  o.invalid_citations = InvalidCitations::ignore;
  return o;
}

}  // namespace

TEST_CASE("precision, recall, F1 and reward of a plain answer", "[metrics]") {
  // R = {1, 2}; the answer cites 1 (relevant) and 3 (irrelevant).
  auto m = score_answer(numeric_example({Rel, Rel, Irr, Seem}), "One [1]. Three [3].");
  CHECK(m.precision == Approx(0.5));
  CHECK(m.recall == Approx(0.5));
  CHECK(m.f1 == Approx(0.5));
  CHECK(m.reward == Approx(0.5));
  CHECK(m.distinct_citations == 2);
  CHECK(m.invalid_citations == 0);
  CHECK(m.source_quality == 0);  // cited an irrelevant source
  CHECK(m.answer_length == 4);
}

TEST_CASE("invalid citations count as cited-but-wrong under penalize", "[metrics]") {
  // D = {1}, I = |{9, 8}| = 2, R = {1, 2}: P = 1/3, R = 1/2, F1 = 2/5, reward = 5/12.
  auto e = numeric_example({Rel, Rel, Irr, Irr});
  auto m = score_answer(e, "A [1]. B [9]. C [9]. D [8].");
  CHECK(m.precision == Approx(1.0 / 3));
  CHECK(m.recall == Approx(0.5));
  CHECK(m.f1 == Approx(0.4));
  CHECK(m.reward == Approx(5.0 / 12));
  CHECK(m.distinct_citations == 1);
  CHECK(m.invalid_citations == 2);
  CHECK(m.source_quality == 0);
}

TEST_CASE("invalid_citations: ignore sets I = 0 but still reports them", "[metrics]") {
  auto e = numeric_example({Rel, Rel, Irr, Irr});
  auto m = score_answer(e, "A [1]. B [9]. C [9]. D [8].", ignoring());
  CHECK(m.precision == Approx(1.0));
  CHECK(m.recall == Approx(0.5));
  CHECK(m.f1 == Approx(2.0 / 3));
  CHECK(m.reward == Approx(0.75));
  CHECK(m.invalid_citations == 2);
  CHECK(m.source_quality == 1);
}

TEST_CASE("edge case: no relevant source and the answer cites nothing", "[metrics]") {
  auto m = score_answer(numeric_example({Irr, Irr, Seem}), "No source answers the question.");
  CHECK(m.precision == 1);
  CHECK(m.recall == 1);
  CHECK(m.f1 == 1);
  CHECK(m.reward == 1);
  CHECK(m.source_quality == 1);
  CHECK(m.format_quality == 1);  // a correct abstention needs no citation
  CHECK(m.distinct_citations == 0);
}

TEST_CASE("edge case: no relevant source and the answer cites something", "[metrics]") {
  auto m = score_answer(numeric_example({Irr, Irr, Seem}), "It is [3].");
  CHECK(m.precision == 0);
  CHECK(m.recall == 0);
  CHECK(m.f1 == 0);
  CHECK(m.reward == 0);
  CHECK(m.source_quality == 0);
  CHECK(m.format_quality == 1);  // the format is right even though the source is wrong
}

TEST_CASE("edge case: relevant sources exist and the answer cites nothing", "[metrics]") {
  auto m = score_answer(numeric_example({Rel, Irr}), "No answer can be given.");
  CHECK(m.precision == 0);
  CHECK(m.recall == 0);
  CHECK(m.f1 == 0);
  CHECK(m.source_quality == 0);
  CHECK(m.format_quality == 0);
}

TEST_CASE("edge case: only invalid citations and no relevant source", "[metrics]") {
  auto e = numeric_example({Irr, Irr});
  auto penalized = score_answer(e, "It is [7].");
  CHECK(penalized.precision == 0);
  CHECK(penalized.recall == 0);
  CHECK(penalized.source_quality == 0);
  // Under ignore the answer "cites nothing", a correct abstention.
  auto ignored = score_answer(e, "It is [7].", ignoring());
  CHECK(ignored.precision == 1);
  CHECK(ignored.recall == 1);
  CHECK(ignored.source_quality == 1);
}

TEST_CASE("source quality follows docs/design.md §3", "[metrics]") {
  CHECK(score_answer(numeric_example({Rel, Rel, Irr}), "A [1]. B [2].").source_quality == 1);
  CHECK(score_answer(numeric_example({Rel, Rel, Irr}), "A [1].").source_quality ==
        1);  // not all needed
  CHECK(score_answer(numeric_example({Rel, Seem}), "A [1]. B [2].").source_quality == 0);
  CHECK(score_answer(numeric_example({Rel, Irr}), "A [1] [5].").source_quality == 0);  // invalid
  // An unlabelled source is neither relevant nor irrelevant: citing it is not wrong.
  auto unknown = score_answer(numeric_example({Unk, Irr}), "A [1].");
  CHECK(unknown.source_quality == 1);
  CHECK(unknown.precision == 0);  // but it earns no precision either (|R| = 0, cites something)
}

TEST_CASE("precision_recall and f1_score directly", "[metrics]") {
  auto pr = precision_recall(2, 3, 1, 4);  // |D∩R| = 2, |D| = 3, I = 1, |R| = 4
  CHECK(pr.precision == Approx(0.5));
  CHECK(pr.recall == Approx(0.5));
  CHECK(precision_recall(0, 0, 0, 0).precision == 1);
  CHECK(precision_recall(0, 0, 0, 2).recall == 0);
  CHECK(precision_recall(0, 0, 1, 0).precision == 0);
  CHECK(f1_score(0, 0) == 0);
  CHECK(f1_score(1, 0.5) == Approx(2.0 / 3));
}

TEST_CASE("answer length splits on any whitespace", "[metrics]") {
  CHECK(count_words("") == 0);
  CHECK(count_words("   ") == 0);
  CHECK(count_words("one") == 1);
  CHECK(count_words(" a  b\tc\nd\r\ne ") == 5);
  CHECK(count_words("a\xC2\xA0"
                    "b\xE2\x80\x89"
                    "c\xE3\x80\x80"
                    "d") == 4);                         // NBSP, thin, ideographic
  CHECK(count_words("caf\xC3\xA9 na\xC3\xAFve") == 2);  // UTF-8 letters are not spaces
  CHECK(count_words("(Smith, 2019, p. 3).") == 4);
}

TEST_CASE("sentences split at terminators outside citations and abbreviations", "[metrics]") {
  std::string a = "Smith et al. (2019, p. 3) said so. Then e.g. this one. 3.5 is high! Why? End";
  auto spans = split_sentences(a);
  std::vector<std::string> got;
  for (auto [b, e] : spans) got.push_back(a.substr(b, e - b));
  CHECK(got == std::vector<std::string>{"Smith et al. (2019, p. 3) said so.", "Then e.g. this one.",
                                        "3.5 is high!", "Why?", "End"});
  CHECK(split_sentences("").empty());
  CHECK(split_sentences(" \n ").empty());
  // A citation group's own "p." and "." never end a sentence.
  CHECK(split_sentences("It is (Smith et al., 2019, p. 3). Next (A. B., 2001).").size() == 2);
}

TEST_CASE("format quality: share of sentences ending in a well-formed citation", "[metrics]") {
  Example e;
  e.citation_style = CitationStyle::named;
  e.sources = {{1, "Smith, 2019, p. 3", "t", Rel}, {2, "Gupta et al., 2018, p.42", "t", Rel}};
  // Well-formed, none, invalid, narrative (cites but does not end in a citation).
  std::string answer =
      "A is so (Smith, 2019, p. 3). B is so. C is so (Nope, 2001, p. 1). "
      "According to Gupta et al. (2018, p.42), D is so.";
  auto m = score_answer(e, answer);
  CHECK(m.format_quality == Approx(0.25));
  CHECK(score_answer(e, "A (Smith, 2019, p. 3). B (Gupta et al., 2018, p.42).").format_quality ==
        1);
  // A group citing one valid and one invalid source is not well-formed.
  CHECK(score_answer(e, "A (Smith, 2019, p. 3; Nope, 2001, p. 1).").format_quality == 0);
  // Numeric style: a sentence ends in [n].
  auto n = numeric_example({Rel, Irr});
  CHECK(score_answer(n, "A [1]. B [1] here. \"C [2].\"").format_quality == Approx(2.0 / 3));
}

TEST_CASE("citation overlap against a reference answer", "[metrics]") {
  auto e = numeric_example({Rel, Rel, Rel, Irr});
  // Answer {1, 2}, reference {2, 3}: one shared; P = 1/2, R = 1/2.
  auto m = score_answer(e, "A [1]. B [2].", {}, std::string("X [2]. Y [3]."));
  REQUIRE(m.overlap_precision);
  CHECK(*m.overlap_precision == Approx(0.5));
  CHECK(*m.overlap_recall == Approx(0.5));
  // With an invalid citation in the answer: P = 1 / (2 + 1).
  auto inv = score_answer(e, "A [1]. B [2]. C [9].", {}, std::string("X [2]. Y [3]."));
  CHECK(*inv.overlap_precision == Approx(1.0 / 3));
  // Both cite nothing: full agreement. One side cites nothing: none.
  auto none = score_answer(e, "Nothing.", {}, std::string("Nothing either."));
  CHECK(*none.overlap_precision == 1);
  CHECK(*none.overlap_recall == 1);
  CHECK(*score_answer(e, "A [1].", {}, std::string("Nothing.")).overlap_precision == 0);
  CHECK(*score_answer(e, "Nothing.", {}, std::string("A [1].")).overlap_recall == 0);
  CHECK_FALSE(score_answer(e, "A [1].").overlap_precision.has_value());
}

TEST_CASE("named_values lists every metric once, in report order", "[metrics]") {
  AnswerMetrics m;
  m.precision = 0.25;
  m.answer_length = 7;
  auto values = named_values(m);
  std::vector<std::string> names;
  for (const auto& [name, value] : values) names.push_back(name);
  CHECK(names == std::vector<std::string>{
                     "precision", "recall", "f1", "reward", "answer_length", "distinct_citations",
                     "invalid_citations", "source_quality", "source_quality_paper",
                     "format_quality", "chance_precision", "chance_recall", "chance_f1",
                     "chance_reward", "chance_source_quality", "chance_source_quality_paper"});
  CHECK(values[0].second == 0.25);
  CHECK(values[4].second == 7);
  m.overlap_precision = 0.5;
  m.overlap_recall = 1;
  CHECK(named_values(m).size() == 18);
}

TEST_CASE("invalid_citations option parses and names its origin on error", "[metrics]") {
  CHECK(parse_invalid_citations("penalize", "x") == InvalidCitations::penalize);
  CHECK(parse_invalid_citations("ignore", "x") == InvalidCitations::ignore);
  CHECK(std::string(to_string(InvalidCitations::ignore)) == "ignore");
  CHECK_THROWS_WITH(parse_invalid_citations("drop", "--invalid-citations"),
                    "--invalid-citations: expected 'penalize' or 'ignore', got 'drop'");
}

TEST_CASE("the chance reference equals citing as many documents at random", "[metrics][chance]") {
  // Exact expectations against a simulation of the random citer through the real formulas.
  std::mt19937 rng(7);
  for (auto [k, n, r] : std::vector<std::tuple<int, int, int>>{{1, 5, 1},
                                                               {2, 5, 1},
                                                               {3, 5, 2},
                                                               {5, 5, 2},
                                                               {2, 10, 3},
                                                               {4, 6, 0},
                                                               {0, 5, 2},
                                                               {7, 5, 2}}) {
    INFO("k " << k << " n " << n << " r " << r);
    const int draws = 40000;
    double p = 0, rc = 0, f1 = 0, sq = 0, sq_paper = 0;
    std::vector<int> docs(n);
    std::iota(docs.begin(), docs.end(), 0);  // documents 0..r-1 are the relevant ones
    for (int d = 0; d < draws; ++d) {
      std::shuffle(docs.begin(), docs.end(), rng);
      int cited = std::min(k, n), hits = 0;
      for (int i = 0; i < cited; ++i) hits += docs[i] < r ? 1 : 0;
      auto pr = precision_recall(hits, cited, 0, r);
      p += pr.precision;
      rc += pr.recall;
      f1 += f1_score(pr.precision, pr.recall);
      sq += cited == 0 ? (r == 0) : (hits == cited ? 1 : 0);
      sq_paper += hits == cited ? 1 : 0;  // no irrelevant document among those drawn
    }
    auto c = chance_reference(k, n, r);
    CHECK(c.precision == Approx(p / draws).margin(0.01));
    CHECK(c.recall == Approx(rc / draws).margin(0.01));
    CHECK(c.f1 == Approx(f1 / draws).margin(0.01));
    CHECK(c.source_quality == Approx(sq / draws).margin(0.01));
    CHECK(c.source_quality_paper == Approx(sq_paper / draws).margin(0.01));
  }
}

TEST_CASE("the paper's source quality fails only on a cited irrelevant source",
          "[metrics][source_quality]") {
  // Where the two definitions part: abstaining although a relevant source exists, and a
  // citation that names no source, fail `source_quality` but pass the paper's definition.
  auto e = numeric_example({Rel, Irr, Seem, Irr, Irr});
  auto abstain = score_answer(e, "No citations.");
  CHECK(abstain.source_quality == 0);
  CHECK(abstain.source_quality_paper == 1);
  CHECK(abstain.chance_source_quality_paper == 1);
  auto invalid_only = score_answer(e, "A [9].");
  CHECK(invalid_only.source_quality == 0);
  CHECK(invalid_only.source_quality_paper == 1);
  auto right = score_answer(e, "A [1].");
  CHECK(right.source_quality == 1);
  CHECK(right.source_quality_paper == 1);
  CHECK(right.chance_source_quality_paper == Approx(0.2));
  CHECK(score_answer(e, "A [1][2].").source_quality_paper == 0);
  CHECK(score_answer(e, "A [3].").source_quality_paper == 0);  // seemingly relevant is not
  auto unknown = numeric_example({Rel, Irr});
  unknown.sources[1].label = Label::unknown;
  CHECK(score_answer(unknown, "A [2].").source_quality_paper == 1);
}

TEST_CASE("every scored answer carries its chance reference", "[metrics][chance]") {
  auto e = numeric_example({Rel, Irr, Seem, Irr, Irr});
  auto m = score_answer(e, "A [1][2].");
  CHECK(m.chance_precision == Approx(0.2));
  CHECK(m.chance_recall == Approx(0.4));
  CHECK(m.chance_f1 == Approx(2.0 * 2 * 1 / (5.0 * 3)));
  CHECK(m.chance_reward == Approx(0.3));
  CHECK(m.chance_source_quality == Approx(0.0));  // two documents, only one relevant
  // An invalid citation counts as one more document cited at random.
  CHECK(score_answer(e, "A [1][9].").chance_recall == Approx(0.4));
  auto none = score_answer(e, "No citations.");
  CHECK(none.chance_precision == 0);
  CHECK(none.chance_f1 == 0);
}
