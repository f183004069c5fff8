#include "data/synsciqa.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "data/csv.h"
// Silver labels are by definition "the sources the teacher answer cites"; which sources a
// citation refers to has exactly one definition in citeforge, the one the metrics use. Copying
// it into data/ would let labels and scores disagree, so this one importer reaches into
// rewards/ (a pure string module with no further dependencies).
#include "data/citations.h"

namespace citeforge::data {

namespace {

constexpr const char* kBegin = "[BEGIN OF SOURCES]";
constexpr const char* kEnd = "[END OF SOURCES]";
constexpr std::size_t kMaxProblems = 10;
// Answer columns in order of preference as the silver-label teacher: SynSciQA++ has only
// "response"; for the test files the stronger teacher (GPT-4) is preferred.
const std::vector<std::string> kAnswerColumns = {"response", "gpt-4", "gpt-35"};

std::string trim(const std::string& s) {
  const char* space = " \t\r\n\f\v";
  std::size_t b = s.find_first_not_of(space);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(space) - b + 1);
}

std::string preview(const std::string& s, std::size_t n = 60) {
  std::string one_line = s.substr(0, n);
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  return one_line + (s.size() > n ? "..." : "");
}

}  // namespace

ParsedInstruction parse_synsciqa_instruction(const std::string& instruction) {
  ParsedInstruction out;
  std::size_t begin = instruction.find(kBegin);
  if (begin == std::string::npos) throw Error(std::string("no '") + kBegin + "' marker");
  begin += std::string(kBegin).size();
  std::size_t end = instruction.find(kEnd, begin);
  if (end == std::string::npos)
    throw Error(std::string("no '") + kEnd + "' marker after '" + kBegin + "'");

  std::string block = instruction.substr(begin, end - begin);
  std::size_t pos = 0;
  while (pos <= block.size()) {
    std::size_t newline = block.find('\n', pos);
    if (newline == std::string::npos) newline = block.size();
    std::string line = trim(block.substr(pos, newline - pos));
    pos = newline + 1;
    if (line.empty()) continue;
    std::size_t colon = line.find(": ");
    if (colon != std::string::npos && colon > 0) {
      out.sources.push_back({trim(line.substr(0, colon)), trim(line.substr(colon + 2))});
    } else if (!out.sources.empty()) {
      // Source texts are one line in every real file; a line without a name is read as the
      // previous source's text continuing rather than lost.
      out.sources.back().text += "\n" + line;
      out.warnings.push_back("line without 'NAME: ' appended to source '" +
                             out.sources.back().name + "': '" + preview(line) + "'");
    } else {
      out.warnings.push_back("line without 'NAME: ' before any source dropped: '" + preview(line) +
                             "'");
    }
  }
  if (out.sources.empty())
    throw Error(std::string("no source between '") + kBegin + "' and '" + kEnd + "'");

  // Questions may quote words themselves ("How does our brain "choose" ..."), and the rules
  // after them hold no quotes, so the question spans the first to the last quote.
  std::string after = instruction.substr(end + std::string(kEnd).size());
  std::size_t open = after.find('"'), close = after.rfind('"');
  if (open == std::string::npos || close == open)
    throw Error(std::string("no question in double quotes after '") + kEnd + "'");
  out.question = trim(after.substr(open + 1, close - open - 1));
  if (out.question.empty()) throw Error("the quoted question is empty");
  out.rules = trim(after.substr(close + 1));
  return out;
}

namespace {

// One input record before labelling.
struct Record {
  std::string where;  // "line 57 (record 12)" or "record 12"
  std::string instruction;
  std::map<std::string, std::string> answers;  // column -> answer, as in the file
};

struct Input {
  std::vector<Record> records;
  std::vector<std::string> answer_columns;  // present in the file, in kAnswerColumns order
  std::string split;
};

std::size_t line_of_byte(const std::string& text, std::size_t byte) {
  std::size_t end = std::min(byte, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + end, '\n'));
}

