// c10d's Gloo (and NCCL) headers declare their classes only with these macros, which LibTorch's
// own build defines. The CPU build links libtorch_cpu, which exports ProcessGroupGloo and
// TCPStore; the gloo headers those declarations include come from Debian's libgloo-dev.
#define USE_C10D_GLOO 1
#ifdef CITEFORGE_WITH_CUDA
#define USE_C10D_NCCL 1
#endif

#include "trainer/distributed/dist_group.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "common/clock.h"
#include "common/error.h"

#ifdef CITEFORGE_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace citeforge::trainer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
// The first line of a c10d or Gloo exception, without LibTorch's C++ backtrace.
std::string short_what(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  return text;
}

std::vector<uint8_t> to_bytes(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string to_string(const std::vector<uint8_t>& v) {
  return {v.begin(), v.end()};
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f s", s);
  return buffer;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Gloo binds each rank to an address of its own host: GLOO_SOCKET_IFNAME as in PyTorch, the
// loopback device for a single-host run, else the address the host name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const DistEnv& env) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (is_loopback(env.master_addr))
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::Backend> make_backend(const std::string& name,
                                               const c10::intrusive_ptr<c10d::Store>& store,
                                               int rank, int size, const DistGroupOptions& o,
                                               const DistEnv& env) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(name, store);
  if (o.backend == Backend::nccl) {
#ifdef CITEFORGE_WITH_CUDA
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = o.timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, size, options);
#else
    throw Error(
        "distributed.backend nccl needs a CUDA build of citeforge (cmake -DCITEFORGE_CUDA=ON); "
        "use gloo on CPUs");
#endif
  }
  auto options = c10d::ProcessGroupGloo::Options::create(o.timeout);
  options->devices.push_back(gloo_device(env));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
}

milliseconds heartbeat_period(milliseconds timeout) {
  return std::clamp(timeout / 5, milliseconds(50), milliseconds(1000));
}

// Beats until `stop`, over a store connection of its own so it never waits behind the main
// thread. A lost store ends it quietly: the main thread finds that out at its next store call.
void heartbeat_loop(DistEnv env, milliseconds timeout, const std::atomic<bool>* stop) {
  try {
    c10d::TCPStoreOptions o;
    o.port = uint16_t(env.master_port);
    o.isServer = false;
    o.waitWorkers = false;
    o.timeout = timeout;
    auto client = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    const auto period = heartbeat_period(timeout);
    const std::string key = "hb/" + std::to_string(env.rank);
    while (!stop->load()) {
      client->add(key, 1);
      const auto next = Clock::now() + period;
      while (!stop->load() && Clock::now() < next) std::this_thread::sleep_for(milliseconds(10));
    }
  } catch (...) {
  }
}

}  // namespace

struct DistGroup::Impl {
  DistEnv env;
  DistGroupOptions options;
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::Backend> world, learners;
  std::vector<int> all_ranks;
  std::thread heartbeat;
  std::atomic<bool> stop_heartbeat{false};
  std::vector<int64_t> beats;                // last heartbeat count seen, per rank
  std::vector<Clock::time_point> beat_seen;  // when it last changed
  std::map<std::string, int64_t> barriers_passed;
  bool failed = false, finished = false;
  CommStats stats;

  // A constructor that fails after starting the heartbeat (a process group that cannot be
  // made) never reaches ~DistGroup; a joinable thread destroyed here would abort the process
  // instead of letting its one-line error out.
  ~Impl() {
    stop_heartbeat = true;
    if (heartbeat.joinable()) heartbeat.join();
  }

  std::string store_address() const {
    return env.master_addr + ":" + std::to_string(env.master_port);
  }

  [[noreturn]] void fail(const std::string& phase, const std::string& reason, bool publish = true) {
    failed = true;
    const std::string who = "rank " + std::to_string(env.rank) + " in '" + phase + "'";
    try {
      if (publish && !store->check({"abort"})) store->set("abort", to_bytes(who + ": " + reason));
      if (env.rank != 0) store->set("left/" + std::to_string(env.rank), to_bytes("1"));
    } catch (...) {
    }
    throw Error("distributed: " + who + ": " + reason +
                "; the last checkpoint is intact: run the same command again to resume");
  }

  // A store call; a lost or silent store means rank 0 (its host) is gone or stuck.
  template <class F>
  auto store_call(const std::string& phase, F&& call) -> decltype(call()) {
    try {
      return call();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail(phase,
           "lost the rendezvous store at " + store_address() + " (" + short_what(e) +
               "): its host, rank 0 (or torchrun's agent), died or hung",
           false);
    }
  }

