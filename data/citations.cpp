#include "data/citations.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace citeforge::data {

bool CitationGroup::well_formed() const {
  return !citations.empty() && std::all_of(citations.begin(), citations.end(),
                                           [](const Citation& c) { return c.valid(); });
}

namespace {

// Prose in parentheses can be long; citation groups never are. Capping what is examined keeps
// the parser linear on adversarial input (deeply nested or huge groups).
constexpr std::size_t kMaxGroupBytes = 2000;
constexpr std::size_t kNarrativeLookbackBytes = 200;

bool is_ascii_alnum(unsigned char c) {
  return std::isalnum(c) != 0 && c < 0x80;
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_digit(c); });
}

// Lower-cased words; ASCII punctuation and whitespace separate them, `&` is the word "and",
// bytes >= 0x80 (UTF-8) belong to words so "Ørsted" stays one word. Page markers are unified:
// "p.12", "p. 12", "pp. 12", "page 12" all become "p", "12".
std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::string current;
  auto flush = [&] {
    if (current.empty()) return;
    if (current == "page" || current == "pages" || current == "pp") {
      words.push_back("p");
    } else if ((current.size() > 1 && current[0] == 'p' && all_digits(current.substr(1))) ||
               (current.size() > 2 && current.rfind("pp", 0) == 0 &&
                all_digits(current.substr(2)))) {
      std::size_t digits = current.find_first_of("0123456789");
      words.push_back("p");
      words.push_back(current.substr(digits));
    } else {
      words.push_back(current);
    }
    current.clear();
  };
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80 || is_ascii_alnum(c)) {
      current.push_back(static_cast<char>(std::tolower(c)));
    } else {
      flush();
      if (c == '&') words.push_back("and");
    }
  }
  flush();
  return words;
}

std::string join(const std::vector<std::string>& words, std::size_t from = 0,
                 std::size_t to = std::string::npos) {
  std::string out;
  for (std::size_t i = from; i < std::min(to, words.size()); ++i) {
    if (!out.empty()) out += ' ';
    out += words[i];
  }
  return out;
}

// A year in a citation: 1000-2099, optionally with a disambiguating letter ("2019a").
bool is_year(const std::string& w) {
  std::size_t n = w.size();
  if (n == 5 && std::islower(static_cast<unsigned char>(w[4]))) n = 4;
  if (n != 4 || !all_digits(std::string_view(w).substr(0, 4))) return false;
  return w[0] == '1' || (w[0] == '2' && w[1] == '0');
}

// "author ... year [p] [page numbers]" split into its parts. `author` may be empty (narrative
// citation "(2018, p. 42)"); `has_year` is false for anything that is not citation-shaped.
struct NameKey {
  std::vector<std::string> author;
  std::string year;
  std::string page;
  bool has_year = false;
};

NameKey key_of(const std::vector<std::string>& words) {
  NameKey key;
  for (std::size_t i = words.size(); i-- > 0;) {
    if (!is_year(words[i])) continue;
    std::size_t j = i + 1;
    if (j < words.size() && words[j] == "p") ++j;
    bool tail_is_page = true;
    for (std::size_t k = j; k < words.size(); ++k)
      tail_is_page = tail_is_page && all_digits(words[k]);
    if (!tail_is_page || (j > i + 1 && j == words.size())) return key;  // "2019 p" or prose
    key.has_year = true;
    key.year = words[i].substr(0, 4);
    key.page = join(words, j);
    bool author_has_letter = false;
    for (std::size_t k = 0; k < i; ++k) {
      key.author.push_back(words[k]);
      for (char c : words[k]) author_has_letter = author_has_letter || !is_digit(c);
    }
    // "(1999-2005)" is a span of years, not "author 1999, year 2005".
    if (!author_has_letter) key.author.clear();
    if (!key.author.empty() && key.author.front() == "the") key.author.erase(key.author.begin());
    return key;
  }
  return key;
}

struct IndexedSource {
  int key;
  std::string normalized;
  NameKey name;
};

bool is_stopword(const std::string& w) {
  static const std::set<std::string> stop = {"and", "of", "the", "for", "on", "in",
                                             "at",  "to", "de",  "des", "du", "la"};
  return stop.count(w) > 0;
}

// "NASA" for "National Aeronautics and Space Administration": the cited author is one word,
// written in capitals in the answer, equal to the initials of the source author's words.
bool is_acronym_of(const std::vector<std::string>& cited, std::string_view raw,
                   const std::vector<std::string>& author) {
  if (cited.size() != 1 || cited[0].size() < 2 || author.size() < 2) return false;
  std::string initials;
  for (const auto& w : author)
    if (!is_stopword(w)) initials += w[0];
  if (initials != cited[0]) return false;
  std::string upper = cited[0];
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return raw.find(upper) != std::string_view::npos;
}