Input read_json_input(const std::string& path) {
  using nlohmann::json;
  std::string content = read_file(path);
  json list;
  try {
    list = json::parse(content);
  } catch (const json::parse_error& e) {
    fail_at(path, "line " + std::to_string(line_of_byte(content, e.byte)),
            std::string("invalid JSON: ") + e.what());
  } catch (const json::exception& e) {  // a number past every type: out_of_range
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
  if (!list.is_array()) fail_at(path, "", "expected a JSON list of {instruction, response}");
  Input input;
  input.split = "train";
  std::set<std::string> seen_columns;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Record record;
    record.where = "record " + std::to_string(i);
    const json& item = list[i];
    if (!item.is_object()) fail_at(path, record.where, "expected an object");
    auto text_field = [&](const std::string& name) {
      const json& v = item.at(name);
      if (!v.is_string()) fail_at(path, record.where, "field '" + name + "': expected a string");
      return v.get<std::string>();
    };
    if (!item.contains("instruction")) fail_at(path, record.where, "field 'instruction': missing");
    record.instruction = text_field("instruction");
    for (const auto& column : kAnswerColumns) {
      if (!item.contains(column)) continue;
      record.answers[column] = text_field(column);
      seen_columns.insert(column);
    }
    if (record.answers.empty())
      fail_at(path, record.where, "no answer field (expected 'response', 'gpt-4' or 'gpt-35')");
    input.records.push_back(std::move(record));
  }
  for (const auto& column : kAnswerColumns)
    if (seen_columns.count(column)) input.answer_columns.push_back(column);
  return input;
}

Input read_csv_input(const std::string& path) {
  CsvTable table = read_csv(path);
  std::size_t instruction = table.column("instruction");
  Input input;
  input.split = "test";
  std::vector<std::pair<std::string, std::size_t>> answers;
  for (const auto& column : kAnswerColumns) {
    if (!table.has_column(column)) continue;
    answers.emplace_back(column, table.column(column));
    input.answer_columns.push_back(column);
  }
  if (answers.empty())
    fail_at(path, "line 1", "no answer column (expected 'gpt-35', 'gpt-4' or 'response')");
  for (std::size_t i = 0; i < table.records.size(); ++i) {
    const CsvRecord& row = table.records[i];
    Record record;
    record.where = "line " + std::to_string(row.line) + " (record " + std::to_string(i) + ")";
    record.instruction = row.fields[instruction];
    for (const auto& [column, index] : answers) record.answers[column] = row.fields[index];
    input.records.push_back(std::move(record));
  }
  return input;
}

// A Python list literal of strings as pandas writes it: ['a', "b's"]. Escapes \\ \' \" \n \t
// are decoded; other backslashes are kept, as Python does for unknown escapes.
std::vector<std::string> parse_python_list(const std::string& text, const std::string& file,
                                           const std::string& where, const std::string& field) {
  auto fail = [&](const std::string& what, std::size_t at) {
    fail_at(file, where,
            "field '" + field + "': expected a Python list of strings: " + what + " at column " +
                std::to_string(at + 1));
  };
  std::vector<std::string> out;
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  if (i >= text.size() || text[i] != '[') fail("no '['", i);
  ++i;
  skip_space();
  while (i < text.size() && text[i] != ']') {
    char quote = text[i];
    if (quote != '\'' && quote != '"') fail("expected a quoted string", i);
    std::size_t start = i++;
    std::string value;
    while (true) {
      if (i >= text.size()) fail("unterminated string", start);
      char c = text[i++];
      if (c == quote) break;
      if (c == '\\' && i < text.size()) {
        char e = text[i++];
        switch (e) {
          case '\\':
            value += '\\';
            break;
          case '\'':
            value += '\'';
            break;
          case '"':
            value += '"';
            break;
          case 'n':
            value += '\n';
            break;
          case 't':
            value += '\t';
            break;
          default:
            value += '\\';
            value += e;
        }
        continue;
      }
      value += c;
    }
    out.push_back(std::move(value));
    skip_space();
    if (i < text.size() && text[i] == ',') {
      ++i;
      skip_space();
    } else if (i < text.size() && text[i] != ']') {
      fail("expected ',' or ']'", i);
    }
  }
  if (i >= text.size()) fail("no closing ']'", i);
  ++i;
  skip_space();
  if (i != text.size()) fail("text after ']'", i);
  return out;
}

