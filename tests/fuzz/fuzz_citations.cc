// libFuzzer target for the citation parser and the metrics built on it. Input layout:
// byte 0 picks the style (bit 0) and the labels' pattern; up to the first NUL come source
// names, one per line; the rest is the answer. Invariants that must hold for any input are
// checked and abort on violation, so the fuzzer reports them like crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/citations.h"
#include "rewards/metrics.h"
#include "tests/fuzz/fuzz_support.h"

using namespace citeforge;

namespace {

using fuzz::require;

bool in_unit(double v) {
  return v >= 0.0 && v <= 1.0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size == 0) return 0;
  std::string input(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  std::uint8_t control = bytes[0];
  std::size_t nul = input.find('\0');
  std::string names = nul == std::string::npos ? "" : input.substr(0, nul);
  std::string answer = nul == std::string::npos ? input : input.substr(nul + 1);

  data::Example example;
  example.citation_style =
      (control & 1) ? data::CitationStyle::named : data::CitationStyle::numeric;
  std::size_t start = 0;
  for (int key = 1; start <= names.size() && key <= 64; ++key) {
    std::size_t end = names.find('\n', start);
    if (end == std::string::npos) end = names.size();
    auto label = static_cast<data::Label>(((control >> 1) + key) % 4);
    example.sources.push_back({key, names.substr(start, end - start), "", label});
    start = end + 1;
  }

  data::ParsedCitations parsed =
      data::parse_citations(answer, example.sources, example.citation_style);
  std::size_t previous_end = 0;
  for (const auto& group : parsed.groups) {
    require(group.begin < group.end && group.end <= answer.size());
    require(group.begin >= previous_end);  // groups do not overlap and come in order
    previous_end = group.end;
    require(!group.citations.empty());
    for (const auto& c : group.citations)
      for (int k : c.keys) require(k >= 1 && k <= static_cast<int>(example.sources.size()));
  }
  for (int k : parsed.cited) require(k >= 1 && k <= static_cast<int>(example.sources.size()));

  rewards::MetricOptions options;
  options.invalid_citations =
      (control & 0x80) ? rewards::InvalidCitations::ignore : rewards::InvalidCitations::penalize;
  rewards::AnswerMetrics m = rewards::score_answer(example, answer, options, answer);
  require(in_unit(m.precision) && in_unit(m.recall) && in_unit(m.f1) && in_unit(m.reward));
  require(in_unit(m.format_quality) && (m.source_quality == 0 || m.source_quality == 1));
  require(m.distinct_citations == static_cast<int>(parsed.cited.size()));
  require(m.answer_length >= 0 && static_cast<std::size_t>(m.answer_length) <= answer.size());
  // An answer compared with itself overlaps fully unless it has invalid citations.
  if (m.invalid_citations == 0 || options.invalid_citations == rewards::InvalidCitations::ignore)
    require(*m.overlap_recall == 1.0);
  for (auto [b, e] : rewards::split_sentences(answer)) require(b < e && e <= answer.size());
  return 0;
}
