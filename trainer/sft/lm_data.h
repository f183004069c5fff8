// Token sequences for gradient-descent stages and the batches built from them. A sequence's
// loss mask says which next-token predictions train: the answer tokens for SFT (the prompt is
// masked), every token for language-model pre-training.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/example.h"
#include "data/prompt_template.h"
#include "models/chat_format.h"
#include "models/tokenizer.h"
#include "trainer/run/prompt_format.h"

namespace citeforge::trainer {

struct TokenSequence {
  std::string id;
  std::vector<int64_t> ids;
  std::vector<uint8_t> loss_mask;  // per token: 1 = predicting this token is trained
};

struct SftEncoding {
  std::vector<TokenSequence> sequences;
  int truncated = 0;  // sequences cut to max_len (the middle of the prompt cut, see fit_prompt)
  int skipped = 0;    // examples without the reference answer
};

// prompt + reference answer (+ the chat format's closing EOS); loss on the answer only.
SftEncoding encode_sft(const std::vector<data::Example>& examples,
                       const models::Tokenizer& tokenizer, const models::ChatTemplate& chat,
                       const data::PromptTemplate& prompt, const std::string& reference,
                       int64_t max_len);

// Texts concatenated (each BOS text EOS) and cut into sequences of max_len; loss everywhere.
std::vector<TokenSequence> encode_pretraining(const std::vector<std::string>& texts,
                                              const models::Tokenizer& tokenizer, int64_t max_len);

// `count` copy drills for pre-training: BOS, a run A of 8-32 random tokens, a gap of 0-64
// random tokens, then A again, with the loss on A's repeat after its first token (the first
// cannot be known). Token ids are drawn from [first_id, vocab_size), so special ids never
// appear; with `distinct_tokens` > 0 only from a seeded random subset of that many of them.
// Deterministic in `seed`.
std::vector<TokenSequence> copy_drill_sequences(int count, int64_t vocab_size, int64_t first_id,
                                                int64_t bos_id, uint64_t seed,
                                                int distinct_tokens = 0);

// Length-bucketed micro-batches of sequence indices for one epoch: a shuffle seeded by
// (seed, epoch), then sorting within windows of 32 batches by length so padding stays small,
// then a seeded shuffle of the batches. Same inputs, same batches.
std::vector<std::vector<std::size_t>> epoch_batches(const std::vector<TokenSequence>& sequences,
                                                    int64_t batch_size, uint64_t seed,
                                                    int64_t epoch);

struct Batch {
  torch::Tensor ids;      // [B, T] int64, right-padded with pad_id
  torch::Tensor targets;  // [B, T-1] int64: ids shifted left
  torch::Tensor mask;     // [B, T-1] float: 1 where the target trains
  int64_t trained_tokens = 0;
  int64_t tokens = 0;  // real tokens (for throughput)
};

Batch collate(const std::vector<TokenSequence>& sequences, const std::vector<std::size_t>& indices,
              int64_t pad_id, const torch::Device& device);

}  // namespace citeforge::trainer
