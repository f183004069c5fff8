#include "data/field_records.h"

#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "data/csv.h"
#include "data/jsonl.h"

namespace citeforge::data {

namespace {

std::string line_where(std::size_t line) {
  return "line " + std::to_string(line);
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::vector<FieldRecord> read_jsonl(const std::string& path, const std::string& text,
                                    const std::vector<std::string>& required,
                                    const std::vector<std::string>& optional) {
  std::vector<FieldRecord> records;
  for_each_jsonl_line(path, text, [&](std::size_t line, nlohmann::json& object) {
    if (!object.is_object()) fail_at(path, line_where(line), "expected a JSON object");
    FieldRecord record;
    record.line = line;
    auto take = [&](const std::string& field, bool needed) {
      auto it = object.find(field);
      if (it == object.end() || it->is_null()) {
        if (needed) fail_at(path, line_where(line), "field '" + field + "': missing");
        return;
      }
      if (it->is_string()) {
        record.fields[field] = it->get<std::string>();
      } else if (it->is_number()) {
        record.fields[field] = it->dump();
      } else {
        fail_at(path, line_where(line),
                "field '" + field + "': expected a string or number, got " + it->type_name());
      }
    };
    for (const auto& f : required) take(f, true);
    for (const auto& f : optional) take(f, false);
    records.push_back(std::move(record));
  });
  return records;
}

std::vector<std::string> split_tabs(const std::string& row) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  for (;;) {
    std::size_t tab = row.find('\t', start);
    cells.push_back(row.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return cells;
}

// BEIR's qrels are tab-separated without quoting: a header row, then one judgement per line.
CsvTable parse_tsv(const std::string& text, const std::string& path) {
  CsvTable table;
  table.path = path;
  std::size_t line = 0, pos = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string row = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    if (row.empty()) continue;
    std::vector<std::string> cells = split_tabs(row);
    if (table.header.empty()) {
      table.header = std::move(cells);
      continue;
    }
    if (cells.size() != table.header.size())
      fail_at(path, line_where(line),
              "expected " + std::to_string(table.header.size()) +
                  " tab-separated cells (as the "
                  "header), found " +
                  std::to_string(cells.size()));
    table.records.push_back({line, std::move(cells)});
  }
  if (table.header.empty()) fail_at(path, "", "empty file (expected a header row)");
  return table;
}

std::vector<FieldRecord> from_table(const CsvTable& table, const std::vector<std::string>& required,
                                    const std::vector<std::string>& optional) {
  std::vector<std::pair<std::string, std::size_t>> columns;
  for (const auto& f : required) columns.push_back({f, table.column(f)});
  for (const auto& f : optional)
    if (table.has_column(f)) columns.push_back({f, table.column(f)});
  std::vector<FieldRecord> records;
  records.reserve(table.records.size());
  for (const CsvRecord& row : table.records) {
    FieldRecord record;
    record.line = row.line;
    for (const auto& [name, index] : columns) record.fields[name] = row.fields[index];
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace

const std::string& FieldRecord::at(const std::string& file, const std::string& field) const {
  auto it = fields.find(field);
  if (it == fields.end()) fail_at(file, line_where(line), "field '" + field + "': missing");
  return it->second;
}

std::vector<FieldRecord> read_field_records(const std::string& path,
                                            const std::vector<std::string>& required,
                                            const std::vector<std::string>& optional) {
  const std::string ext = lower_extension(path);
  if (ext == ".jsonl") return read_jsonl(path, read_file(path), required, optional);
  if (ext == ".csv") return from_table(read_csv(path), required, optional);
  if (ext == ".tsv" || ext == ".txt")
    return from_table(parse_tsv(read_file(path), path), required, optional);
  fail_at(path, "", "unknown file type '" + ext + "' (expected .jsonl, .csv or .tsv)");
}

}  // namespace citeforge::data
