#include "trainer/ppo/ppo_stage.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/clock.h"
#include "common/error.h"
#include "common/fault.h"
#include "common/file_io.h"
#include "trainer/distributed/dist_run.h"
#include "trainer/eval/evaluate.h"
#include "trainer/ppo/ppo_iteration.h"
#include "trainer/ppo/ppo_learner.h"
#include "trainer/ppo/ppo_payload.h"
#include "trainer/ppo/ppo_rollout.h"
#include "trainer/run/out_of_memory.h"
#include "trainer/run/progress.h"
#include "trainer/run/run_checkpoint.h"
#include "trainer/run/run_log.h"
#include "trainer/run/train_checkpoint.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// Sends rank 0's trainable weights to every rank as one byte tensor: the version and the value
// count, then the fp32 values. Returns the payload's size in bytes.
int64_t share_weights(DistGroup& group, const std::vector<torch::Tensor>& weights, int64_t version,
                      const std::string& phase) {
  int64_t count = 0;
  for (const auto& w : weights) count += w.numel();
  const int64_t header[2] = {version, count};
  const int64_t bytes = int64_t(sizeof header) + count * 4;
  torch::Tensor payload = torch::empty({bytes}, torch::kUInt8);
  if (group.rank() == 0) {
    auto flat = flatten_weights(weights).contiguous();
    std::memcpy(payload.data_ptr<uint8_t>(), header, sizeof header);
    std::memcpy(payload.data_ptr<uint8_t>() + sizeof header, flat.data_ptr<float>(), count * 4);
  }
  group.broadcast(payload, 0, phase);
  if (group.rank() != 0) {
    int64_t got[2];
    std::memcpy(got, payload.data_ptr<uint8_t>(), sizeof got);
    if (got[0] != version || got[1] != count)
      throw Error("distributed: rank " + std::to_string(group.rank()) + " in '" + phase +
                  "': received weights version " + std::to_string(got[0]) + " (" +
                  std::to_string(got[1]) + " values), expected version " + std::to_string(version) +
                  " (" + std::to_string(count) + " values)");
    auto flat = payload.narrow(0, sizeof header, count * 4).view(torch::kFloat32);
    assign_weights(weights, flat);  // only now, whole: a rollout never sees half an update
  }
  return bytes;
}

// Where this process stands in the run: one process is rank 0 of one, rolling out and learning.
struct PpoRank {
  DistGroup* group = nullptr;  // null for a single process: no collective is needed
  int rank = 0;
  bool lead = true, learner = true;
  int rollout_index = 0, rollout_ranks = 1, learners = 1;
};

PpoRank ppo_rank(RunContext& run) {
  PpoRank r;
  if (!run.setup.dist) return r;
  const DistRun& dist = *run.setup.dist;
  r.group = dist.group.get();
  r.rank = r.group->rank();
  r.lead = r.rank == 0;
  r.learner = dist.roles.is_learner(r.rank);
  r.rollout_index = dist.roles.rollout_index(r.rank);
  r.rollout_ranks = int(dist.roles.rollout.size());
  r.learners = int(dist.roles.learners.size());
  return r;
}

int64_t longest_sequence(const Trajectories& t) {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < t.prompts.size(); ++i)
    longest = std::max(longest, t.prompts[i].size() + t.responses[i].size());
  return int64_t(longest);
}

// How this rank's gradients join the other learners' (none with one learner).
LearnerShare learner_share(const RunContext& run, const PpoRank& me) {
  LearnerShare share;  // one learner: its own gradients, no collective
  if (!me.group || !me.learner) return share;
  const auto& learners = run.setup.dist->roles.learners;
  share.index = int(std::find(learners.begin(), learners.end(), me.rank) - learners.begin());
  share.count = me.learners;
  share.all_reduce_sum = [group = me.group](torch::Tensor& values, const std::string& phase) {
    group->all_reduce_sum(Ranks::learners, values, phase);
  };
  return share;
}

