#include "trainer/report/run_report.h"

#include <filesystem>
#include <sstream>

#include "common/file_io.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// `code` and **strong** inside escaped text.
std::string inline_html(const std::string& text) {
  std::string out, escaped = escape(text);
  bool code = false, strong = false;
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && escaped.compare(i, 2, "**") == 0) {
      out += strong ? "</strong>" : "<strong>";
      strong = !strong;
      ++i;
    } else {
      out += escaped[i];
    }
  }
  if (code) out += "</code>";
  if (strong) out += "</strong>";
  return out;
}

// The cells of a pipe-table row; "\|" is a pipe inside a cell.
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (row[i] == '|') {
      const auto first = cell.find_first_not_of(' ');
      out.push_back(first == std::string::npos
                        ? ""
                        : cell.substr(first, cell.find_last_not_of(' ') - first + 1));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

std::string table_html(const std::vector<std::string>& rows) {
  const auto header = cells(rows[0]);
  std::vector<bool> right(header.size(), false);
  if (rows.size() > 1) {
    const auto separator = cells(rows[1]);
    for (std::size_t i = 0; i < separator.size() && i < right.size(); ++i)
      right[i] = !separator[i].empty() && separator[i].back() == ':';
  }
  std::string out = "<table>\n<thead><tr>";
  for (const auto& h : header) out += "<th>" + inline_html(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 2; r < rows.size(); ++r) {
    out += "<tr>";
    const auto row = cells(rows[r]);
    for (std::size_t i = 0; i < row.size(); ++i)
      out += std::string(i < right.size() && right[i] ? "<td class=\"num\">" : "<td>") +
             inline_html(row[i]) + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += digits[(n >> shift) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t n = uint8_t(bytes[i]) << 16;
    out += std::string{digits[(n >> 18) & 63], digits[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += std::string{digits[(n >> 18) & 63], digits[(n >> 12) & 63], digits[(n >> 6) & 63], '='};
  }
  return out;
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:84em;padding:0 1em;"
    "color:#222}table{border-collapse:collapse;margin:.8em 0;font-size:.9em}"
    "th,td{border:1px solid #ccc;padding:.25em .5em}th{background:#f3f3f3}"
    "td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "code{background:#f3f3f3;padding:0 .2em}pre{background:#f7f7f7;padding:1em;overflow:auto}"
    "img{max-width:100%;border:1px solid #eee}figure{display:inline-block;margin:.5em}";

}  // namespace

std::string markdown_to_html(const std::string& markdown) {
  std::istringstream in(markdown);
  std::string line, out, paragraph;
  std::vector<std::string> table;
  auto flush = [&] {
    if (!paragraph.empty()) out += "<p>" + inline_html(paragraph) + "</p>\n";
    if (!table.empty()) out += table_html(table);
    paragraph.clear();
    table.clear();
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '|') {
      if (!paragraph.empty()) flush();
      table.push_back(line);
    } else if (line.empty()) {
      flush();
    } else if (line[0] == '#') {
      flush();
      const auto level = std::min<std::size_t>(line.find_first_not_of('#'), 6);
      const std::string tag = "h" + std::to_string(level + 1);  // the page's own title is h1
      out += "<" + tag + ">" + inline_html(line.substr(line.find_first_not_of("# "))) + "</" + tag +
             ">\n";
    } else {
      if (!table.empty()) flush();
      paragraph += (paragraph.empty() ? "" : " ") + line;
    }
  }
  flush();
  return out;
}

std::string run_report_html(const ReportInputs& r) {
  std::string out =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      escape("citeforge run " + r.run_name) + "</title>\n<style>" + kStyle +
      "</style>\n</head>\n<body>\n<h1>" + escape("Run " + r.run_name) + "</h1>\n";
  out += markdown_to_html(r.tables_markdown);
  if (!r.images.empty()) {
    out += "<h2>Plots</h2>\n";
    for (const auto& image : r.images)
      out += "<figure><img alt=\"" + escape(fs::path(image).filename().string()) +
             "\" src=\"data:image/png;base64," + base64(read_file(image)) + "\"><figcaption>" +
             escape(fs::path(image).filename().string()) + "</figcaption></figure>\n";
  }
  if (!r.config_yaml.empty())
    out += "<h2>Config (<code>config.resolved.yaml</code>)</h2>\n<pre>" + escape(r.config_yaml) +
           "</pre>\n";
  return out + "</body>\n</html>\n";
}

}  // namespace citeforge::trainer
