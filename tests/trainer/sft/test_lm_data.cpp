#include <catch2/catch.hpp>
#include <set>

#include "data/prompt_template.h"
#include "tests/support/test_paths.h"
#include "trainer/sft/lm_data.h"
#include "trainer/sft/lm_trainer.h"

using namespace citeforge;

namespace {
data::Example example(const std::string& id, const std::string& answer) {
  data::Example ex;
  ex.id = id;
  ex.question = "What does the Belbeldor eat?";
  ex.sources = {{1, "", "Crabs are the main food of the Belbeldor.", data::Label::relevant},
                {2, "", "Settlers founded the town of Mirofi.", data::Label::irrelevant}};
  ex.references["teacher"] = answer;
  return ex;
}
}  // namespace

TEST_CASE("SFT sequences train on the answer tokens only", "[trainer][sft]") {
  models::Tokenizer tok(testing::fixture_path("models/stories260K/tokenizer.model"));
  auto chat = models::chat_template("plain");
  auto tmpl = data::find_prompt_template("rage_numeric", testing::source_path("configs/templates"));
  auto ex = example("a", "The Belbeldor eats crabs [1].");
  auto enc = trainer::encode_sft({ex, example("b", "x")}, tok, chat, tmpl, "teacher", 4096);
  REQUIRE(enc.sequences.size() == 2);
  const auto& s = enc.sequences[0];
  auto prompt = trainer::encode_prompt(tok, chat, tmpl, ex);
  auto answer = models::encode_chat_answer(tok, chat, "The Belbeldor eats crabs [1].");
  REQUIRE(s.ids.size() == prompt.size() + answer.size());
  for (std::size_t i = 0; i < s.ids.size(); ++i) CHECK(s.loss_mask[i] == (i >= prompt.size()));
  CHECK(s.ids.back() == tok.eos_id());  // the model learns to stop

  // Collated, the mask moves to the prediction positions: target t+1 trains iff token t+1 is
  // an answer token; padding never trains.
  auto batch = trainer::collate(enc.sequences, {0, 1}, tok.eos_id(), torch::kCPU);
  CHECK(batch.trained_tokens ==
        int64_t(answer.size() + enc.sequences[1].ids.size() -
                trainer::encode_prompt(tok, chat, tmpl, example("b", "x")).size()));
  auto mask = batch.mask[0];
  CHECK(mask.sum().item<float>() == float(answer.size()));
  CHECK(mask[int64_t(prompt.size()) - 2].item<float>() == 0);
  CHECK(mask[int64_t(prompt.size()) - 1].item<float>() == 1);

  // Examples without the reference are skipped and counted.
  data::Example none = ex;
  none.references.clear();
  CHECK(trainer::encode_sft({none}, tok, chat, tmpl, "teacher", 4096).skipped == 1);
}

TEST_CASE("over-long SFT sequences are cut to max_len keeping the answer", "[trainer][sft]") {
  models::Tokenizer tok(testing::fixture_path("models/stories260K/tokenizer.model"));
  auto chat = models::chat_template("plain");
  auto tmpl = data::find_prompt_template("rage_numeric", testing::source_path("configs/templates"));
  auto enc = trainer::encode_sft({example("a", "Crabs [1].")}, tok, chat, tmpl, "teacher", 40);
  REQUIRE(enc.sequences.size() == 1);
  CHECK(enc.truncated == 1);
  CHECK(enc.sequences[0].ids.size() == 40);
  CHECK(enc.sequences[0].ids.front() == tok.bos_id());
  CHECK(enc.sequences[0].ids.back() == tok.eos_id());
}

TEST_CASE("fit_prompt keeps a long prompt's head and tail", "[trainer][sft]") {
  std::vector<int64_t> prompt = {1, 10, 11, 12, 13, 14, 15, 16, 17, 99};
  auto fits = prompt;
  CHECK_FALSE(trainer::fit_prompt(fits, 10));
  CHECK(fits == prompt);
  CHECK(trainer::fit_prompt(prompt, 5));
  CHECK(prompt == std::vector<int64_t>{1, 10, 16, 17, 99});
}