// The iteration to continue after. Every learner restores weights and optimiser from rank 0's
// last checkpoint (a shared run directory), rank 0's iteration count is the one every rank
// continues from, and its weights, broadcast after this as that version, are the rollout
// ranks' policy. An evaluation the interruption cut short is finished first.
int64_t resume_ppo(RunContext& run, const std::string& stage, const PpoRank& me,
                   CheckpointContents& contents, std::optional<PpoLearner>& learner,
                   const std::string& last_dir) {
  int64_t done = 0;
  if (me.learner && run.setup.config.resume == Resume::automatic && fs::exists(last_dir)) {
    TrainingState s = load_checkpoint(last_dir, contents);
    done = s.global_step;
    learner->kl.beta = s.extra.value("beta", learner->kl.beta);
  }
  if (me.group) {
    auto resume_point = torch::tensor({done}, torch::kInt64);
    me.group->broadcast(resume_point, 0, stage + ": resume point");
    if (me.learner && resume_point.item<int64_t>() != done)
      throw Error("distributed: rank " + std::to_string(me.rank) + " found " + last_dir +
                  " at iteration " + std::to_string(done) + ", rank 0 at iteration " +
                  std::to_string(resume_point.item<int64_t>()) +
                  ": the ranks must share one run directory");
    done = resume_point.item<int64_t>();
  }
  if (me.lead && done > 0) {
    std::fprintf(stderr, "[%s] resuming from %s after iteration %lld\n", stage.c_str(),
                 last_dir.c_str(), (long long)done);
    log_resume(run.setup.log,
               nlohmann::json{{"stage", stage}, {"event", "resume"}, {"iteration", done}},
               done + 1);
    if (int k = ppo_eval_index(run.setup.config.ppo, done))
      evaluate_all(run, stage, k, RunDir::relative_checkpoint(ppo_checkpoint_name(stage, k)));
  }
  return done;
}

// Every rollout rank's trajectories, joined in batch order on the learners (one process: its
// own).
Trajectories gather_trajectories(const PpoRank& me, TrajectoryShard shard, int64_t batch_size,
                                 int64_t version, const std::string& phase) {
  if (!me.group) return std::move(shard.trajectories);
  auto shards = me.group->all_gather_bytes(encode_shard(shard), phase);
  if (!me.learner) return {};
  std::vector<TrajectoryShard> decoded;
  for (int r = 0; r < int(shards.size()); ++r)
    decoded.push_back(decode_shard(shards[r], "trajectories of rank " + std::to_string(r)));
  return join_shards(std::move(decoded), batch_size, version);
}

// What an iteration of several processes spent on the wire, beside its metrics.
void add_communication(nlohmann::json& record, const PpoRank& me, const CommStats& before,
                       int64_t version, double iteration_s, int64_t weight_bytes) {
  const CommStats& after = me.group->stats();
  record["ranks"] = me.group->world_size();
  record["learners"] = me.learners;
  record["rollout_ranks"] = me.rollout_ranks;
  record["policy_version"] = version;
  record["iteration_s"] = iteration_s;
  record["comm_wait_s"] = after.wait_s - before.wait_s;
  record["comm_transfer_s"] = after.transfer_s - before.transfer_s;
  record["weights_bytes"] = weight_bytes;
  record["trajectory_bytes"] = after.bytes_gathered - before.bytes_gathered;
  record["gradient_bytes"] = after.bytes_reduced - before.bytes_reduced;
}

}  // namespace

