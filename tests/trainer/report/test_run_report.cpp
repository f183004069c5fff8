// report.html: tables.md's subset of Markdown becomes escaped HTML tables and paragraphs, and
// plots are embedded as data URIs (no network). scripts/check_report.py renders a real run's
// page in headless Chromium and checks its Table 2 against results.json.
#include <catch2/catch.hpp>

#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/report/run_report.h"

using namespace citeforge;

TEST_CASE("tables.md's Markdown renders as HTML", "[trainer][report]") {
  const std::string md =
      "# Tables: demo\n\nSelected on `validation`, **F1** <first>.\n\n## Table 2: test\n\n"
      "| Tuning | F1 |\n| --- | ---: |\n| SFT \\| x | 46.8 [38.0, 55.4] |\n";
  const std::string html = trainer::markdown_to_html(md);
  CHECK(html.find("<h2>Tables: demo</h2>") != std::string::npos);
  CHECK(
      html.find("<p>Selected on <code>validation</code>, <strong>F1</strong> &lt;first&gt;.</p>") !=
      std::string::npos);
  CHECK(html.find("<h3>Table 2: test</h3>") != std::string::npos);
  CHECK(html.find("<th>Tuning</th><th>F1</th>") != std::string::npos);
  CHECK(html.find("<td>SFT | x</td><td class=\"num\">46.8 [38.0, 55.4]</td>") != std::string::npos);
  CHECK(html.find("---") == std::string::npos);  // the separator row is not a row
}

TEST_CASE("report.html is one page with its plots inside", "[trainer][report]") {
  const auto dir = testing::temp_dir("run_report");
  const std::string png = (dir / "test_f1.png").string();
  write_file_atomically(png, "Man");  // base64 "TWFu"
  const std::string html =
      trainer::run_report_html({"demo<1>", "| a |\n| - |\n| 1 |\n", "seed: 1\n", {png}});
  CHECK(html.rfind("<!doctype html>", 0) == 0);
  CHECK(html.find("<title>citeforge run demo&lt;1&gt;</title>") != std::string::npos);
  CHECK(html.find("src=\"data:image/png;base64,TWFu\"") != std::string::npos);
  CHECK(html.find("<pre>seed: 1\n</pre>") != std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // nothing to fetch

  // base64's padding, for sizes one and two bytes past a multiple of three.
  write_file_atomically(png, "Ma");
  CHECK(trainer::run_report_html({"r", "", "", {png}}).find("base64,TWE=\"") != std::string::npos);
  write_file_atomically(png, "M");
  CHECK(trainer::run_report_html({"r", "", "", {png}}).find("base64,TQ==\"") != std::string::npos);
}