TEST_CASE("epoch batches are a reproducible permutation", "[trainer][sft]") {
  std::vector<trainer::TokenSequence> seqs(37);
  for (std::size_t i = 0; i < seqs.size(); ++i) seqs[i].ids.assign(1 + (i * 7) % 13, 1);
  auto a = trainer::epoch_batches(seqs, 4, 5, 1);
  CHECK(a == trainer::epoch_batches(seqs, 4, 5, 1));
  CHECK(a != trainer::epoch_batches(seqs, 4, 5, 2));
  std::vector<int> seen(seqs.size(), 0);
  for (const auto& b : a) {
    CHECK(b.size() <= 4);
    for (auto i : b) ++seen[i];
  }
  for (int s : seen) CHECK(s == 1);
}

TEST_CASE("LR schedule: linear warm-up, then constant or cosine to zero", "[trainer][sft]") {
  using trainer::lr_factor;
  CHECK(lr_factor(0, 100, 4, trainer::TrainSchedule::constant) == Approx(0.25));
  CHECK(lr_factor(3, 100, 4, trainer::TrainSchedule::constant) == Approx(1.0));
  CHECK(lr_factor(50, 100, 4, trainer::TrainSchedule::constant) == Approx(1.0));
  CHECK(lr_factor(4, 104, 4, trainer::TrainSchedule::cosine) == Approx(1.0));
  CHECK(lr_factor(54, 104, 4, trainer::TrainSchedule::cosine) == Approx(0.5));
  CHECK(lr_factor(104, 104, 4, trainer::TrainSchedule::cosine) == Approx(0.0).margin(1e-12));
}

TEST_CASE("copy drills repeat a random run and train only on the predictable repeat",
          "[trainer][pretrain]") {
  auto drills = trainer::copy_drill_sequences(50, 100, 3, 1, 7);
  REQUIRE(drills.size() == 50);
  for (const auto& s : drills) {
    REQUIRE(s.ids.size() == s.loss_mask.size());
    CHECK(s.ids.front() == 1);
    std::size_t first_trained = 0;
    while (first_trained < s.loss_mask.size() && !s.loss_mask[first_trained]) ++first_trained;
    // Trained: every token after the repeat's first, through the end.
    const std::size_t run = s.ids.size() - first_trained + 1;
    CHECK(run >= 8);
    CHECK(run <= 32);
    for (std::size_t t = first_trained; t < s.ids.size(); ++t) CHECK(s.loss_mask[t] == 1);
    // The repeat equals the run right after BOS, and no special id appears.
    const std::size_t repeat = s.ids.size() - run;
    for (std::size_t i = 0; i < run; ++i) CHECK(s.ids[repeat + i] == s.ids[1 + i]);
    for (std::size_t t = 1; t < s.ids.size(); ++t) {
      CHECK(s.ids[t] >= 3);
      CHECK(s.ids[t] < 100);
    }
    CHECK(s.ids.size() - 1 - 2 * run <= 64);  // the gap
  }
  // Deterministic in the seed.
  CHECK(trainer::copy_drill_sequences(5, 100, 3, 1, 7)[4].ids == drills[4].ids);
  CHECK(trainer::copy_drill_sequences(5, 100, 3, 1, 8)[4].ids != drills[4].ids);
  CHECK_THROWS_WITH(trainer::copy_drill_sequences(1, 4, 3, 1, 7), Catch::Contains("vocabulary"));
  // A small token set: every drill draws from the same few ids.
  std::set<int64_t> used;
  for (const auto& s : trainer::copy_drill_sequences(200, 1000, 3, 1, 7, 5))
    used.insert(s.ids.begin() + 1, s.ids.end());
  CHECK(used.size() == 5);
  for (auto id : used) CHECK((id >= 3 && id < 1000));
  CHECK_THROWS_WITH(trainer::copy_drill_sequences(1, 10, 3, 1, 7, 8), Catch::Contains("distinct"));
}
