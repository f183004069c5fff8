#include "trainer/ppo/ppo_payload.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"

namespace citeforge::trainer {
namespace {

constexpr char kMagic[4] = {'C', 'F', 'T', '1'};

struct ByteWriter {
  std::string out;
  template <class T>
  void put(const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <class T>
  void put_list(const std::vector<T>& v) {
    put<int64_t>(int64_t(v.size()));
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_text(const std::string& s) {
    put<int64_t>(int64_t(s.size()));
    out.append(s);
  }
};

struct ByteReader {
  const std::string& in;
  const std::string& what;
  size_t at = 0;
  void need(size_t n) {
    if (in.size() - at < n)
      throw Error(what + ": truncated payload (" + std::to_string(in.size()) +
                  " bytes, needed more at byte " + std::to_string(at) + ")");
  }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  int64_t count() {
    const auto n = get<int64_t>();
    if (n < 0 || uint64_t(n) > in.size())
      throw Error(what + ": corrupt length " + std::to_string(n));
    return n;
  }
  template <class T>
  std::vector<T> get_list() {
    const auto n = size_t(count());
    need(n * sizeof(T));
    std::vector<T> v(n);
    std::memcpy(v.data(), in.data() + at, n * sizeof(T));
    at += n * sizeof(T);
    return v;
  }
  std::string get_text() {
    const auto n = size_t(count());
    need(n);
    std::string s = in.substr(at, n);
    at += n;
    return s;
  }
};

}  // namespace

std::string encode_shard(const TrajectoryShard& shard) {
  const auto& t = shard.trajectories;
  ByteWriter w;
  w.out.append(kMagic, sizeof kMagic);
  w.put<int64_t>(shard.first_row);
  w.put<int64_t>(t.policy_version);
  w.put<int64_t>(int64_t(t.prompts.size()));
  for (size_t i = 0; i < t.prompts.size(); ++i) {
    w.put_text(t.example_ids[i]);
    w.put_list(t.prompts[i]);
    w.put_list(t.responses[i]);
    w.put_list(t.logprobs[i]);
    w.put_text(t.answers[i]);
    w.put<double>(t.scores[i]);
    w.put<double>(t.precisions[i]);
    w.put<double>(t.recalls[i]);
    w.put<double>(t.answer_words[i]);
    w.put<uint8_t>(t.truncated[i]);
  }
  return w.out;
}

TrajectoryShard decode_shard(const std::string& bytes, const std::string& what) {
  ByteReader r{bytes, what};
  r.need(sizeof kMagic);
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw Error(what + ": not a trajectory payload (bad magic)");
  r.at = sizeof kMagic;
  TrajectoryShard shard;
  auto& t = shard.trajectories;
  shard.first_row = r.get<int64_t>();
  t.policy_version = r.get<int64_t>();
  const int64_t rows = r.count();
  for (int64_t i = 0; i < rows; ++i) {
    t.example_ids.push_back(r.get_text());
    t.prompts.push_back(r.get_list<int64_t>());
    t.responses.push_back(r.get_list<int64_t>());
    t.logprobs.push_back(r.get_list<float>());
    t.answers.push_back(r.get_text());
    t.scores.push_back(r.get<double>());
    t.precisions.push_back(r.get<double>());
    t.recalls.push_back(r.get<double>());
    t.answer_words.push_back(r.get<double>());
    t.truncated.push_back(r.get<uint8_t>());
  }
  if (r.at != bytes.size())
    throw Error(what + ": " + std::to_string(bytes.size() - r.at) + " trailing bytes");
  return shard;
}

Trajectories join_shards(std::vector<TrajectoryShard> shards, int64_t rows,
                         int64_t policy_version) {
  std::sort(shards.begin(), shards.end(),
            [](const auto& a, const auto& b) { return a.first_row < b.first_row; });
  Trajectories all;
  all.policy_version = policy_version;
  for (auto& shard : shards) {
    auto& t = shard.trajectories;
    if (t.prompts.empty()) continue;
    if (t.policy_version != policy_version)
      throw Error("trajectories of rows " + std::to_string(shard.first_row) +
                  "+ were sampled with weights version " + std::to_string(t.policy_version) +
                  ", expected " + std::to_string(policy_version));
    if (shard.first_row != int64_t(all.prompts.size()))
      throw Error("trajectory shards do not tile the batch: expected row " +
                  std::to_string(all.prompts.size()) + ", got row " +
                  std::to_string(shard.first_row));
    auto move_into = [](auto& to, auto& from) {
      to.insert(to.end(), std::make_move_iterator(from.begin()),
                std::make_move_iterator(from.end()));
    };
    move_into(all.example_ids, t.example_ids);
    move_into(all.prompts, t.prompts);
    move_into(all.responses, t.responses);
    move_into(all.logprobs, t.logprobs);
    move_into(all.answers, t.answers);
    move_into(all.scores, t.scores);
    move_into(all.precisions, t.precisions);
    move_into(all.recalls, t.recalls);
    move_into(all.answer_words, t.answer_words);
    move_into(all.truncated, t.truncated);
  }
  if (int64_t(all.prompts.size()) != rows)
    throw Error("trajectory shards hold " + std::to_string(all.prompts.size()) +
                " rows, the batch has " + std::to_string(rows));
  return all;
}

torch::Tensor flatten_weights(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : params)
    flat.push_back(p.detach().to(torch::kCPU, torch::kFloat32).reshape(-1));
  return torch::cat(flat);
}

void assign_weights(const std::vector<torch::Tensor>& params, const torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  if (flat.numel() != total)
    throw Error("weights: " + std::to_string(flat.numel()) + " values for " +
                std::to_string(total) + " trainable parameters");
  int64_t at = 0;
  for (const auto& p : params) {
    auto source = flat.narrow(0, at, p.numel()).view(p.sizes());
    p.copy_(source);
    at += p.numel();
  }
}

}  // namespace citeforge::trainer