  // Stops with a message when another rank gave up or went silent for the timeout.
  void check_health(const std::vector<int>& members, const std::string& phase) {
    store_call(phase, [&] {
      if (store->check({"abort"}))
        fail(phase, "stopping because " + to_string(store->get("abort")), false);
      for (int r : members) {
        if (r == env.rank) continue;
        const std::string key = "hb/" + std::to_string(r);
        const int64_t beat = store->check({key}) ? std::stoll(to_string(store->get(key))) : 0;
        if (beat != beats[r]) {
          beats[r] = beat;
          beat_seen[r] = Clock::now();
        } else if (seconds_since(beat_seen[r]) * 1000 > double(options.timeout.count())) {
          const std::string phase_key = "phase/" + std::to_string(r);
          const std::string last =
              store->check({phase_key}) ? to_string(store->get(phase_key)) : "start-up";
          fail(phase, "rank " + std::to_string(r) + " sent no heartbeat for " +
                          seconds_text(seconds_since(beat_seen[r])) + " (its last phase: '" + last +
                          "'): it died or hung");
        }
      }
      return 0;
    });
  }

  std::vector<int> members(Ranks ranks) const {
    return ranks == Ranks::world ? all_ranks : options.learners;
  }

  c10d::Backend& group(Ranks ranks, const std::string& phase) {
    auto& pg = ranks == Ranks::world ? world : learners;
    if (!pg) fail(phase, "this rank is not a learner but joined the learners' collective");
    return *pg;
  }

  // Waits for `key` while watching the others' health; says what it waits for when that
  // takes long, so a slow phase is never a silent one.
  void wait_key(const std::string& key, const std::vector<int>& ranks, const std::string& phase) {
    const auto start = Clock::now();
    auto pause = std::chrono::microseconds(100);
    auto next_health = start + milliseconds(250);
    const double note_every = std::max(60.0, double(options.timeout.count()) / 1000.0);
    double next_note = note_every;
    while (!store_call(phase, [&] { return store->check({key}); })) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
      if (Clock::now() >= next_health) {
        check_health(ranks, phase);
        next_health = Clock::now() + milliseconds(250);
      }
      if (seconds_since(start) >= next_note) {
        next_note += note_every;
        std::fprintf(stderr, "[dist] rank %d: still waiting in '%s' after %.0f s\n", env.rank,
                     phase.c_str(), seconds_since(start));
      }
    }
    stats.wait_s += seconds_since(start);
  }

  void barrier(Ranks ranks, const std::string& phase) {
    if (failed) fail(phase, "an earlier collective failed", false);
    const auto group_members = members(ranks);
    if (group_members.size() <= 1) return;
    const std::string name = ranks == Ranks::world ? "world" : "learners";
    const std::string key = "barrier/" + name + "/" + std::to_string(++barriers_passed[name]);
    const auto start = Clock::now();
    store_call(phase, [&] {
      store->set("phase/" + std::to_string(env.rank), to_bytes(phase));
      // Ranks that disagree on which barrier this is would pair the wrong collectives.
      auto label = to_string(store->compareSet(key + "/phase", {}, to_bytes(phase)));
      if (label != phase)
        fail(phase, "ranks disagree on the phase: another rank is in '" + label + "'");
      if (store->add(key, 1) == int64_t(group_members.size())) store->set(key + "/go", {1});
      return 0;
    });
    stats.wait_s += seconds_since(start);
    wait_key(key + "/go", group_members, phase);
  }

  // Waits for a collective; a failure names the phase and, when it can, the rank to blame.
  void finish_work(const c10::intrusive_ptr<c10d::Work>& work, const std::string& phase) {
    std::string what;
    try {
      if (work->wait(options.timeout)) return;
      what = "did not finish within " + seconds_text(double(options.timeout.count()) / 1000.0);
    } catch (const std::exception& e) {
      what = "failed (" + short_what(e) + ")";
    }
    // Every rank had arrived, so one died or stopped inside the collective: the one whose
    // heartbeat no longer moves is the one to name.
    std::string silent;
    store_call(phase, [&] {
      if (store->check({"abort"}))
        fail(phase, "stopping because " + to_string(store->get("abort")), false);
      auto beat_of = [&](int r) {
        const std::string key = "hb/" + std::to_string(r);
        return store->check({key}) ? std::stoll(to_string(store->get(key))) : int64_t(0);
      };
      std::vector<int64_t> before;
      for (int r : all_ranks) before.push_back(beat_of(r));
      std::this_thread::sleep_for(2 * heartbeat_period(options.timeout) + milliseconds(100));
      for (int r : all_ranks)
        if (r != env.rank && beat_of(r) == before[r])
          silent += (silent.empty() ? "rank " : ", rank ") + std::to_string(r);
      return 0;
    });
    fail(phase,
         "the collective " + what +
             (silent.empty() ? "" : "; " + silent + " sent no heartbeat since: died or hung"));
  }

  at::Tensor to_comm(const torch::Tensor& t) const {
    return options.backend == Backend::nccl ? t.to(options.device).contiguous() : t.contiguous();
  }
};

