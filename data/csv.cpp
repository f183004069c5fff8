// Written here rather than taken from a package: the Debian CSV libraries (libcsv, ...) are not
// among the project's dependencies, and none reports the line a broken quote started on, which
// is what makes an error in a 5 MB file with multi-line cells findable.
#include "data/csv.h"

#include "common/error.h"
#include "common/file_io.h"

namespace citeforge::data {

std::size_t CsvTable::column(const std::string& name) const {
  std::size_t found = header.size();
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] != name) continue;
    if (found != header.size()) fail_at(path, "line 1", "column '" + name + "' appears twice");
    found = i;
  }
  if (found == header.size()) {
    std::string names;
    for (const auto& h : header) names += (names.empty() ? "'" : ", '") + h + "'";
    fail_at(path, "line 1", "missing column '" + name + "' (header has " + names + ")");
  }
  return found;
}

bool CsvTable::has_column(const std::string& name) const {
  for (const auto& h : header)
    if (h == name) return true;
  return false;
}

CsvTable parse_csv(const std::string& text, const std::string& path) {
  CsvTable table;
  table.path = path;
  std::size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  std::size_t line = 1;
  auto where = [](std::size_t l) { return "line " + std::to_string(l); };

  std::vector<CsvRecord> rows;
  while (i < text.size()) {
    CsvRecord record;
    record.line = line;
    // A blank line between records is not a record of one empty field.
    if (text[i] == '\n' || (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      i += text[i] == '\r' ? 2 : 1;
      ++line;
      continue;
    }
    bool record_done = false;
    while (!record_done) {
      std::string field;
      if (i < text.size() && text[i] == '"') {
        std::size_t start_line = line;
        ++i;
        while (true) {
          if (i >= text.size())
            fail_at(path, where(start_line),
                    "unterminated quoted field (the quote opened here "
                    "is never closed)");
          char c = text[i++];
          if (c == '"') {
            if (i < text.size() && text[i] == '"') {
              field.push_back('"');
              ++i;
              continue;
            }
            break;
          }
          if (c == '\n') ++line;
          field.push_back(c);
        }
        if (i < text.size() && text[i] != ',' && text[i] != '\n' &&
            !(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n'))
          fail_at(path, where(line),
                  "unexpected character after a closing quote in field " +
                      std::to_string(record.fields.size() + 1));
      } else {
        while (i < text.size() && text[i] != ',' && text[i] != '\n' &&
               !(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
          if (text[i] == '"')
            fail_at(path, where(line),
                    "quote inside an unquoted field " + std::to_string(record.fields.size() + 1));
          field.push_back(text[i++]);
        }
      }
      record.fields.push_back(std::move(field));
      if (i >= text.size()) {
        record_done = true;
      } else if (text[i] == ',') {
        ++i;
      } else {  // end of line
        i += text[i] == '\r' ? 2 : 1;
        ++line;
        record_done = true;
      }
    }
    rows.push_back(std::move(record));
  }
  if (rows.empty()) fail_at(path, "", "empty CSV file (no header)");
  table.header = std::move(rows.front().fields);
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].fields.size() != table.header.size())
      fail_at(path, where(rows[r].line),
              "record has " + std::to_string(rows[r].fields.size()) + " fields, header has " +
                  std::to_string(table.header.size()));
    table.records.push_back(std::move(rows[r]));
  }
  return table;
}

CsvTable read_csv(const std::string& path) {
  return parse_csv(read_file(path), path);
}

}  // namespace citeforge::data
