#include "trainer/report/text_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace citeforge::trainer {

namespace {

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

// Display width in code points, so "–" pads like one character.
std::size_t width(const std::string& text) {
  std::size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& text, std::size_t to, bool right) {
  std::string fill(to > width(text) ? to - width(text) : 0, ' ');
  return right ? fill + text : text + fill;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string to_markdown(const TextTable& table) {
  std::size_t columns = table.header.size();
  std::vector<std::vector<std::string>> cells;
  cells.push_back({});
  for (const auto& h : table.header) cells.back().push_back(markdown_cell(h));
  for (const auto& row : table.rows) {
    cells.push_back({});
    for (std::size_t c = 0; c < columns; ++c)
      cells.back().push_back(markdown_cell(c < row.size() ? row[c] : ""));
  }
  std::vector<std::size_t> widths(columns, 3);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < columns; ++c) widths[c] = std::max(widths[c], width(row[c]));
  auto right = [&](std::size_t c) { return c < table.numeric.size() && table.numeric[c]; };
  std::string out;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    out += "|";
    for (std::size_t c = 0; c < columns; ++c)
      out += " " + pad(cells[r][c], widths[c], right(c)) + " |";
    out += "\n";
    if (r == 0) {
      out += "|";
      for (std::size_t c = 0; c < columns; ++c)
        out += right(c) ? " " + std::string(widths[c] - 1, '-') + ": |"
                        : " " + std::string(widths[c], '-') + " |";
      out += "\n";
    }
  }
  return out;
}

std::string to_csv(const TextTable& table) {
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (std::size_t c = 0; c < fields.size(); ++c) out += (c ? "," : "") + csv_field(fields[c]);
    out += "\n";
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "–";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string exact(double value) {
  if (std::isnan(value)) return "";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string percent_with_interval(const rewards::Aggregate& a) {
  if (std::isnan(a.mean)) return "–";
  return fixed(100 * a.mean, 1) + " [" + fixed(100 * a.ci_low, 1) + ", " +
         fixed(100 * a.ci_high, 1) + "]";
}

std::string percent(const rewards::Aggregate& a) {
  return std::isnan(a.mean) ? "–" : fixed(100 * a.mean, 1);
}

std::string signed_points(double value) {
  std::string text = fixed(100 * value, 1);
  if (text == "-0.0") text = "0.0";
  if (text[0] != '-') text.insert(text.begin(), '+');
  return text;
}

std::string p_text(double p) {
  if (std::isnan(p)) return "–";
  if (p < 0.001) return "p < 0.001";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "p = %.2g", p);
  return buffer;
}

}  // namespace citeforge::trainer
