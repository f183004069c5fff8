// RUN/report.html: one self-contained page (no network: styles inline, plots embedded as data
// URIs) with what a reader of a run wants in a browser: the selected checkpoints, Tables 1-3 with
// their notes (the run's tables.md, rendered), the plots and the resolved config. Written by
// `citeforge tables` and at the end of a run; scripts/check_report.py renders it in headless
// Chromium and checks its numbers against results.json.
#pragma once

#include <string>
#include <vector>

namespace citeforge::trainer {

struct ReportInputs {
  std::string run_name;
  std::string tables_markdown;      // the run's tables.md
  std::string config_yaml;          // config.resolved.yaml; empty when the run has none
  std::vector<std::string> images;  // PNG files, embedded in this order
};

std::string run_report_html(const ReportInputs& inputs);

// The subset of Markdown that tables.md is written in, as HTML: '#' headings, paragraphs with
// `code` and **strong**, and pipe tables (the first row a header; right-aligned where the
// separator row says so). Text is escaped.
std::string markdown_to_html(const std::string& markdown);

}  // namespace citeforge::trainer