struct GoldenRow {
  std::size_t line;
  std::vector<std::string> right;
  std::vector<std::string> other;
};

std::map<std::string, GoldenRow> read_golden(const std::string& path) {
  CsvTable table = read_csv(path);
  std::size_t instruction = table.column("instruction");
  std::size_t right = table.column("right_source");
  std::size_t other = table.column("other_source");
  std::map<std::string, GoldenRow> rows;
  for (const auto& record : table.records) {
    std::string where = "line " + std::to_string(record.line);
    GoldenRow row{record.line, parse_python_list(record.fields[right], path, where, "right_source"),
                  parse_python_list(record.fields[other], path, where, "other_source")};
    auto [it, inserted] = rows.emplace(trim(record.fields[instruction]), row);
    if (!inserted && (it->second.right != row.right || it->second.other != row.other))
      fail_at(path, where,
              "same instruction as line " + std::to_string(it->second.line) +
                  " but different source lists");
  }
  return rows;
}

std::string ascii_lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

void note(SynsciqaReport& report, const std::string& problem) {
  if (report.problems.size() < kMaxProblems) report.problems.push_back(problem);
}

// Gold labels by name: every source carrying a name the golden lists give gets that label
// (the real files never list one name on both sides). Exact names first, then normalised
// ones, so "p.12" in the golden list still finds "p. 12" in the prompt.
void label_from_golden(Example& example, const GoldenRow& golden, const std::string& golden_path,
                       SynsciqaReport& report) {
  std::map<std::string, Label> exact, normalized;
  for (const auto& [names, label] :
       {std::pair{&golden.right, Label::relevant}, std::pair{&golden.other, Label::irrelevant}}) {
    for (const auto& name : *names) {
      exact.emplace(trim(name), label);
      normalized.emplace(data::normalize_source_name(name), label);
    }
  }
  std::set<std::string> used_exact, used_normalized;
  for (auto& source : example.sources) {
    std::string norm = data::normalize_source_name(source.name);
    if (auto it = exact.find(source.name); it != exact.end()) {
      source.label = it->second;
      used_exact.insert(it->first);
      used_normalized.insert(norm);
    } else if (auto it2 = normalized.find(norm); it2 != normalized.end()) {
      source.label = it2->second;
      used_normalized.insert(norm);
    } else {
      ++report.unlabelled_sources;
      note(report, golden_path + ": line " + std::to_string(golden.line) + ": source '" +
                       source.name + "' of " + example.id + " is in neither list (label unknown)");
    }
  }
  for (const auto& [name, label] : exact) {
    if (used_exact.count(name) || used_normalized.count(data::normalize_source_name(name)))
      continue;
    ++report.unmatched_golden_names;
    note(report, golden_path + ": line " + std::to_string(golden.line) + ": golden name '" + name +
                     "' matches no source of " + example.id);
  }
}

void label_from_teacher(Example& example, const Record& record, const std::string& teacher,
                        const std::string& path, SynsciqaReport& report) {
  auto it = record.answers.find(teacher);
  if (it == record.answers.end() || trim(it->second).empty()) {
    note(report, path + ": " + record.where + ": no '" + teacher +
                     "' answer to derive silver labels from (labels unknown)");
    return;
  }
  data::ParsedCitations cited =
      data::parse_citations(it->second, example.sources, CitationStyle::named);
  for (auto& source : example.sources)
    source.label = cited.cited.count(source.key) ? Label::relevant : Label::irrelevant;
  report.unresolved_citations += cited.invalid.size();
  for (const auto& invalid : cited.invalid)
    note(report, path + ": " + record.where + ": '" + teacher + "' cites '" + invalid +
                     "', which matches no source");
}

}  // namespace

