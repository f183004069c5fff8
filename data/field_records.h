// Reads the tables of IR data sets (BEIR / RAGE corpus, queries, qrels) in any of the layouts
// they ship in: JSON Lines (.jsonl), CSV with a header (.csv) or tab-separated values
// with a header (.tsv, .txt). Every record comes back as named string fields with the line it
// started on, so the importer can name file, line and field in its errors.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace citeforge::data {

struct FieldRecord {
  std::size_t line = 0;
  std::map<std::string, std::string> fields;  // only the requested fields that are present

  // The field's value; citeforge::Error naming file, line and field when absent.
  const std::string& at(const std::string& file, const std::string& field) const;
  bool has(const std::string& field) const { return fields.count(field) > 0; }
};

// Reads `path`, keeping the fields in `required` and `optional`. JSON values may be strings or
// numbers (numbers keep their JSON spelling: ids such as 42 become "42"). A missing required
// field or column, a record that is not a JSON object, invalid JSON, a TSV row with the wrong
// number of cells and an unknown file extension are citeforge::Error naming the file and line.
std::vector<FieldRecord> read_field_records(const std::string& path,
                                            const std::vector<std::string>& required,
                                            const std::vector<std::string>& optional = {});

}  // namespace citeforge::data
