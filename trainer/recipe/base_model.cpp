#include "trainer/recipe/base_model.h"

#include <set>

#include "common/file_io.h"
#include "data/citations.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/model_init.h"
#include "models/tokenizer_train.h"
#include "trainer/run/progress.h"
#include "trainer/sft/lm_data.h"
#include "trainer/sft/lm_trainer.h"
#include "trainer/sft/sft_stage.h"

namespace citeforge::trainer {
namespace {

// The reading split's answers with the citations removed, or said in words
// (data.reading_sources), under the name "reading".
std::vector<data::Example> reading_examples(const RunContext& run) {
  std::vector<data::Example> reading;
  for (const auto& ex : run.data.pretrain_reading) {
    auto answer = ex.references.find(run.setup.config.data.reference);
    if (answer == ex.references.end()) continue;
    auto parsed = data::parse_citations(answer->second, ex.sources, ex.citation_style);
    reading.push_back(ex);
    reading.back().references["reading"] =
        run.setup.config.data.reading_sources == ReadingSources::prose
            ? data::citations_in_words(answer->second, parsed)
            : data::strip_citations(answer->second, parsed);
  }
  return reading;
}

// Text a built model learns its language from: the passages, the questions and the training
// prompts as the model will see them, never a training answer (those are what SFT teaches),
// and the passages of the reading split.
std::vector<std::string> world_texts(const RunContext& run) {
  std::vector<std::string> texts;
  std::set<std::string> seen;
  for (const auto* examples : {&run.data.train, &run.data.pretrain_reading})
    for (const auto& ex : *examples) {
      for (const auto& s : ex.sources)
        if (seen.insert(s.text).second) texts.push_back(s.text);
      if (examples == &run.data.pretrain_reading) continue;
      texts.push_back(ex.question);
      texts.push_back(data::render_prompt(run.data.format.prompt, ex));
    }
  return texts;
}

// Pre-training sequences: the world's text as packed language-model chunks, then the reading
// split, about entities of its own, as prompt -> citation-free answer with the loss on the
// answer. The base thereby learns to read (documents + question -> the fact) but never to
// cite, like the chat models of the papers; what SFT and PPO add is the citing.
struct PretrainingData {
  std::vector<TokenSequence> sequences;
  std::size_t reading = 0;  // how many of them are reading questions
  std::size_t drills = 0;   // how many are copy drills (pretrain.copy_drills)
};

PretrainingData pretraining_sequences(const RunContext& run) {
  PretrainingData data;
  data.sequences = encode_pretraining(world_texts(run), *run.data.tokenizer,
                                      run.setup.config.pretrain.max_seq_len);
  auto reading =
      encode_sft(reading_examples(run), *run.data.tokenizer, run.data.format.chat,
                 run.data.format.prompt, "reading", run.setup.config.pretrain.max_seq_len);
  data.reading = reading.sequences.size();
  for (auto& s : reading.sequences) data.sequences.push_back(std::move(s));
  const auto& p = run.setup.config.pretrain;
  auto drills = copy_drill_sequences(p.copy_drills, run.data.tokenizer->vocab_size(),
                                     run.data.tokenizer->eos_id() + 1, run.data.tokenizer->bos_id(),
                                     run.setup.config.seed, p.copy_drill_tokens);
  data.drills = drills.size();
  for (auto& s : drills) data.sequences.push_back(std::move(s));
  return data;
}

// A .gguf model is imported once into the cache (models/gguf_import.h) and read from there like
// any HF directory; its tokenizer is the imported tokenizer.json.
void import_gguf_base(RunContext& run) {
  run.policy.base_model_dir = models::gguf_model_dir(
      run.setup.config.model.path, [](const std::string& line) { say(line); },
      run.setup.config.model.non_finite_weights, run.setup.dtype);
}

void prepare_tokenizer(RunContext& run) {
  const auto& m = run.setup.config.model;
  std::string path = m.tokenizer;
  if (path.empty() && !run.policy.base_model_dir.empty())
    path = models::find_tokenizer(run.policy.base_model_dir);
  if (m.tokenizer_vocab > 0) {
    path = run.setup.dir.built_tokenizer();
    if (!file_exists(path)) {
      say("training a " + std::to_string(m.tokenizer_vocab) + "-piece SentencePiece tokenizer");
      auto texts = world_texts(run);
      for (const auto& ex : reading_examples(run)) {
        texts.push_back(data::render_prompt(run.data.format.prompt, ex));
        texts.push_back(ex.references.at("reading"));
      }
      for (const auto& ex : run.data.train) {
        texts.push_back(data::render_prompt(run.data.format.prompt, ex));
        auto it = ex.references.find(run.setup.config.data.reference);
        if (it != ex.references.end()) texts.push_back(it->second);
      }
      models::train_tokenizer(texts, m.tokenizer_vocab, path);
    }
  }
  run.data.tokenizer = std::make_unique<models::Tokenizer>(path);
  run.data.format.tokenizer = run.data.tokenizer.get();
}

models::ModelConfig built_model_config(const RunContext& run) {
  const auto& b = run.setup.config.model.build;
  models::ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = b.hidden_size;
  c.intermediate_size = b.intermediate_size;
  c.num_layers = b.num_layers;
  c.num_heads = b.num_heads;
  c.num_kv_heads = b.num_kv_heads;
  c.head_dim = b.hidden_size / b.num_heads;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = b.rope_theta;
  c.max_positions = b.max_positions;
  c.vocab_size = run.data.tokenizer->vocab_size();
  c.tie_word_embeddings = b.tie_word_embeddings;
  c.bos_token_id = run.data.tokenizer->bos_id();
  c.eos_token_ids = {run.data.tokenizer->eos_id()};
  return c;
}

// A built model starts random and, when configured, learns the world's language first
// (full-parameter pre-training); it is then saved in HF layout as the run's base model.
void build_base_model(RunContext& run) {
  const std::string dir = run.setup.dir.base_model();
  if (models::has_model_weights(dir)) return;
  auto model = models::init_random_model(built_model_config(run), run.setup.config.seed);
  model->to(run.setup.device);
  if (run.setup.config.pretrain.enabled) {
    auto pretraining = pretraining_sequences(run);
    auto& sequences = pretraining.sequences;
    say("pre-training the built model on " +
        std::to_string(sequences.size() - pretraining.reading - pretraining.drills) +
        " chunks of the world's text and " + std::to_string(pretraining.reading) +
        " reading questions answered " +
        (run.setup.config.data.reading_sources == ReadingSources::prose
             ? "with the documents named in words"
             : "without citations") +
        (pretraining.drills ? " and " + std::to_string(pretraining.drills) + " copy drills"
                            : std::string()));
    LmTrainingJob job = run_training_job(run, "pretrain", run.setup.config.pretrain);
    job.sequences = &sequences;
    job.model = model;
    for (auto& item : model->named_parameters())
      job.trainable.emplace_back(item.key(), item.value());
    run_lm_training(job);
  }
  model->to(torch::kCPU);
  models::save_model(model, dir);
  // transformers' AutoTokenizer needs to be told what the tokenizer.model beside it is.
  write_file_atomically(dir + "/tokenizer_config.json",
                        models::sentencepiece_tokenizer_config(*run.data.tokenizer).dump(2) + "\n");
  say("saved the base model in HF layout to " + dir);
}

}  // namespace

void check_base_model(const RunConfig& config, torch::ScalarType dtype) {
  const auto& model = config.model;
  if (models::is_gguf_path(model.path))
    models::gguf_model_dir(
        model.path, [](const std::string& line) { say(line); }, model.non_finite_weights, dtype);
  else if (!model.build_enabled)
    models::check_model_dir(model.path);
}

void prepare_base_model(RunContext& run) {
  const auto& model = run.setup.config.model;
  if (models::is_gguf_path(model.path))
    import_gguf_base(run);
  else if (!model.build_enabled)
    run.policy.base_model_dir = model.path;
  prepare_tokenizer(run);
  if (!model.build_enabled) return;
  build_base_model(run);
  run.policy.base_model_dir = run.setup.dir.base_model();
}

}  // namespace citeforge::trainer