bool pages_compatible(const NameKey& cited, const NameKey& source) {
  return cited.page.empty() || source.page.empty() || cited.page == source.page;
}

enum class PartKind { prose, valid, invalid };

struct PartResult {
  PartKind kind = PartKind::prose;
  std::vector<int> keys;
  std::string normalized;
};

// Rules 1-3 of the header for one `;`-separated part. `before` is the answer text right before
// the group, used only for narrative citations.
std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words = words_of(name);
  if (!words.empty() && words.front() == "the") words.erase(words.begin());
  return words;
}

std::vector<int> exact_keys(std::string_view raw, const std::vector<IndexedSource>& sources) {
  std::string normalized = join(name_words(raw));
  std::vector<int> keys;
  if (normalized.empty()) return keys;
  for (const auto& s : sources)
    if (s.normalized == normalized) keys.push_back(s.key);
  return keys;
}

// `text` without its parenthesised sub-groups: "Smith, 2019 (Table 2)" -> "Smith, 2019 ".
std::string without_subgroups(std::string_view text) {
  std::string out;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (depth == 0) out.push_back(c);
    if (c == ')' && depth > 0) --depth;
  }
  return out;
}

PartResult match_part(std::string_view raw, std::string_view before,
                      const std::vector<IndexedSource>& sources) {
  PartResult result;
  // Exact names may hold parentheses ("World Health Organization (WHO), 2020"); the other
  // rules look at the part without its sub-groups, which are remarks or citations of their own.
  result.keys = exact_keys(raw, sources);
  if (!result.keys.empty()) {
    result.kind = PartKind::valid;
    return result;
  }
  std::vector<std::string> words = name_words(without_subgroups(raw));
  if (words.empty()) return result;
  result.normalized = join(words);
  NameKey cited = key_of(words);
  if (!cited.has_year) return result;
  if (!cited.author.empty()) {
    for (const auto& s : sources) {
      if (!s.name.has_year || s.name.year != cited.year || !pages_compatible(cited, s.name))
        continue;
      if (s.name.author == cited.author || is_acronym_of(cited.author, raw, s.name.author))
        result.keys.push_back(s.key);
    }
    result.kind = result.keys.empty() ? PartKind::invalid : PartKind::valid;
    return result;
  }
  // Narrative: the longest source author that ends the preceding words.
  std::vector<std::string> prior = words_of(before);
  std::size_t best = 0;
  for (const auto& s : sources) {
    const auto& author = s.name.author;
    if (!s.name.has_year || s.name.year != cited.year || !pages_compatible(cited, s.name)) continue;
    std::size_t length = 0;
    if (!author.empty() && author.size() <= prior.size() &&
        std::equal(author.begin(), author.end(), prior.end() - author.size())) {
      length = author.size();
    } else if (!prior.empty() && is_acronym_of({prior.back()}, before, author)) {
      length = 1;
    }
    if (length == 0 || length < best) continue;
    if (length > best) result.keys.clear();
    best = length;
    result.keys.push_back(s.key);
  }
  if (!result.keys.empty()) {
    result.kind = PartKind::valid;
  } else if (!cited.page.empty()) {
    result.kind = PartKind::invalid;  // "(2020, p. 1)" meant to cite something, but what?
  }
  return result;
}

std::string_view trim(std::string_view s) {
  const char* space = " \t\r\n\f\v";
  std::size_t b = s.find_first_not_of(space);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(space) - b + 1);
}

// Splits at `;` outside nested parentheses.
std::vector<std::string_view> split_parts(std::string_view content) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= content.size(); ++i) {
    char c = i < content.size() ? content[i] : ';';
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c == ';' && (depth == 0 || i == content.size())) {
      parts.push_back(trim(content.substr(start, i - start)));
      start = i + 1;
    }
  }
  return parts;
}

Citation to_citation(std::string_view text, std::vector<int> keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return Citation{std::string(text), std::move(keys)};
}

void add_group(ParsedCitations& out, CitationGroup group,
               const std::vector<std::string>& invalid_keys) {
  for (const auto& c : group.citations) out.cited.insert(c.keys.begin(), c.keys.end());
  out.invalid.insert(invalid_keys.begin(), invalid_keys.end());
  out.groups.push_back(std::move(group));
}

