#include "attribution/stop_words.h"

#include <string_view>
#include <unordered_set>

namespace citeforge::attribution {

bool is_stop_word(const std::string& lower_word) {
  // Closed-class words (articles, pronouns, prepositions, conjunctions, auxiliaries) and the
  // commonest adverbs; content words, numbers and years are kept since they identify documents.
  static const std::unordered_set<std::string_view> words = {
      "a",       "about", "above", "after",   "again",   "against", "all",     "also",    "am",
      "an",      "and",   "any",   "are",     "as",      "at",      "be",      "because", "been",
      "before",  "being", "below", "between", "both",    "but",     "by",      "can",     "could",
      "did",     "do",    "does",  "doing",   "down",    "during",  "each",    "either",  "etc",
      "even",    "few",   "for",   "from",    "further", "had",     "has",     "have",    "having",
      "he",      "her",   "here",  "hers",    "herself", "him",     "himself", "his",     "how",
      "however", "i",     "if",    "in",      "into",    "is",      "it",      "its",     "itself",
      "just",    "may",   "me",    "might",   "more",    "most",    "must",    "my",      "myself",
      "no",      "nor",   "not",   "of",      "off",     "on",      "once",    "only",    "or",
      "other",   "our",   "ours",  "out",     "over",    "own",     "same",    "shall",   "she",
      "should",  "so",    "some",  "such",    "than",    "that",    "the",     "their",   "theirs",
      "them",    "then",  "there", "these",   "they",    "this",    "those",   "through", "thus",
      "to",      "too",   "under", "until",   "up",      "upon",    "us",      "very",    "was",
      "we",      "were",  "what",  "when",    "where",   "whether", "which",   "while",   "who",
      "whom",    "whose", "why",   "will",    "with",    "within",  "without", "would",   "yet",
      "you",     "your",  "yours", "s",       "t"};
  return words.count(lower_word) > 0;
}

}  // namespace citeforge::attribution
