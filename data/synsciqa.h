// Importer for the SynSciQA family of data sets (evidence-QA paper, docs/design.md §2): the CSV
// test files (`instruction`, `gpt-35`, `gpt-4`), the JSON training list (`{instruction, response}`)
// and the golden-source CSVs that carry relevance labels.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::data {

// One source as it appears in an instruction: `NAME: TEXT` on its own line.
struct NamedSource {
  std::string name;
  std::string text;
};

// An instruction string taken apart. The rules after the question are kept verbatim because a
// prompt template may want to reproduce them.
struct ParsedInstruction {
  std::vector<NamedSource> sources;
  std::string question;
  std::string rules;                  // text after the quoted question, trimmed
  std::vector<std::string> warnings;  // lines of the source block that had no "NAME: " prefix
};

// Parses one SynSciQA instruction: sources between `[BEGIN OF SOURCES]` and `[END OF SOURCES]`
// (name = text before the first ": " of a line; a line without one continues the previous
// source), the question between the first and the last double quote after the block (questions
// may contain quotes themselves). Throws citeforge::Error without a file prefix (the caller adds
// it) when a marker is missing, the block holds no source, or there is no quoted question.
ParsedInstruction parse_synsciqa_instruction(const std::string& instruction);

// What an import had to guess or leave out, so the CLI can print it instead of crashing.
struct SynsciqaReport {
  std::size_t rows = 0;                    // records read from the input
  std::size_t imported = 0;                // examples produced (rows - skipped)
  std::size_t duplicate_names = 0;         // examples with two or more sources of the same name
  std::size_t no_relevant = 0;             // examples whose relevant set is empty
  std::size_t empty_answers = 0;           // answer cells that were empty (not kept as references)
  std::size_t continuation_lines = 0;      // source-block lines without "NAME: "
  std::size_t unmatched_golden_names = 0;  // golden names that match no source of the row
  std::size_t unlabelled_sources = 0;      // sources no golden list names (label `unknown`)
  std::size_t unresolved_citations = 0;    // teacher citations matching no source (silver)
  std::string silver_from;                 // answer column the silver labels come from
  std::vector<std::string> problems;       // the first few problems, "FILE: line N: what"
  // Records that could not become an example (no source block, a "nan" question), each
  // "FILE: line N (record i): skipped: why". All of them, not only the first few.
  std::vector<std::string> skipped;
};

// Reads a SynSciQA CSV (.csv) or JSON list (.json) file into examples with citation_style
// `named`. Every answer column present ("gpt-35", "gpt-4", "response") becomes a named
// reference. With `golden`, labels come from its right_source / other_source lists
// (LabelKind::gold); without, the sources cited by the teacher answer (the first present of
// "response", "gpt-4", "gpt-35") are `relevant` and the rest `irrelevant` (LabelKind::silver).
// Ids are "<origin lower-cased>-<record index, 0-based, 4 digits>", origin is the file stem
// (e.g. "SynSciQA_test"), split is "train" for JSON and "test" for CSV.
// Structural problems (unreadable file, broken CSV quoting, JSON errors, missing columns or
// fields) throw citeforge::Error naming the file and the line or record. A record that cannot
// become an example (an instruction without sources or question, a question that is the "nan"
// of an empty pandas cell) is skipped and listed in `report.skipped`; with `strict` it throws
// instead, and a file with no usable record throws either way. A golden file that lacks an
// input's instruction is the wrong golden file and throws. Quirks of single sources or citations
// are counted in `report`.
std::vector<Example> import_synsciqa(const std::string& input,
                                     const std::optional<std::string>& golden,
                                     SynsciqaReport* report = nullptr, bool strict = false);

}  // namespace citeforge::data
