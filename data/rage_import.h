// Importer for RAGE / BEIR-layout data sets (RAGE §3.1): a corpus (`_id`, `title`, `text`),
// queries (`_id`, `text`) and up to three query -> document mappings (relevant, irrelevant,
// seemingly relevant) as BEIR qrels (`query-id`, `corpus-id`, `score`) in TSV, CSV or JSONL.
// Each query with a relevant document becomes one Example whose sources are its document
// mixture (data/mixture.h), cited numerically.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/mixture.h"

namespace citeforge::data {

struct RageFiles {
  std::string corpus;
  std::string queries;
  std::string relevant;
  std::optional<std::string> irrelevant;          // absent: drawn from the corpus at random
  std::optional<std::string> seemingly_relevant;  // absent: mined with BM25
};

struct RageImportOptions {
  MixtureConfig mixture;
  // How many BM25 neighbours form a query's seemingly relevant pool when none is given (RAGE
  // maps the ten most similar non-relevant documents).
  int mined_seemingly_relevant = 10;
  std::string origin = "rage";  // Example.origin and id prefix: "<origin>-<query id>"
  std::string split = "test";
};

struct RageReport {
  std::size_t documents = 0;
  std::size_t queries = 0;
  std::size_t relevant_pairs = 0;
  std::size_t irrelevant_pairs = 0;
  std::size_t seemingly_relevant_pairs = 0;
  std::size_t non_positive_scores = 0;       // qrels rows with score <= 0, not used
  std::size_t queries_without_relevant = 0;  // skipped: RAGE needs at least one
  bool mined_seemingly_relevant = false;
  bool sampled_irrelevant = false;
  std::size_t examples = 0;
};

// Reads the files and builds one Example per query that has a relevant document, in the order of
// the queries file. Labels are `gold` when every mapping came from files and `silver` when one
// was derived here (BM25 mining or random sampling). Errors name file, line and field: invalid
// JSON, a missing field or column, a duplicate id, a qrels row naming an unknown query or
// document, a score that is not a number.
std::vector<Example> import_rage(const RageFiles& files, const RageImportOptions& options,
                                 RageReport* report = nullptr);

}  // namespace citeforge::data