void run_ppo(RunContext& run, const std::string& stage) {
  const PpoRank me = ppo_rank(run);
  const auto& c = run.setup.config.ppo;

  models::ValueHead value_head = make_ppo_value_head(run.setup, run.policy, stage);
  std::optional<PpoLearner> learner;
  if (me.learner)
    learner = make_ppo_learner(run.policy.model, value_head, c, run.data.tokenizer->eos_id());
  CheckpointContents contents{
      {}, ppo_trainable(run.policy, value_head), me.learner ? learner->optimizer.get() : nullptr};
  contents.state.stage = stage;
  std::vector<torch::Tensor> weights;
  for (auto& [name, tensor] : contents.tensors) weights.push_back(tensor);
  const LearnerShare share = learner_share(run, me);

  const std::vector<data::Example> pool = ppo_pool(run.setup.config, run.data);
  const std::string last_dir = run.setup.dir.checkpoint(stage + "-last");
  auto phase = [&](int64_t it, const std::string& what) {
    return stage + " iteration " + std::to_string(it) + ": " + what;
  };

  const int64_t done = resume_ppo(run, stage, me, contents, learner, last_dir);
  int64_t version = done;  // the weights every rank holds: after update `version`
  if (me.group)
    share_weights(*me.group, weights, version, stage + ": weights v" + std::to_string(version));

  auto save = [&](const std::string& dir, int64_t iteration) {
    contents.state.epoch = iteration;
    contents.state.global_step = iteration;
    contents.state.epoch_complete = true;
    contents.state.extra = {{"beta", learner->kl.beta}};
    save_checkpoint(dir, contents, adapter_files(run.policy));
  };

  std::optional<Progress> progress;
  if (me.lead) progress.emplace(stage, c.iterations);
  for (int64_t it = done + 1; it <= c.iterations; ++it) {
    const auto iteration_start = Clock::now();
    const CommStats before = me.group ? me.group->stats() : CommStats{};
    std::vector<data::Example> batch = ppo_prompt_batch(run.setup.config, stage, pool, it);

    // Rollout: each rollout rank generates its contiguous shard of the batch (one process: all
    // of it), every row sampled with the generator it has in the single-process batch.
    TrajectoryShard shard;
    if (me.rollout_index >= 0) {
      auto [first, last] = shard_range(int64_t(batch.size()), me.rollout_ranks, me.rollout_index);
      std::vector<data::Example> mine(batch.begin() + first, batch.begin() + last);
      RolloutOptions options = ppo_rollout_options(run.setup.config, stage, it);
      options.first_row = first;
      shard.first_row = first;
      shard.trajectories = naming_out_of_memory(
          [&] {
            return phase(it, "the rollout of " + std::to_string(mine.size()) + " prompts with " +
                                 std::to_string(options.max_new_tokens) + " new tokens each");
          },
          [&] {
            maybe_out_of_memory_at(stage + "/rollout", it);
            return rollout(run.policy.model, run.data.format, mine, options,
                           run.data.metric_options);
          });
      shard.trajectories.policy_version = version;
    }
    Trajectories trajectories = gather_trajectories(me, std::move(shard), int64_t(batch.size()),
                                                    version, phase(it, "trajectories"));
    const double rollout_s = seconds_since(iteration_start);  // until every shard is here

    // On a CPU an iteration takes minutes; the lead says each phase as it ends.
    const std::string at = "iteration " + std::to_string(it) + "/" + std::to_string(c.iterations);
    PhaseReport report;
    if (me.lead) {
      progress->note(at + ": rollout of " + std::to_string(batch.size()) + " answers in " +
                     format_duration(rollout_s));
      report = [&](const std::string& what) { progress->note(at + ": " + what); };
    }
    PpoStats stats;
    if (me.learner)
      stats = naming_out_of_memory(
          [&] {
            return phase(it, "the update in minibatches of " + std::to_string(c.minibatch_size) +
                                 " answers, the longest prompt + answer " +
                                 std::to_string(longest_sequence(trajectories)) + " tokens");
          },
          [&] {
            maybe_out_of_memory_at(stage + "/update", it);
            return ppo_update(*learner, trajectories, ppo_shuffle_seed(run.setup.config, stage, it),
                              it, share, phase(it, "gradients"), report);
          });
    version = it;
    int64_t weight_bytes = 0;
    if (me.group)
      weight_bytes =
          share_weights(*me.group, weights, version, phase(it, "weights v" + std::to_string(it)));
    const double iteration_s = seconds_since(iteration_start);

    if (me.lead) {
      if (it % c.log_every == 0 || it == c.iterations) {
        auto record = ppo_metrics_record(stage, it, stats, rollout_s);
        if (me.group) add_communication(record, me, before, version, iteration_s, weight_bytes);
        log_record(run.setup.log, record);
        progress->update(it, ppo_status_line(stats, rollout_s));
      }
      ppo_checkpoint_and_evaluate(run, stage, it, save);
    }
    maybe_kill_at(stage, it);
    // One rank's own fault point (CITEFORGE_KILL_AT=ppo@rank2:3), for the kill-one-rank test.
    if (me.group) maybe_kill_at(stage + "@rank" + std::to_string(me.rank), it);
  }
  if (progress) progress->finish("");
}

}  // namespace citeforge::trainer