ParsedCitations parse_named(const std::string& answer, const std::vector<Source>& sources) {
  std::vector<IndexedSource> index;
  for (const auto& s : sources) {
    std::vector<std::string> words = name_words(s.name);
    index.push_back({s.key, join(words), key_of(words)});
  }
  // Balanced groups with their parent, in order of their opening parenthesis.
  struct Span {
    std::size_t open, close;
    int parent;
  };
  std::vector<Span> spans;
  std::vector<int> stack;
  for (std::size_t i = 0; i < answer.size(); ++i) {
    if (answer[i] == '(') {
      spans.push_back({i, std::string::npos, stack.empty() ? -1 : stack.back()});
      stack.push_back(static_cast<int>(spans.size()) - 1);
    } else if (answer[i] == ')' && !stack.empty()) {
      spans[stack.back()].close = i;
      stack.pop_back();
    }
  }
  // A nested group is looked at only when every enclosing group held no citation, so
  // "(see Smith, 2019 (Table 2))" is one citation, while in "(as in Star Wars (1977))" the
  // inner group still gets its chance.
  ParsedCitations out;
  std::vector<char> eligible(spans.size(), 0);
  for (std::size_t g = 0; g < spans.size(); ++g) {
    const Span& span = spans[g];
    int parent = span.parent;
    bool parent_open = parent < 0 || eligible[parent];
    eligible[g] = parent_open && span.close != std::string::npos;
    if (!eligible[g]) continue;
    std::string_view content(answer.data() + span.open + 1, span.close - span.open - 1);
    if (content.size() > kMaxGroupBytes) continue;
    std::size_t look = std::min(span.open, kNarrativeLookbackBytes);
    std::string_view before(answer.data() + span.open - look, look);

    CitationGroup group{span.open, span.close + 1, {}};
    std::vector<std::string> invalid_keys;
    std::vector<std::string_view> parts = split_parts(content);
    if (parts.size() > 1) {
      // A source whose name itself contains ';' (two occur in SynSciQA++) is cited whole.
      std::vector<int> keys = exact_keys(content, index);
      if (!keys.empty()) {
        group.citations.push_back(to_citation(trim(content), std::move(keys)));
        parts.clear();
      }
    }
    for (std::size_t p = 0; p < parts.size(); ++p) {
      PartResult r = match_part(parts[p], p == 0 ? before : std::string_view(), index);
      if (r.kind == PartKind::prose) continue;
      group.citations.push_back(to_citation(parts[p], r.keys));
      if (r.kind == PartKind::invalid) invalid_keys.push_back(r.normalized);
    }
    if (group.citations.empty()) continue;
    eligible[g] = 0;  // its nested groups belong to this citation
    add_group(out, std::move(group), invalid_keys);
  }
  return out;  // groups are in order of appearance: spans are visited by opening position
}

// One numeric item, "3" or "1-3"; nullopt when the text is not of that shape.
struct NumericItem {
  std::string text;  // normalised: no leading zeros, "lo-hi"
  std::vector<int> keys;
};

std::optional<long long> small_number(std::string_view digits) {
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string_view::npos) return 0;
  digits = digits.substr(first);
  if (digits.size() > 9) return std::nullopt;  // larger than any prompt; invalid but citation
  long long v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

std::string strip_zeros(std::string_view digits) {
  std::size_t first = digits.find_first_not_of('0');
  return first == std::string_view::npos ? "0" : std::string(digits.substr(first));
}

std::optional<NumericItem> numeric_item(std::string_view item, int n_sources) {
  item = trim(item);
  std::size_t dash = std::string_view::npos, dash_len = 0;
  for (std::string_view d : {"-", "\xE2\x80\x93", "\xE2\x80\x94"}) {  // -, en dash, em dash
    std::size_t at = item.find(d);
    if (at != std::string_view::npos) dash = at, dash_len = d.size();
  }
  NumericItem out;
  if (dash == std::string_view::npos) {
    if (!all_digits(item)) return std::nullopt;
    out.text = strip_zeros(item);
    auto v = small_number(item);
    if (v && *v >= 1 && *v <= n_sources) out.keys.push_back(static_cast<int>(*v));
    return out;
  }
  std::string_view lo_text = trim(item.substr(0, dash)),
                   hi_text = trim(item.substr(dash + dash_len));
  if (!all_digits(lo_text) || !all_digits(hi_text)) return std::nullopt;
  out.text = strip_zeros(lo_text) + "-" + strip_zeros(hi_text);
  auto lo = small_number(lo_text), hi = small_number(hi_text);
  // A range reaching outside the prompt is one invalid citation and credits nothing, so that
  // "[1-99]" cannot buy recall.
  if (lo && hi && *lo >= 1 && *lo <= *hi && *hi <= n_sources)
    for (long long k = *lo; k <= *hi; ++k) out.keys.push_back(static_cast<int>(k));
  return out;
}

}  // namespace

