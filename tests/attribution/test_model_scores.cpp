// CiteFix's model methods (attribution/model_scores.h) with the real model, SmolLM2-135M-Instruct,
// on hand-made answers whose citations were swapped among three documents on unrelated topics:
// the right document of every point is known. Also what happens with answers the model cannot
// read or that cite nothing.
#include <catch2/catch.hpp>
#include <filesystem>

#include "attribution/model_scores.h"
#include "common/error.h"
#include "data/citations.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/linear.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using attribution::FixMethod;

namespace {

struct Reader {
  std::unique_ptr<models::Tokenizer> tokenizer;
  attribution::ModelReader reader;
};

// Loaded once for the file: the import of the GGUF file is cached on disk, the model in memory.
Reader& smollm2() {
  static Reader loaded = [] {
    Reader r;
    const auto gguf = testing::source_path("weights/SmolLM2-135M-Instruct.Q4_1.gguf");
    INFO("the model file is linked by scripts/setup.sh: " << gguf);
    REQUIRE(std::filesystem::exists(gguf));
    const auto dir = models::gguf_model_dir(gguf);
    r.reader.model = models::load_model(dir, torch::kFloat32, torch::kCPU);
    r.reader.model->eval();
    r.tokenizer = std::make_unique<models::Tokenizer>(models::find_tokenizer(dir));
    r.reader.tokenizer = r.tokenizer.get();
    r.reader.chat = models::chat_template("smollm2");
    const auto templates = testing::source_path("configs/templates");
    r.reader.ask = data::find_prompt_template("citefix_ask", templates);
    return r;
  }();
  return loaded;
}

const char* kDocuments[] = {
    "Honeybees tell their hive mates where flowers are by performing a waggle dance; the angle of "
    "the dance points to the food and its length tells the distance.",
    "Basaltic lava from shield volcanoes such as those of Hawaii is runny and flows for "
    "kilometres before it cools into black rock.",
    "Jazz grew out of the brass bands and blues of New Orleans around 1900, and Louis Armstrong "
    "made the improvised solo its centre."};
const char* kNames[] = {"Miller, 2019, p. 4", "Okafor, 2021, p. 17", "Lindqvist, 2008, p. 230"};

data::Example three_topics(data::CitationStyle style) {
  data::Example e;
  e.id = "hand";
  e.question = "What do bees, volcanoes and jazz have in common?";
  e.citation_style = style;
  for (int i = 0; i < 3; ++i) e.sources.push_back({i + 1, kNames[i], kDocuments[i], {}});
  return e;
}

attribution::ModelReader& reader_for(data::CitationStyle style) {
  auto& r = smollm2().reader;
  r.prompt = data::find_prompt_template(
      style == data::CitationStyle::numeric ? "rage_numeric" : "evidence_named",
      testing::source_path("configs/templates"));
  return r;
}

}  // namespace

// bertscore and attention read the model's states; ask_model asks it, and SmolLM2-135M cannot
// answer which numbered document supports a statement (it picks about evenly even for a
// document's verbatim text), so its case checks the mechanics: a complete answer in the right
// format, and the candidates' probabilities as a full forward pass gives them.
TEST_CASE("model methods put swapped citations back on the documents the points come from",
          "[attribution][citefix][smollm2]") {
  const models::DequantizedWeights once;
  const std::string numeric =
      "Honeybees show where flowers are with a waggle dance [3]. Runny basaltic lava flows for "
      "kilometres before it cools [1]. Jazz came from the brass bands of New Orleans [2].";
  const std::string numeric_fixed =
      "Honeybees show where flowers are with a waggle dance [1]. Runny basaltic lava flows for "
      "kilometres before it cools [2]. Jazz came from the brass bands of New Orleans [3].";
  const std::string named =
      "Honeybees show where flowers are with a waggle dance (Lindqvist, 2008, p. 230). Runny "
      "basaltic lava flows for kilometres before it cools (Miller, 2019, p. 4). Jazz came from "
      "the brass bands of New Orleans (Okafor, 2021, p. 17).";
  const std::string named_fixed =
      "Honeybees show where flowers are with a waggle dance (Miller, 2019, p. 4). Runny basaltic "
      "lava flows for kilometres before it cools (Okafor, 2021, p. 17). Jazz came from the brass "
      "bands of New Orleans (Lindqvist, 2008, p. 230).";
  for (auto method : {FixMethod::bertscore, FixMethod::attention}) {
    INFO(attribution::to_string(method));
    const auto n = data::CitationStyle::numeric;
    auto fixed =
        attribution::fix_citations_with_model(reader_for(n), three_topics(n), numeric, method);
    CHECK(fixed.answer == numeric_fixed);
    CHECK(fixed.points == 3);
    CHECK(fixed.changed == 3);
    const auto m = data::CitationStyle::named;
    fixed = attribution::fix_citations_with_model(reader_for(m), three_topics(m), named, method);
    CHECK(fixed.answer == named_fixed);
    // Right citations stay as they are.
    fixed = attribution::fix_citations_with_model(reader_for(n), three_topics(n), numeric_fixed,
                                                  method);
    CHECK(fixed.answer == numeric_fixed);
    CHECK(fixed.changed == 0);
  }
}