DistGroup::DistGroup(const DistEnv& env, const DistGroupOptions& options)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.env = env;
  s.options = options;
  for (int r = 0; r < env.world_size; ++r) s.all_ranks.push_back(r);
  s.beats.assign(env.world_size, 0);
#ifdef CITEFORGE_WITH_CUDA
  if (options.backend == Backend::nccl) c10::cuda::set_device(c10::DeviceIndex(env.local_rank));
#endif
  c10d::TCPStoreOptions o;
  o.port = uint16_t(env.master_port);
  // torchrun's agent may host the store itself at MASTER_PORT (as PyTorch's own
  // init_process_group honours); rank 0 then joins it like the others.
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  o.isServer = env.rank == 0 && !(agent_store && std::string(agent_store) == "True");
  o.numWorkers = env.world_size;
  o.waitWorkers = true;
  // Ranks start at their own pace (loading LibTorch, a scheduler starting them one by one), so
  // the rendezvous gets at least a minute; every later store call gets the configured timeout.
  o.timeout = std::max(options.timeout, milliseconds(60000));
  try {
    s.store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    s.store->setTimeout(options.timeout);
  } catch (const std::exception& e) {
    throw Error("distributed start-up: rank " + std::to_string(env.rank) + " of " +
                std::to_string(env.world_size) + ": the " + std::to_string(env.world_size) +
                " ranks did not meet at the rendezvous store " + s.store_address() + " within " +
                seconds_text(double(o.timeout.count()) / 1000.0) + " (" + short_what(e) + ")");
  }
  s.beat_seen.assign(env.world_size, Clock::now());  // every rank is at the store now
  s.heartbeat = std::thread(heartbeat_loop, env, options.timeout, &s.stop_heartbeat);
  const std::string phase = "start-up";
  try {
    s.store->set("phase/" + std::to_string(env.rank), to_bytes(phase));
    s.world = make_backend("world", s.store, env.rank, env.world_size, options, env);
    const auto& l = options.learners;
    const auto me = std::find(l.begin(), l.end(), env.rank);
    if (l.size() > 1 && me != l.end())
      s.learners =
          make_backend("learners", s.store, int(me - l.begin()), int(l.size()), options, env);
  } catch (const Error& e) {
    if (s.failed) throw;
    s.fail(phase, e.what());
  } catch (const std::exception& e) {
    s.fail(phase, "creating the " + std::string(choice_name(options.backend)) +
                      " process group failed (" + short_what(e) + ")");
  }
  s.barrier(Ranks::world, phase);
}

DistGroup::~DistGroup() {
  auto& s = *impl_;
  s.stop_heartbeat = true;
  if (s.heartbeat.joinable()) s.heartbeat.join();
  if (s.finished) return;
  // A process group whose peers died can block in its destructor (Gloo drains its queue);
  // the process is on its way out, so leave them to the operating system.
  (void)s.world.release();
  (void)s.learners.release();
  // Rank 0 hosts the store: linger a moment so the others read why the run stopped instead of
  // finding the store gone.
  if (s.env.rank == 0 && s.store) {
    const auto start = Clock::now();
    try {
      for (int r = 1; r < s.env.world_size && seconds_since(start) < 2.0; ++r) {
        const bool silent =
            seconds_since(s.beat_seen[r]) * 1000 > double(s.options.timeout.count());
        while (!silent && !s.store->check({"left/" + std::to_string(r)}) &&
               seconds_since(start) < 2.0)
          std::this_thread::sleep_for(milliseconds(20));
      }
    } catch (...) {
    }
  }
}

int DistGroup::rank() const {
  return impl_->env.rank;
}
int DistGroup::world_size() const {
  return impl_->env.world_size;
}
const DistEnv& DistGroup::env() const {
  return impl_->env;
}
const CommStats& DistGroup::stats() const {
  return impl_->stats;
}

