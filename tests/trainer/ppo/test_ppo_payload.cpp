// What distributed PPO sends between ranks: trajectory shards and flat weights.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "trainer/ppo/ppo_payload.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {
trainer::TrajectoryShard shard(int64_t first_row, int rows, int64_t version) {
  trainer::TrajectoryShard s;
  s.first_row = first_row;
  s.trajectories.policy_version = version;
  for (int i = 0; i < rows; ++i) {
    const int64_t row = first_row + i;
    s.trajectories.example_ids.push_back("ex-" + std::to_string(row));
    s.trajectories.prompts.push_back({1, 10 + row, 11});
    s.trajectories.responses.push_back(std::vector<int64_t>(size_t(row + 1), 7));
    s.trajectories.logprobs.push_back(std::vector<float>(size_t(row + 1), -0.5f - float(row)));
    s.trajectories.answers.push_back("answer [" + std::to_string(row) + "] ünïcode");
    s.trajectories.scores.push_back(0.25 * double(row));
    s.trajectories.precisions.push_back(0.5 + 0.125 * double(row));
    s.trajectories.recalls.push_back(1.0 / double(row + 3));
    s.trajectories.answer_words.push_back(double(row + 2));
    s.trajectories.truncated.push_back(row % 2 ? 1 : 0);
  }
  return s;
}
}  // namespace

TEST_CASE("dist payload: a trajectory shard survives the bytes exactly", "[trainer][distributed]") {
  auto original = shard(3, 2, 17);
  auto back = trainer::decode_shard(trainer::encode_shard(original), "test");
  CHECK(back.first_row == 3);
  CHECK(back.trajectories.policy_version == 17);
  CHECK(back.trajectories.example_ids == original.trajectories.example_ids);
  CHECK(back.trajectories.prompts == original.trajectories.prompts);
  CHECK(back.trajectories.responses == original.trajectories.responses);
  CHECK(back.trajectories.logprobs == original.trajectories.logprobs);
  CHECK(back.trajectories.answers == original.trajectories.answers);
  CHECK(back.trajectories.scores == original.trajectories.scores);
  CHECK(back.trajectories.precisions == original.trajectories.precisions);
  CHECK(back.trajectories.recalls == original.trajectories.recalls);
  CHECK(back.trajectories.answer_words == original.trajectories.answer_words);
  CHECK(back.trajectories.truncated == original.trajectories.truncated);
  auto empty = trainer::decode_shard(trainer::encode_shard({}), "test");
  CHECK(empty.trajectories.prompts.empty());
}

TEST_CASE("dist payload: malformed bytes are an error naming the sender",
          "[trainer][distributed][errors]") {
  const std::string bytes = trainer::encode_shard(shard(0, 2, 1));
  CHECK_THROWS_WITH(trainer::decode_shard(bytes.substr(0, bytes.size() - 3), "rank 2"),
                    Contains("rank 2") && Contains("truncated"));
  CHECK_THROWS_WITH(trainer::decode_shard("XXXX" + bytes.substr(4), "rank 1"),
                    Contains("rank 1") && Contains("magic"));
  CHECK_THROWS_WITH(trainer::decode_shard(bytes + "z", "rank 1"), Contains("trailing"));
}

TEST_CASE("dist payload: shards join into the batch in row order, checked",
          "[trainer][distributed]") {
  auto joined = trainer::join_shards({shard(2, 2, 5), {}, shard(0, 2, 5)}, 4, 5);
  REQUIRE(joined.prompts.size() == 4);
  CHECK(joined.example_ids == std::vector<std::string>{"ex-0", "ex-1", "ex-2", "ex-3"});
  CHECK(joined.policy_version == 5);
  CHECK(joined.truncated == std::vector<uint8_t>{0, 1, 0, 1});
  CHECK(joined.recalls.size() == 4);
  CHECK_THROWS_WITH(trainer::join_shards({shard(0, 2, 5), shard(2, 2, 4)}, 4, 5),
                    Contains("version 4") && Contains("expected 5"));
  CHECK_THROWS_WITH(trainer::join_shards({shard(0, 2, 5), shard(3, 1, 5)}, 4, 5),
                    Contains("do not tile"));
  CHECK_THROWS_WITH(trainer::join_shards({shard(0, 2, 5)}, 4, 5), Contains("2 rows"));
}

TEST_CASE("dist payload: weights flatten and assign back exactly", "[trainer][distributed]") {
  torch::manual_seed(3);
  std::vector<torch::Tensor> params{torch::randn({3, 4}), torch::randn({5}),
                                    torch::randn({2, 2}).to(torch::kFloat64)};
  auto flat = trainer::flatten_weights(params);
  CHECK(flat.numel() == 21);
  CHECK(flat.scalar_type() == torch::kFloat32);
  std::vector<torch::Tensor> copies;
  for (auto& p : params) copies.push_back(torch::zeros_like(p));
  trainer::assign_weights(copies, flat);
  CHECK(torch::equal(copies[0], params[0]));
  CHECK(torch::equal(copies[1], params[1]));
  CHECK(torch::allclose(copies[2], params[2].to(torch::kFloat32).to(torch::kFloat64)));
  CHECK_THROWS_WITH(trainer::assign_weights(copies, flat.narrow(0, 0, 20)),
                    Contains("20 values for 21"));
}
