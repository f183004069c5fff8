#include "rewards/text_overlap.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "common/error.h"

namespace citeforge::rewards {
namespace {

// A compiled PCRE2 pattern (UTF, Unicode properties) and global substitution with it.
class Substitution {
 public:
  Substitution(const std::string& pattern, std::string replacement)
      : replacement_(std::move(replacement)) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!code_) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      throw Error("text_overlap: pattern " + pattern + ": " + reinterpret_cast<char*>(message));
    }
  }
  ~Substitution() { pcre2_code_free(code_); }
  Substitution(const Substitution&) = delete;
  Substitution& operator=(const Substitution&) = delete;

  std::string apply(const std::string& text) const {
    std::string out(text.size() * 3 + 64, '\0');
    for (;;) {
      PCRE2_SIZE length = out.size();
      const int rc = pcre2_substitute(
          code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
          PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, nullptr, nullptr,
          reinterpret_cast<PCRE2_SPTR>(replacement_.data()), replacement_.size(),
          reinterpret_cast<PCRE2_UCHAR*>(out.data()), &length);
      if (rc == PCRE2_ERROR_NOMEMORY) {
        out.resize(length + 1);
        continue;
      }
      if (rc < 0) {
        // Not valid UTF-8: the text cannot be tokenized as sacrebleu would read it.
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof(message));
        throw Error(std::string("text_overlap: ") + reinterpret_cast<char*>(message));
      }
      out.resize(length);
      return out;
    }
  }

 private:
  pcre2_code* code_ = nullptr;
  std::string replacement_;
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::vector<std::string> split_spaces(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

using Ngrams = std::map<std::vector<std::string>, int>;

Ngrams ngrams(const std::vector<std::string>& tokens, std::size_t n) {
  Ngrams out;
  for (std::size_t i = 0; i + n <= tokens.size(); ++i)
    ++out[std::vector<std::string>(tokens.begin() + i, tokens.begin() + i + n)];
  return out;
}

}  // namespace

