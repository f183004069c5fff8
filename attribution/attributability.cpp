#include "attribution/attributability.h"

#include <algorithm>

#include "data/citations.h"
#include "rewards/metrics.h"

namespace citeforge::attribution {

std::vector<CitedSentence> cited_sentences(const data::Example& example,
                                           const std::string& answer) {
  std::vector<CitedSentence> out;
  const auto parsed = data::parse_citations(answer, example.sources, example.citation_style);
  if (parsed.groups.empty()) return out;
  for (const auto& [b, e] : rewards::split_sentences(answer)) {
    data::ParsedCitations own;  // the sentence's groups, offsets within the sentence
    CitedSentence sentence;
    sentence.formatted = true;
    for (const auto& g : parsed.groups) {
      if (g.begin < b || g.begin >= e) continue;
      data::CitationGroup shifted = g;
      shifted.begin -= b;
      shifted.end = std::min(g.end, e) - b;
      own.groups.push_back(shifted);
      sentence.formatted = sentence.formatted && g.well_formed();
      for (const auto& c : g.citations)
        for (int k : c.keys)
          if (std::find(sentence.keys.begin(), sentence.keys.end(), k) == sentence.keys.end())
            sentence.keys.push_back(k);
    }
    sentence.formatted = sentence.formatted && !own.groups.empty();
    sentence.text = data::strip_citations(answer.substr(b, e - b), own);
    if (sentence.text.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    out.push_back(std::move(sentence));
  }
  return out;
}

Attributability answer_attributability(const data::Example& example, const std::string& answer,
                                       const SupportJudge& judge, double threshold) {
  Attributability out;
  for (const auto& sentence : cited_sentences(example, answer)) {
    ++out.sentences;
    if (!sentence.formatted) {
      ++out.unformatted;
      continue;
    }
    std::vector<const data::Source*> cited;
    for (const auto& s : example.sources)
      if (std::find(sentence.keys.begin(), sentence.keys.end(), s.key) != sentence.keys.end())
        cited.push_back(&s);
    const auto score = judge(sentence.text, cited);
    if (!score) {
      ++out.unread;
      continue;
    }
    if (*score > threshold) ++out.entailed;
  }
  if (out.sentences > 0) out.score = double(out.entailed) / double(out.sentences);
  return out;
}

SupportJudge with_random_sources(const data::Example& example, const SupportJudge& judge,
                                 std::mt19937_64& rng) {
  return [&example, judge, &rng](const std::string& sentence,
                                 const std::vector<const data::Source*>& cited) {
    std::vector<std::size_t> order(example.sources.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<const data::Source*> drawn;
    for (std::size_t k = 0; k < cited.size() && k < order.size(); ++k)
      drawn.push_back(&example.sources[order[k]]);
    return judge(sentence, drawn);
  };
}

AttributabilityWithChance attributability_with_chance(const data::Example& example,
                                                      const std::string& answer,
                                                      const SupportJudge& judge, double threshold,
                                                      std::mt19937_64& rng) {
  AttributabilityWithChance out;
  out.judged = answer_attributability(example, answer, judge, threshold);
  if (out.judged.score)
    out.chance =
        answer_attributability(example, answer, with_random_sources(example, judge, rng), threshold)
            .score.value_or(0.0);
  return out;
}

SupportJudge yes_no_support_judge(YesNoJudge& judge) {
  return [&judge](const std::string& sentence, const std::vector<const data::Source*>& cited) {
    std::vector<std::pair<std::string, std::string>> texts;
    for (const auto* s : cited) texts.emplace_back(s->name.empty() ? "Source" : s->name, s->text);
    return yes_no_log_odds(judge, sentence, texts);
  };
}

}  // namespace citeforge::attribution
