// SFT's loss with the sequences' shared, untrained start run once (sft.share_prompt_prefix) must
// be the padded pass's loss with its gradients, and must leave batches it cannot help alone.
#include <catch2/catch.hpp>

#include "models/lora.h"
#include "tests/support/tiny_llama.h"
#include "trainer/sft/lm_trainer.h"

using namespace citeforge;

namespace {

// Sequences that begin with the same `header` tokens, then a prompt of their own, then a
// trained answer.
std::vector<trainer::TokenSequence> sequences_behind(const std::vector<int64_t>& header) {
  const std::vector<std::vector<int64_t>> prompts = {{30, 31, 32}, {33}, {34, 35, 36, 37, 38}};
  const std::vector<std::vector<int64_t>> answers = {{50, 51, 2}, {52, 53, 54, 55, 2}, {56, 2}};
  std::vector<trainer::TokenSequence> out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    trainer::TokenSequence s;
    s.id = "s" + std::to_string(i);
    s.ids = header;
    s.ids.insert(s.ids.end(), prompts[i].begin(), prompts[i].end());
    s.loss_mask.assign(s.ids.size(), 0);
    for (int64_t a : answers[i]) {
      s.ids.push_back(a);
      s.loss_mask.push_back(1);
    }
    out.push_back(s);
  }
  return out;
}

std::vector<int64_t> header_of(int64_t length) {
  std::vector<int64_t> header = {1};
  for (int64_t i = 1; i < length; ++i) header.push_back(3 + (i * 7) % 25);
  return header;
}

trainer::Batch batch_of(const std::vector<trainer::TokenSequence>& sequences) {
  return trainer::collate(sequences, {0, 1, 2}, 0, torch::kCPU);
}

struct LossAndGradients {
  double loss = 0;
  std::vector<torch::Tensor> grads;
};

LossAndGradients loss_and_gradients(const trainer::Batch& batch, bool share) {
  auto model = testing::adapted_tiny_llama();
  auto loss = trainer::masked_lm_loss_sum(model, batch, share);
  loss.backward();
  LossAndGradients out{loss.item<double>(), {}};
  for (auto& [name, p] : models::lora_parameters(model)) out.grads.push_back(p.grad().clone());
  return out;
}

}  // namespace

TEST_CASE("the shared start ends at the first difference or the first trained prediction",
          "[trainer][sft][prefix]") {
  auto sequences = sequences_behind(header_of(20));
  // The prompts' own tokens differ from the first on.
  CHECK(trainer::untrained_shared_prefix(batch_of(sequences)) == 20);
  // A trained prediction inside the header (position 11 predicts token 12) ends it there.
  sequences[1].loss_mask[12] = 1;
  CHECK(trainer::untrained_shared_prefix(batch_of(sequences)) == 11);
  // Identical sequences share everything but the last position, which is left to predict from.
  const auto same = sequences_behind({1, 2, 3});
  std::vector<trainer::TokenSequence> copies(3, same[0]);
  for (auto& c : copies) std::fill(c.loss_mask.begin(), c.loss_mask.end(), 0);
  CHECK(trainer::untrained_shared_prefix(batch_of(copies)) == int64_t(copies[0].ids.size()) - 1);
}

TEST_CASE("SFT's loss with the shared start run once is the padded pass's, gradients too",
          "[trainer][sft][prefix]") {
  const auto batch = batch_of(sequences_behind(header_of(20)));
  const auto padded = loss_and_gradients(batch, false);
  const auto shared = loss_and_gradients(batch, true);
  CHECK(shared.loss == Approx(padded.loss).epsilon(1e-5));
  REQUIRE(shared.grads.size() == padded.grads.size());
  for (size_t i = 0; i < padded.grads.size(); ++i) {
    INFO("adapter tensor " << i);
    const double scale = padded.grads[i].abs().max().item<double>();
    CHECK(scale > 0);
    CHECK((shared.grads[i] - padded.grads[i]).abs().max().item<double>() <= 1e-4 * scale);
  }
}

TEST_CASE("a start of under 16 shared tokens keeps the padded pass to the bit",
          "[trainer][sft][prefix]") {
  // A pre-training batch's rows share BOS alone; its numerics must not move.
  const auto batch = batch_of(sequences_behind(header_of(15)));
  REQUIRE(trainer::untrained_shared_prefix(batch) == 15);
  const auto padded = loss_and_gradients(batch, false);
  const auto shared = loss_and_gradients(batch, true);
  CHECK(shared.loss == padded.loss);
  for (size_t i = 0; i < padded.grads.size(); ++i) CHECK(shared.grads[i].equal(padded.grads[i]));
}
