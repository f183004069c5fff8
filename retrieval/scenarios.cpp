#include "retrieval/scenarios.h"

#include <regex>
#include <set>

#include "common/error.h"
#include "retrieval/generate_then_retrieve.h"

namespace citeforge::retrieval {

Scenario parse_scenario(const std::string& text, const std::string& where) {
  if (text == "given") return Scenario::given;
  if (text == "rtg") return Scenario::rtg;
  if (text == "gtr") return Scenario::gtr;
  throw Error(where + ": unknown scenario '" + text +
              "' (given: the gold passages, rtg: retrieve-then-generate, gtr: "
              "generate-then-retrieve)");
}

const char* to_string(Scenario scenario) {
  switch (scenario) {
    case Scenario::given:
      return "given";
    case Scenario::rtg:
      return "rtg";
    case Scenario::gtr:
      return "gtr";
  }
  return "?";
}

data::Example with_ranked_passages(const data::Example& example, const Corpus& corpus,
                                   const std::vector<std::size_t>& ranked) {
  const auto gold = gold_passages(corpus, example);
  const std::set<std::size_t> relevant(gold.begin(), gold.end());
  data::Example out = example;
  out.sources.clear();
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& p = corpus.passages[ranked[i]];
    out.sources.push_back(
        {int(i + 1), p.name.empty() ? p.id : p.name, p.text,
         relevant.count(ranked[i]) ? data::Label::relevant : data::Label::irrelevant});
  }
  return out;
}

std::vector<data::Example> retrieve_then_generate(const Corpus& corpus,
                                                  const std::vector<data::Example>& examples,
                                                  std::size_t k) {
  std::vector<data::Example> out;
  out.reserve(examples.size());
  for (const auto& e : examples)
    out.push_back(with_ranked_passages(e, corpus, retrieve(corpus, e.question, k)));
  return out;
}

data::Example closed_book(const data::Example& example) {
  data::Example out = example;
  out.sources.clear();
  return out;
}

ClosedBookAttribution attribute_closed_book_answer(const Corpus& corpus,
                                                   const data::Example& example,
                                                   const std::string& answer, std::size_t k) {
  // "[3]", "[1, 2]", "[1][2]": left in, they would read as citations of the retrieved list.
  static const std::regex bracketed(R"(\s*\[\s*\d+(\s*[,;]\s*\d+)*\s*\])");
  const std::string plain = std::regex_replace(answer, bracketed, "");
  const auto attributed = generate_then_retrieve(corpus, plain, k, k);
  ClosedBookAttribution out;
  out.example = with_retrieved_sources(example, corpus, attributed.passages);
  out.answer = attributed.answer;
  out.sentences = attributed.sentences;
  out.uncited_sentences = attributed.uncited_sentences;
  return out;
}

}  // namespace citeforge::retrieval