ParsedCitations parse_numeric_citations(const std::string& answer, int n_sources) {
  ParsedCitations out;
  std::size_t open = std::string::npos;
  for (std::size_t i = 0; i < answer.size(); ++i) {
    if (answer[i] == '[') {
      open = i;
    } else if (answer[i] == ']' && open != std::string::npos) {
      std::string_view content(answer.data() + open + 1, i - open - 1);
      std::size_t begin = open;
      open = std::string::npos;
      if (content.size() > kMaxGroupBytes) continue;
      // Items separated by ',' or ';'; any other content ("[citation needed]") is prose.
      CitationGroup group{begin, i + 1, {}};
      std::vector<std::string> invalid_keys;
      bool all_items = true;
      std::size_t start = 0;
      for (std::size_t j = 0; j <= content.size() && all_items; ++j) {
        if (j < content.size() && content[j] != ',' && content[j] != ';') continue;
        auto item = numeric_item(content.substr(start, j - start), n_sources);
        start = j + 1;
        if (!item) {
          all_items = false;
          break;
        }
        if (item->keys.empty()) invalid_keys.push_back(item->text);
        group.citations.push_back(to_citation(item->text, std::move(item->keys)));
      }
      if (all_items && !group.citations.empty()) add_group(out, std::move(group), invalid_keys);
    }
  }
  return out;
}

ParsedCitations parse_citations(const std::string& answer, const std::vector<Source>& sources,
                                CitationStyle style) {
  if (style == CitationStyle::named) return parse_named(answer, sources);
  // Numeric answers cite Source::key; keys are 1..n in every importer, but map explicitly in
  // case an example skips one.
  int max_key = 0;
  for (const auto& s : sources) max_key = std::max(max_key, s.key);
  ParsedCitations parsed = parse_numeric_citations(answer, max_key);
  std::set<int> present;
  for (const auto& s : sources) present.insert(s.key);
  ParsedCitations out;
  for (auto& group : parsed.groups) {
    std::vector<std::string> invalid_keys;
    for (auto& c : group.citations) {
      bool all_present =
          std::all_of(c.keys.begin(), c.keys.end(), [&](int k) { return present.count(k) > 0; });
      if (!all_present) c.keys.clear();
      if (c.keys.empty()) invalid_keys.push_back(c.text);
    }
    add_group(out, std::move(group), invalid_keys);
  }
  return out;
}

std::string normalize_source_name(const std::string& name) {
  return join(name_words(name));
}

std::string strip_citations(const std::string& answer, const ParsedCitations& parsed) {
  std::string out;
  // Appends the text between groups, keeping a word boundary unless punctuation follows.
  auto append = [&](std::string_view piece) {
    if (!out.empty() && !piece.empty() && piece.front() != ' ' &&
        !std::ispunct(static_cast<unsigned char>(piece.front())))
      out.push_back(' ');
    out.append(piece);
  };
  std::size_t pos = 0;
  for (const auto& g : parsed.groups) {
    append(std::string_view(answer).substr(pos, g.begin - pos));
    while (!out.empty() && out.back() == ' ') out.pop_back();
    pos = g.end;
  }
  append(std::string_view(answer).substr(pos));
  return out;
}

std::string citation_text(const std::vector<Source>& sources, CitationStyle style,
                          const std::vector<int>& keys) {
  std::string out;
  if (style == CitationStyle::numeric) {
    for (int key : keys) {  // appended piece by piece: GCC 12 warns falsely on "[" + s + "]"
      out += '[';
      out += std::to_string(key);
      out += ']';
    }
    return out;
  }
  for (int key : keys)
    for (const auto& s : sources)
      if (s.key == key) {
        out += out.empty() ? "(" : "; ";
        out += s.name;
      }
  return out.empty() ? out : out + ")";
}

std::string cite_sentence(const std::string& sentence, const std::string& citation) {
  std::string out = sentence;
  std::string end;
  if (!out.empty() && (out.back() == '.' || out.back() == '!' || out.back() == '?')) {
    end = out.substr(out.size() - 1);
    out.pop_back();
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  out += ' ';
  out += citation;
  out += end;
  return out;
}

std::string citations_in_words(const std::string& answer, const ParsedCitations& parsed) {
  std::string out = strip_citations(answer, parsed);
  const auto& keys = parsed.cited;
  if (keys.empty()) return out;
  std::string list;
  std::size_t i = 0;
  for (int key : keys) {
    if (i) list += i + 1 == keys.size() ? " and " : ", ";
    list += std::to_string(key);
    ++i;
  }
  const bool full_stop = !out.empty() && out.back() == '.';
  if (full_stop) out.pop_back();
  const bool one = keys.size() == 1;
  return out + (one ? ", as document " : ", as documents ") + list + (one ? " says." : " say.");
}

}  // namespace citeforge::data
