// The c10d layer of distributed runs with real Gloo process groups, the ranks as threads of
// this process: collectives, and that a silent or failing rank stops the others with a message
// naming it and the phase instead of a hang.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <thread>

#include "common/error.h"
#include "trainer/distributed/dist_group.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Runs `body(rank)` on `world` threads, each with its own DistGroup; returns each rank's error
// message ("" when it returned normally).
std::vector<std::string> run_ranks(int world, double timeout_s, std::vector<int> learners,
                                   const std::function<void(trainer::DistGroup&)>& body) {
  const int port = free_port();
  std::vector<std::string> errors(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      try {
        trainer::DistEnv env{rank, world, rank, "127.0.0.1", port, "test"};
        trainer::DistGroupOptions options;
        options.timeout = std::chrono::milliseconds(int64_t(timeout_s * 1000));
        options.learners = learners;
        trainer::DistGroup group(env, options);
        body(group);
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace

TEST_CASE("dist group: Gloo collectives over three ranks", "[trainer][distributed]") {
  auto errors = run_ranks(3, 20, {0, 1}, [](trainer::DistGroup& g) {
    const int r = g.rank();
    auto sum = torch::full({5}, float(r + 1));
    g.all_reduce_sum(trainer::Ranks::world, sum, "sum");
    if (!torch::equal(sum, torch::full({5}, 6.0f))) throw Error("world sum wrong");
    if (r < 2) {
      auto learners = torch::full({2}, float(r + 1));
      g.all_reduce_sum(trainer::Ranks::learners, learners, "learners sum");
      if (!torch::equal(learners, torch::full({2}, 3.0f))) throw Error("learner sum wrong");
    }
    auto value = r == 0 ? torch::arange(4, torch::kFloat32) : torch::zeros({4});
    g.broadcast(value, 0, "broadcast");
    if (!torch::equal(value, torch::arange(4, torch::kFloat32))) throw Error("broadcast wrong");
    auto all = g.all_gather_bytes(std::string(size_t(r * 3), char('a' + r)), "gather");
    if (all != std::vector<std::string>{"", "bbb", "cccccc"}) throw Error("gather wrong");
    g.finish();
  });
  CHECK(errors == std::vector<std::string>(3, ""));
}

TEST_CASE("dist group: a rank that goes silent is named with its last phase",
          "[trainer][distributed][fault]") {
  const auto start = std::chrono::steady_clock::now();
  auto errors = run_ranks(3, 1.0, {0}, [](trainer::DistGroup& g) {
    g.barrier(trainer::Ranks::world, "phase one");
    if (g.rank() == 2) return;  // leaves without a word: its heartbeat stops
    g.barrier(trainer::Ranks::world, "phase two");
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(errors[2].empty());
  for (int r : {0, 1}) {
    INFO(errors[r]);
    // The first to notice names rank 2; the other may instead relay that first message.
    CHECK_THAT(errors[r], Contains("rank 2 sent no heartbeat") && Contains("phase two") &&
                              Contains("its last phase: 'phase one'") &&
                              Contains("last checkpoint is intact"));
  }
  CHECK(seconds < 8);  // the 1 s timeout, not a hang
}

TEST_CASE("dist group: a rank that gives up stops the others at once",
          "[trainer][distributed][fault]") {
  const auto start = std::chrono::steady_clock::now();
  auto errors = run_ranks(3, 30, {0}, [](trainer::DistGroup& g) {
    if (g.rank() == 1) {
      g.abort("ppo: non-finite loss");
      return;
    }
    g.barrier(trainer::Ranks::world, "iteration 3: trajectories");
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r : {0, 2}) {
    INFO(errors[r]);
    CHECK_THAT(errors[r],
               Contains("rank " + std::to_string(r) + " in 'iteration 3: trajectories'") &&
                   Contains("rank 1 failed: ppo: non-finite loss"));
  }
  CHECK(seconds < 10);  // well before the 30 s timeout
}