std::vector<std::string> rouge_tokens(const std::string& text) {
  // Lower-case ASCII; every other byte is outside [a-z0-9] and separates tokens, as in
  // rouge-score, whose lower() can turn a few non-ASCII letters into ASCII ones (the Kelvin
  // sign) where this keeps them as separators.
  std::vector<std::string> tokens;
  std::string current;
  for (char c : text) {
    const char lower = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    if ((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9')) {
      current.push_back(lower);
    } else if (!current.empty()) {
      tokens.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

RougeScore rouge_l(const std::string& candidate, const std::string& reference) {
  const auto c = rouge_tokens(candidate), r = rouge_tokens(reference);
  if (c.empty() || r.empty()) return {};
  std::vector<int> previous(c.size() + 1, 0), row(c.size() + 1, 0);
  for (std::size_t i = 1; i <= r.size(); ++i) {
    for (std::size_t j = 1; j <= c.size(); ++j)
      row[j] = r[i - 1] == c[j - 1] ? previous[j - 1] + 1 : std::max(previous[j], row[j - 1]);
    std::swap(previous, row);
  }
  const double lcs = previous[c.size()];
  RougeScore s;
  s.precision = lcs / double(c.size());
  s.recall = lcs / double(r.size());
  s.f = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
  return s;
}

RougeScore rouge_l(const std::string& candidate, const std::vector<std::string>& references) {
  RougeScore best;
  bool first = true;
  for (const auto& r : references) {
    const auto s = rouge_l(candidate, r);
    if (first || s.f > best.f) best = s;
    first = false;
  }
  return best;
}

std::string tokenize_13a(const std::string& text) {
  static const Substitution symbols(R"(([\{-\~\[-\` -\&\(-\+\:-\@\/]))", " $1 ");
  static const Substitution period_after(R"(([^0-9])([\.,]))", "$1 $2 ");
  static const Substitution period_before(R"(([\.,])([^0-9]))", " $1 $2");
  static const Substitution digit_dash(R"(([0-9])(-))", "$1 $2 ");
  static const Substitution spaces(R"(\s+)", " ");
  std::string line = replace_all(text, "<skipped>", "");
  line = replace_all(line, "-\n", "");
  line = replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    line = replace_all(line, "&quot;", "\"");
    line = replace_all(line, "&amp;", "&");
    line = replace_all(line, "&lt;", "<");
    line = replace_all(line, "&gt;", ">");
  }
  line = " " + line + " ";
  for (const auto* step : {&symbols, &period_after, &period_before, &digit_dash})
    line = step->apply(line);
  line = spaces.apply(line);
  const auto begin = line.find_first_not_of(' ');
  if (begin == std::string::npos) return "";
  return line.substr(begin, line.find_last_not_of(' ') - begin + 1);
}

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  for (std::size_t n = 0; n < 4; ++n) {
    correct[n] += other.correct[n];
    total[n] += other.total[n];
  }
  candidate_length += other.candidate_length;
  reference_length += other.reference_length;
  return *this;
}

BleuStats bleu_stats(const std::string& candidate, const std::vector<std::string>& references) {
  BleuStats s;
  const auto tokens = split_spaces(tokenize_13a(candidate));
  s.candidate_length = double(tokens.size());
  std::vector<std::vector<std::string>> refs;
  for (const auto& r : references) refs.push_back(split_spaces(tokenize_13a(r)));
  // The closest reference length, the shorter on a tie.
  double closest = -1, closest_diff = -1;
  for (const auto& r : refs) {
    const double diff = std::abs(double(r.size()) - s.candidate_length);
    if (closest_diff < 0 || diff < closest_diff || (diff == closest_diff && r.size() < closest)) {
      closest_diff = diff;
      closest = double(r.size());
    }
  }
  s.reference_length = std::max(0.0, closest);
  for (std::size_t n = 1; n <= 4; ++n) {
    Ngrams most;  // each n-gram's largest count in any one reference
    for (const auto& r : refs)
      for (const auto& [gram, count] : ngrams(r, n)) most[gram] = std::max(most[gram], count);
    for (const auto& [gram, count] : ngrams(tokens, n)) {
      const auto it = most.find(gram);
      s.correct[n - 1] += std::min(count, it == most.end() ? 0 : it->second);
      s.total[n - 1] += count;
    }
  }
  return s;
}

double bleu_score(const BleuStats& s, bool effective_order) {
  const double bp =
      s.candidate_length < s.reference_length
          ? (s.candidate_length > 0 ? std::exp(1.0 - s.reference_length / s.candidate_length) : 0.0)
          : 1.0;
  if (std::all_of(s.correct.begin(), s.correct.end(), [](double c) { return c == 0; })) return 0.0;
  std::vector<double> precisions(4, 0.0);
  double smooth = 1.0;
  std::size_t order = 4;
  for (std::size_t n = 0; n < 4; ++n) {
    if (s.total[n] == 0) break;
    if (effective_order) order = n + 1;
    if (s.correct[n] == 0) {
      smooth *= 2;
      precisions[n] = 100.0 / (smooth * s.total[n]);
    } else {
      precisions[n] = 100.0 * s.correct[n] / s.total[n];
    }
  }
  double log_sum = 0;
  // sacrebleu's my_log: a precision of 0 counts as a huge negative log, not -inf.
  for (std::size_t n = 0; n < order; ++n)
    log_sum += precisions[n] > 0 ? std::log(precisions[n]) : -9999999999.0;
  return bp * std::exp(log_sum / double(order));
}

double sentence_bleu(const std::string& candidate, const std::vector<std::string>& references) {
  return bleu_score(bleu_stats(candidate, references), true);
}

double corpus_bleu(const std::vector<std::string>& candidates,
                   const std::vector<std::vector<std::string>>& references) {
  if (candidates.size() != references.size())
    throw Error("corpus_bleu: " + std::to_string(candidates.size()) + " candidates but " +
                std::to_string(references.size()) + " reference lists");
  BleuStats total;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    total += bleu_stats(candidates[i], references[i]);
  return bleu_score(total, false);
}

}  // namespace citeforge::rewards