std::vector<Example> import_synsciqa(const std::string& input,
                                     const std::optional<std::string>& golden,
                                     SynsciqaReport* report_out, bool strict) {
  SynsciqaReport local;
  SynsciqaReport& report = report_out ? *report_out : local;
  report = SynsciqaReport{};

  std::filesystem::path path(input);
  const std::string extension = ascii_lower(path.extension().string());
  Input in;
  if (extension == ".json") {
    in = read_json_input(input);
  } else if (extension == ".csv") {
    in = read_csv_input(input);
  } else {
    fail_at(input, "", "unsupported file type '" + extension + "' (expected .csv or .json)");
  }
  std::map<std::string, GoldenRow> golden_rows;
  if (golden) golden_rows = read_golden(*golden);
  if (!golden) report.silver_from = in.answer_columns.front();

  std::string origin = path.stem().string();
  const std::string id_prefix = ascii_lower(origin);

  std::vector<Example> examples;
  std::set<std::string> golden_used;
  report.rows = in.records.size();
  for (std::size_t i = 0; i < in.records.size(); ++i) {
    const Record& record = in.records[i];
    // A record that cannot be used: refused under `strict`, else skipped and listed.
    auto unusable = [&](const std::string& why) {
      if (strict) fail_at(input, record.where, why);
      report.skipped.push_back(input + ": " + record.where + ": skipped: " + why);
    };
    ParsedInstruction parsed;
    try {
      parsed = parse_synsciqa_instruction(record.instruction);
    } catch (const Error& e) {
      unusable(std::string("field 'instruction': ") + e.what());
      continue;
    }
    // pandas writes an empty cell as "nan"; a question that reads so is no question.
    if (ascii_lower(trim(parsed.question)) == "nan") {
      unusable("field 'instruction': the question is \"" + parsed.question +
               "\" (an empty cell written as NaN)");
      continue;
    }
    Example example;
    char number[32];
    std::snprintf(number, sizeof number, "%04zu", i);
    example.id = id_prefix + "-" + number;
    example.origin = origin;
    example.split = in.split;
    example.question = parsed.question;
    example.citation_style = CitationStyle::named;
    example.labels = golden ? LabelKind::gold : LabelKind::silver;
    std::set<std::string> names;
    bool duplicate = false;
    for (std::size_t k = 0; k < parsed.sources.size(); ++k) {
      example.sources.push_back({static_cast<int>(k) + 1, parsed.sources[k].name,
                                 parsed.sources[k].text, Label::unknown});
      duplicate = !names.insert(parsed.sources[k].name).second || duplicate;
    }
    report.duplicate_names += duplicate ? 1 : 0;
    report.continuation_lines += parsed.warnings.size();
    for (const auto& warning : parsed.warnings)
      note(report, input + ": " + record.where + ": " + warning);
    for (const auto& [column, answer] : record.answers) {
      if (trim(answer).empty()) {
        ++report.empty_answers;
        note(report, input + ": " + record.where + ": empty '" + column + "' answer not kept");
      } else {
        example.references[column] = answer;
      }
    }

    if (golden) {
      std::string key = trim(record.instruction);
      auto it = golden_rows.find(key);
      if (it == golden_rows.end())  // the files do not belong together: no record is at fault
        fail_at(input, record.where,
                "instruction not found in golden file '" + *golden +
                    "' (is it the golden file of this input?)");
      golden_used.insert(key);
      label_from_golden(example, it->second, *golden, report);
    } else {
      label_from_teacher(example, record, report.silver_from, input, report);
      example.labels_from = report.silver_from;
    }
    bool any_relevant = std::any_of(example.sources.begin(), example.sources.end(),
                                    [](const Source& s) { return s.label == Label::relevant; });
    report.no_relevant += any_relevant ? 0 : 1;
    examples.push_back(std::move(example));
  }
  if (golden && golden_used.size() != golden_rows.size())
    note(report, *golden + ": " + std::to_string(golden_rows.size() - golden_used.size()) +
                     " golden rows match no input instruction");
  report.imported = examples.size();
  if (examples.empty() && !report.skipped.empty())
    fail_at(input, "",
            "no usable record (" + std::to_string(report.skipped.size()) +
                " skipped; the first: " + report.skipped.front() + ")");
  return examples;
}

}  // namespace citeforge::data
