#include "data/rage_import.h"

#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "data/bm25.h"
#include "data/field_records.h"

namespace citeforge::data {

namespace {

struct Document {
  std::string id;
  std::string title;
  std::string text;
};

struct Query {
  std::string id;
  std::string text;
};

std::string line_where(std::size_t line) {
  return "line " + std::to_string(line);
}

std::vector<Document> read_corpus(const std::string& path,
                                  std::unordered_map<std::string, std::size_t>& index) {
  std::vector<Document> docs;
  for (const FieldRecord& r : read_field_records(path, {"_id", "text"}, {"title"})) {
    Document d{r.at(path, "_id"), r.has("title") ? r.fields.at("title") : "", r.at(path, "text")};
    if (d.id.empty()) fail_at(path, line_where(r.line), "field '_id': empty");
    if (!index.emplace(d.id, docs.size()).second)
      fail_at(path, line_where(r.line), "field '_id': duplicate document id '" + d.id + "'");
    docs.push_back(std::move(d));
  }
  if (docs.empty()) fail_at(path, "", "the corpus holds no document");
  return docs;
}

std::vector<Query> read_queries(const std::string& path,
                                std::unordered_map<std::string, std::size_t>& index) {
  std::vector<Query> queries;
  for (const FieldRecord& r : read_field_records(path, {"_id", "text"})) {
    Query q{r.at(path, "_id"), r.at(path, "text")};
    if (q.id.empty()) fail_at(path, line_where(r.line), "field '_id': empty");
    if (!index.emplace(q.id, queries.size()).second)
      fail_at(path, line_where(r.line), "field '_id': duplicate query id '" + q.id + "'");
    queries.push_back(std::move(q));
  }
  return queries;
}

// query index -> document ids in file order. Rows with a score <= 0 are judgements of
// non-relevance in BEIR and are not mappings.
std::vector<std::vector<std::string>> read_mapping(
    const std::string& path, const std::unordered_map<std::string, std::size_t>& queries,
    const std::unordered_map<std::string, std::size_t>& docs, std::size_t& pairs,
    std::size_t& non_positive) {
  std::vector<std::vector<std::string>> mapping(queries.size());
  for (const FieldRecord& r : read_field_records(path, {"query-id", "corpus-id"}, {"score"})) {
    const std::string where = line_where(r.line);
    const std::string& qid = r.at(path, "query-id");
    const std::string& did = r.at(path, "corpus-id");
    if (r.has("score")) {
      const std::string& text = r.fields.at("score");
      char* end = nullptr;
      const double score = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0')
        fail_at(path, where, "field 'score': not a number: '" + text + "'");
      if (score <= 0) {
        ++non_positive;
        continue;
      }
    }
    auto q = queries.find(qid);
    if (q == queries.end()) fail_at(path, where, "field 'query-id': unknown query '" + qid + "'");
    if (!docs.count(did)) fail_at(path, where, "field 'corpus-id': unknown document '" + did + "'");
    mapping[q->second].push_back(did);
    ++pairs;
  }
  return mapping;
}

}  // namespace

std::vector<Example> import_rage(const RageFiles& files, const RageImportOptions& options,
                                 RageReport* report_out) {
  validate_mixture_config(options.mixture);
  if (options.mined_seemingly_relevant < 0) throw Error("mined_seemingly_relevant: must be >= 0");
  RageReport report;
  std::unordered_map<std::string, std::size_t> doc_index, query_index;
  const std::vector<Document> docs = read_corpus(files.corpus, doc_index);
  const std::vector<Query> queries = read_queries(files.queries, query_index);
  report.documents = docs.size();
  report.queries = queries.size();

  auto relevant = read_mapping(files.relevant, query_index, doc_index, report.relevant_pairs,
                               report.non_positive_scores);
  std::vector<std::vector<std::string>> irrelevant(queries.size()), seemingly(queries.size());
  if (files.irrelevant)
    irrelevant = read_mapping(*files.irrelevant, query_index, doc_index, report.irrelevant_pairs,
                              report.non_positive_scores);
  if (files.seemingly_relevant)
    seemingly = read_mapping(*files.seemingly_relevant, query_index, doc_index,
                             report.seemingly_relevant_pairs, report.non_positive_scores);

  // Without a seemingly relevant mapping, mine one: the documents that look most like the query
  // (BM25 over title and text) and are not relevant, like RAGE's embedding neighbours.
  report.mined_seemingly_relevant = !files.seemingly_relevant;
  if (report.mined_seemingly_relevant && options.mined_seemingly_relevant > 0) {
    std::vector<std::string> texts;
    texts.reserve(docs.size());
    for (const Document& d : docs)
      texts.push_back(d.title.empty() ? d.text : d.title + " " + d.text);
    const Bm25Index index = build_bm25_index(texts);
    for (std::size_t q = 0; q < queries.size(); ++q) {
      if (relevant[q].empty()) continue;
      std::unordered_set<std::size_t> exclude;
      for (const std::string& id : relevant[q]) exclude.insert(doc_index.at(id));
      for (const ScoredDoc& hit :
           bm25_top_k(index, queries[q].text,
                      static_cast<std::size_t>(options.mined_seemingly_relevant), exclude))
        seemingly[q].push_back(docs[hit.doc].id);
      report.seemingly_relevant_pairs += seemingly[q].size();
    }
  }
  report.sampled_irrelevant = !files.irrelevant;
  std::vector<std::string> corpus_ids;
  if (report.sampled_irrelevant) {
    corpus_ids.reserve(docs.size());
    for (const Document& d : docs) corpus_ids.push_back(d.id);
  }

  std::vector<Example> examples;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    if (relevant[q].empty()) {
      ++report.queries_without_relevant;
      continue;
    }
    MixturePools pools{relevant[q], irrelevant[q], seemingly[q]};
    Example example;
    example.id = options.origin + "-" + queries[q].id;
    example.origin = options.origin;
    example.split = options.split;
    example.question = queries[q].text;
    example.citation_style = CitationStyle::numeric;
    example.labels = report.mined_seemingly_relevant || report.sampled_irrelevant
                         ? LabelKind::silver
                         : LabelKind::gold;
    for (const MixtureDoc& m : build_mixture(queries[q].id, pools, options.mixture,
                                             report.sampled_irrelevant ? &corpus_ids : nullptr)) {
      const Document& d = docs[doc_index.at(m.doc_id)];
      example.sources.push_back({static_cast<int>(example.sources.size()) + 1,
                                 d.title.empty() ? d.id : d.title, d.text, m.label});
    }
    examples.push_back(std::move(example));
  }
  report.examples = examples.size();
  if (report_out) *report_out = report;
  return examples;
}

}  // namespace citeforge::data