void DistGroup::barrier(Ranks ranks, const std::string& phase) {
  impl_->barrier(ranks, phase);
}

void DistGroup::all_reduce_sum(Ranks ranks, torch::Tensor& tensor, const std::string& phase) {
  auto& s = *impl_;
  s.barrier(ranks, phase);
  if (ranks == Ranks::learners && s.members(ranks).size() <= 1) return;  // no such group
  const auto start = Clock::now();
  std::vector<at::Tensor> data{s.to_comm(tensor)};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  o.timeout = s.options.timeout;
  s.finish_work(s.group(ranks, phase).allreduce(data, o), phase);
  if (!data[0].is_same(tensor)) tensor.copy_(data[0]);
  s.stats.transfer_s += seconds_since(start);
  s.stats.bytes_reduced += tensor.numel() * int64_t(tensor.element_size());
}

void DistGroup::broadcast(torch::Tensor& tensor, int root, const std::string& phase) {
  auto& s = *impl_;
  s.barrier(Ranks::world, phase);
  const auto start = Clock::now();
  std::vector<at::Tensor> data{s.to_comm(tensor)};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  o.timeout = s.options.timeout;
  s.finish_work(s.world->broadcast(data, o), phase);
  if (!data[0].is_same(tensor)) tensor.copy_(data[0]);
  s.stats.transfer_s += seconds_since(start);
  s.stats.bytes_broadcast += tensor.numel() * int64_t(tensor.element_size());
}

std::vector<std::string> DistGroup::all_gather_bytes(const std::string& mine,
                                                     const std::string& phase) {
  auto& s = *impl_;
  s.barrier(Ranks::world, phase);
  const int W = s.env.world_size;
  const auto start = Clock::now();
  c10d::AllgatherOptions o;
  o.timeout = s.options.timeout;
  auto gather = [&](const torch::Tensor& local) {
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < W; ++r) out[0].push_back(s.to_comm(torch::empty_like(local)));
    std::vector<at::Tensor> in{s.to_comm(local)};
    s.finish_work(s.world->allgather(out, in, o), phase);
    for (auto& t : out[0]) t = t.cpu();
    return out[0];
  };
  // Sizes first: a collective moves tensors of one shape, so payloads are padded to the largest.
  auto sizes = gather(torch::tensor({int64_t(mine.size())}, torch::kInt64));
  int64_t largest = 0;
  for (auto& t : sizes) largest = std::max(largest, t.item<int64_t>());
  std::vector<std::string> result(W);
  if (largest > 0) {
    auto local = torch::zeros({largest}, torch::kUInt8);
    std::memcpy(local.data_ptr<uint8_t>(), mine.data(), mine.size());
    auto all = gather(local);
    for (int r = 0; r < W; ++r)
      result[r].assign(reinterpret_cast<const char*>(all[r].data_ptr<uint8_t>()),
                       size_t(sizes[r].item<int64_t>()));
  }
  s.stats.transfer_s += seconds_since(start);
  s.stats.bytes_gathered += int64_t(W) * (largest + 8);
  return result;
}

void DistGroup::abort(const std::string& reason) noexcept {
  auto& s = *impl_;
  if (s.failed || s.finished) return;
  s.failed = true;
  try {
    const std::string line = reason.substr(0, reason.find('\n'));  // not LibTorch's backtrace
    if (!s.store->check({"abort"}))
      s.store->set("abort", to_bytes("rank " + std::to_string(s.env.rank) + " failed: " + line));
    if (s.env.rank != 0) s.store->set("left/" + std::to_string(s.env.rank), to_bytes("1"));
  } catch (...) {
  }
}

void DistGroup::finish() {
  auto& s = *impl_;
  s.barrier(Ranks::world, "finish");
  s.stop_heartbeat = true;
  if (s.heartbeat.joinable()) s.heartbeat.join();
  try {
    if (s.env.rank != 0) {
      s.store->set("left/" + std::to_string(s.env.rank), to_bytes("1"));
    } else {
      std::vector<std::string> left;
      for (int r = 1; r < s.env.world_size; ++r) left.push_back("left/" + std::to_string(r));
      s.store->wait(left, s.options.timeout);
    }
  } catch (...) {
    // Every rank passed the last barrier: nothing is lost if a goodbye goes missing.
  }
  s.world.reset();
  s.learners.reset();
  s.finished = true;
}

}  // namespace citeforge::trainer
