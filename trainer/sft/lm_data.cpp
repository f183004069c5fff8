#include "trainer/sft/lm_data.h"

#include <algorithm>
#include <random>

#include "common/error.h"
#include "data/random.h"

namespace citeforge::trainer {

SftEncoding encode_sft(const std::vector<data::Example>& examples,
                       const models::Tokenizer& tokenizer, const models::ChatTemplate& chat,
                       const data::PromptTemplate& prompt, const std::string& reference,
                       int64_t max_len) {
  SftEncoding out;
  for (const auto& ex : examples) {
    auto it = ex.references.find(reference);
    if (it == ex.references.end()) {
      ++out.skipped;
      continue;
    }
    auto p = encode_prompt(tokenizer, chat, prompt, ex);
    auto a = models::encode_chat_answer(tokenizer, chat, it->second);
    if (int64_t(p.size() + a.size()) > max_len) {
      ++out.truncated;
      if (int64_t(a.size()) >= max_len) a.resize(max_len / 2);
      fit_prompt(p, max_len - int64_t(a.size()));
    }
    TokenSequence s;
    s.id = ex.id;
    s.ids = p;
    s.ids.insert(s.ids.end(), a.begin(), a.end());
    s.loss_mask.assign(p.size(), 0);
    s.loss_mask.resize(s.ids.size(), 1);
    out.sequences.push_back(std::move(s));
  }
  return out;
}

std::vector<TokenSequence> encode_pretraining(const std::vector<std::string>& texts,
                                              const models::Tokenizer& tokenizer, int64_t max_len) {
  std::vector<int64_t> stream;
  for (const auto& text : texts) {
    auto ids = tokenizer.encode(text, /*add_bos=*/true, /*add_eos=*/true);
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  std::vector<TokenSequence> out;
  for (std::size_t begin = 0; begin < stream.size(); begin += std::size_t(max_len)) {
    const std::size_t end = std::min(stream.size(), begin + std::size_t(max_len));
    if (end - begin < 2) break;
    TokenSequence s;
    s.id = "chunk-" + std::to_string(out.size());
    s.ids.assign(stream.begin() + begin, stream.begin() + end);
    s.loss_mask.assign(s.ids.size(), 1);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<TokenSequence> copy_drill_sequences(int count, int64_t vocab_size, int64_t first_id,
                                                int64_t bos_id, uint64_t seed,
                                                int distinct_tokens) {
  if (vocab_size - first_id < 2) throw Error("copy drills: the vocabulary has no ordinary tokens");
  data::Rng rng(data::derive_seed(seed, "copy-drills"));
  std::vector<int64_t> pool;
  if (distinct_tokens > 0) {
    if (distinct_tokens > vocab_size - first_id)
      throw Error("copy drills: " + std::to_string(distinct_tokens) +
                  " distinct tokens asked, the vocabulary has " +
                  std::to_string(vocab_size - first_id));
    for (int64_t id = first_id; id < vocab_size; ++id) pool.push_back(id);
    data::shuffle_in_place(pool, rng);
    pool.resize(std::size_t(distinct_tokens));
  }
  auto token = [&] {
    if (!pool.empty()) return pool[data::uniform_below(rng, pool.size())];
    return first_id + int64_t(data::uniform_below(rng, std::size_t(vocab_size - first_id)));
  };
  std::vector<TokenSequence> out;
  for (int i = 0; i < count; ++i) {
    TokenSequence s;
    s.id = "copy-drill-" + std::to_string(i);
    std::vector<int64_t> run(std::size_t(data::uniform_int(rng, 8, 32)));
    for (auto& t : run) t = token();
    s.ids.push_back(bos_id);
    s.ids.insert(s.ids.end(), run.begin(), run.end());
    const int gap = data::uniform_int(rng, 0, 64);
    for (int g = 0; g < gap; ++g) s.ids.push_back(token());
    s.loss_mask.assign(s.ids.size() + 1, 0);  // ... and the repeat's first token
    s.ids.insert(s.ids.end(), run.begin(), run.end());
    s.loss_mask.resize(s.ids.size(), 1);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<std::size_t>> epoch_batches(const std::vector<TokenSequence>& sequences,
                                                    int64_t batch_size, uint64_t seed,
                                                    int64_t epoch) {
  std::vector<std::size_t> order(sequences.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  data::Rng rng(data::derive_seed(seed, "epoch-" + std::to_string(epoch)));
  data::shuffle_in_place(order, rng);
  const std::size_t window = std::size_t(batch_size) * 32;
  for (std::size_t begin = 0; begin < order.size(); begin += window) {
    auto end = order.begin() + std::min(order.size(), begin + window);
    std::stable_sort(order.begin() + begin, end, [&](std::size_t a, std::size_t b) {
      return sequences[a].ids.size() < sequences[b].ids.size();
    });
  }
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t begin = 0; begin < order.size(); begin += std::size_t(batch_size))
    batches.emplace_back(order.begin() + begin,
                         order.begin() + std::min(order.size(), begin + std::size_t(batch_size)));
  data::shuffle_in_place(batches, rng);
  return batches;
}

Batch collate(const std::vector<TokenSequence>& sequences, const std::vector<std::size_t>& indices,
              int64_t pad_id, const torch::Device& device) {
  if (indices.empty()) throw Error("collate: empty batch");
  int64_t width = 0;
  for (auto i : indices) width = std::max<int64_t>(width, int64_t(sequences[i].ids.size()));
  const int64_t B = int64_t(indices.size());
  auto ids = torch::full({B, width}, pad_id, torch::kInt64);
  auto mask = torch::zeros({B, width}, torch::kFloat32);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<float, 2>();
  Batch batch;
  for (int64_t b = 0; b < B; ++b) {
    const auto& s = sequences[indices[b]];
    for (std::size_t t = 0; t < s.ids.size(); ++t) {
      ids_a[b][t] = s.ids[t];
      mask_a[b][t] = s.loss_mask[t];
    }
    batch.tokens += int64_t(s.ids.size());
  }
  batch.ids = ids.to(device);
  batch.targets = ids.narrow(1, 1, width - 1).to(device);
  // The prediction at t is of token t + 1, so it trains when token t + 1 is in the loss mask.
  auto m = mask.narrow(1, 1, width - 1).contiguous();
  batch.trained_tokens = int64_t(m.sum().item<float>());
  batch.mask = m.to(device);
  return batch;
}

}  // namespace citeforge::trainer
