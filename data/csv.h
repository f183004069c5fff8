// An RFC 4180 CSV reader: comma-separated fields, records ended by LF or CRLF, fields quoted
// with '"' may hold commas, newlines and doubled quotes (""). Columns are looked up by header
// name because the SynSciQA files order them differently.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace citeforge::data {

struct CsvRecord {
  std::size_t line = 0;  // 1-based line on which the record starts
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string path;  // for error messages
  std::vector<std::string> header;
  std::vector<CsvRecord> records;  // data records, header excluded

  // Index of the column named `name`; citeforge::Error naming the file and the header when it
  // is missing or appears twice.
  std::size_t column(const std::string& name) const;
  bool has_column(const std::string& name) const;
};

// Parses CSV `text`; `path` only names the source in errors ("FILE: line N: ..."). Errors: an
// unterminated quoted field (naming the line it starts on), a quote inside an unquoted field,
// text after a closing quote, a record whose field count differs from the header's, an empty
// input. A UTF-8 byte-order mark is skipped; blank lines between records are ignored.
CsvTable parse_csv(const std::string& text, const std::string& path);

// Reads and parses the file at `path`.
CsvTable read_csv(const std::string& path);

}  // namespace citeforge::data
