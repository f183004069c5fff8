// A table of text cells rendered as GitHub Markdown or CSV (RFC 4180), the two forms every
// paper table of a run is written in.
#pragma once

#include <string>
#include <vector>

#include "rewards/aggregate.h"

namespace citeforge::trainer {

struct TextTable {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // per column: right-aligned in Markdown; empty = all left
  std::vector<std::vector<std::string>> rows;
};

// Pipes in cells are escaped; columns are padded to a common width so the file reads as a
// table in a terminal too.
std::string to_markdown(const TextTable& table);
// Fields holding a comma, quote or line break are quoted, quotes doubled.
std::string to_csv(const TextTable& table);

// `value` with `decimals` fixed decimals, or "–" when it is NaN.
std::string fixed(double value, int decimals);
// The shortest text that reads back as exactly `value`, or "" when it is NaN (an empty CSV
// field).
std::string exact(double value);

// The cells of a run's result tables and model cards:
// "47.0 [41.2, 52.9]", a rate as percent with its 95% interval ("–" when NaN);
std::string percent_with_interval(const rewards::Aggregate& a);
// "20.0", a rate as percent without an interval (the chance references);
std::string percent(const rewards::Aggregate& a);
// "+38.8", a difference of rates in percentage points ("0.0" for a rounded -0.0);
std::string signed_points(double value);
// "p = 0.012" or "p < 0.001".
std::string p_text(double p);

}  // namespace citeforge::trainer