TEST_CASE("ask_model scores each candidate answer as a full forward pass does",
          "[attribution][citefix][smollm2]") {
  auto& reader = reader_for(data::CitationStyle::numeric);
  const auto& tok = *reader.tokenizer;
  const auto prompt = models::encode_chat_prompt(tok, reader.chat, "Which number? Say [2].");
  const std::vector<std::vector<int64_t>> candidates = {
      models::encode_chat_answer(tok, reader.chat, "[1]"),
      models::encode_chat_answer(tok, reader.chat, "[2]"),
      models::encode_chat_answer(tok, reader.chat, "[10]")};
  const auto cached = attribution::continuation_log_probs(reader.model, prompt, candidates);
  REQUIRE(cached.size() == 3);
  torch::NoGradGuard no_grad;
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    auto ids = prompt;
    ids.insert(ids.end(), candidates[c].begin(), candidates[c].end());
    auto lp = torch::log_softmax(
        reader.model->forward(torch::tensor(ids, torch::kInt64).unsqueeze(0))[0], -1);
    double full = 0;
    for (std::size_t i = 0; i < candidates[c].size(); ++i)
      full += lp[int64_t(prompt.size() + i) - 1][candidates[c][i]].item<double>();
    CHECK(cached[c] == Approx(full).margin(1e-3));
  }
  // A whole answer comes back with one citation per point, in the example's style.
  const auto n = data::CitationStyle::numeric;
  const std::string swapped =
      "Honeybees show where flowers are with a waggle dance [3]. Runny basaltic lava flows for "
      "kilometres before it cools [1]. Jazz came from the brass bands of New Orleans [2].";
  auto fixed =
      attribution::fix_citations_with_model(reader, three_topics(n), swapped, FixMethod::ask_model);
  CHECK(fixed.points == 3);
  const auto parsed = data::parse_citations(fixed.answer, three_topics(n).sources, n);
  CHECK(parsed.groups.size() == 3);
}

TEST_CASE("model methods: no citations, unknown and empty documents, answers past the context",
          "[attribution][citefix][smollm2]") {
  const auto n = data::CitationStyle::numeric;
  auto& reader = reader_for(n);
  for (auto method : {FixMethod::bertscore, FixMethod::attention, FixMethod::ask_model}) {
    INFO(attribution::to_string(method));
    // Nothing cited: returned as it is, without reading the model.
    const std::string plain = "Bees dance to show the way.";
    auto fixed = attribution::fix_citations_with_model(reader, three_topics(n), plain, method);
    CHECK(fixed.answer == plain);
    CHECK(fixed.points == 0);
    CHECK_FALSE(fixed.skipped);
    // A citation of a document that does not exist is re-assigned; an empty document is never
    // chosen.
    auto with_empty = three_topics(n);
    with_empty.sources[0].text = "";
    fixed = attribution::fix_citations_with_model(
        reader, with_empty, "Runny basaltic lava flows for kilometres before it cools [7].",
        method);
    CHECK(fixed.answer == "Runny basaltic lava flows for kilometres before it cools [2].");
    // Past the model's positions: kept as it was, and said why.
    const auto positions = reader.model->config.max_positions;
    reader.model->config.max_positions = 64;
    fixed =
        attribution::fix_citations_with_model(reader, three_topics(n), "Lava flows [1].", method);
    reader.model->config.max_positions = positions;
    CHECK(fixed.answer == "Lava flows [1].");
    CHECK(fixed.skipped);
    CHECK(fixed.why.find("positions") != std::string::npos);
  }
}
