// citeforge launch --nproc N [--master-addr A] [--master-port P] [--grace S] -- COMMAND [ARGS...]
//
// Starts N copies of `citeforge COMMAND ARGS...` on this machine with the variables torchrun
// sets (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), for users
// without torchrun. Each rank's stderr lines come out prefixed "[rank R] "; stdout passes
// through. When a rank fails, the others get `grace` seconds to stop by themselves (they do,
// within the config's distributed.timeout_s, naming the rank and the phase) before they are
// terminated; the exit code is that of the first rank that failed.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {
const CliCommand& launch_cli() {
  static const CliCommand command{
      "launch",
      "start N local ranks of a distributed command (like torchrun)",
      "-- COMMAND [ARGS...]",
      "e.g. citeforge launch --nproc 3 -- run CONFIG.yaml",
      {{"nproc", "N", "ranks to start (required)"},
       {"master-addr", "ADDR", "rank 0's address", "127.0.0.1"},
       {"master-port", "PORT", "rank 0's port (default: a free one)"},
       {"grace", "S", "seconds the others get to stop after one rank fails", "30"}}};
  return command;
}

namespace {

volatile std::sig_atomic_t g_signal = 0;
void remember_signal(int sig) {
  g_signal = sig;
}

// A port the kernel says is free now; rank 0 binds it a moment later (torchrun does the same).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error("launch: socket() failed: " + std::string(std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw Error("launch: could not find a free port: " + std::string(std::strerror(errno)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string self_path() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) throw Error("launch: cannot find the citeforge executable (/proc/self/exe)");
  return std::string(buffer, size_t(n));
}

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int err_fd = -1;      // read end of its stderr
  std::string pending;  // a line not yet ended
  bool running = true;
  int status = 0;
};

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "ended (status " + std::to_string(status) + ")";
}

bool failed(int status) {
  return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

void say(const std::string& text) {
  std::fprintf(stderr, "[launch] %s\n", text.c_str());
}

// Copies what a rank wrote to stderr, one whole line at a time with its rank in front.
void relay(Child& child, bool prefix, bool flush_partial) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(child.err_fd, buffer, sizeof buffer);
    if (n > 0) {
      child.pending.append(buffer, size_t(n));
      if (size_t(n) == sizeof buffer) continue;
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      close(child.err_fd);
      child.err_fd = -1;
      flush_partial = true;
    }
    break;
  }
  const std::string tag = prefix ? "[rank " + std::to_string(child.rank) + "] " : "";
  size_t start = 0;
  for (size_t nl; (nl = child.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = tag + child.pending.substr(start, nl - start + 1);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  child.pending.erase(0, start);
  if (flush_partial && !child.pending.empty()) {
    const std::string line = tag + child.pending + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    child.pending.clear();
  }
  std::fflush(stderr);
}

Child spawn(int rank, int nproc, const std::string& addr, int port, const std::string& exe,
            const std::vector<std::string>& command) {
  // Close-on-exec, so no rank inherits another's pipe; dup2 below clears it for stderr.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw Error("launch: pipe() failed: " + std::string(std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error("launch: fork() failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    const std::string r = std::to_string(rank), n = std::to_string(nproc);
    setenv("RANK", r.c_str(), 1);
    setenv("LOCAL_RANK", r.c_str(), 1);
    setenv("WORLD_SIZE", n.c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
    setenv("GROUP_RANK", "0", 1);
    setenv("MASTER_ADDR", addr.c_str(), 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "launch: exec %s failed: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);  // relay() never blocks
  Child child;
  child.rank = rank;
  child.pid = pid;
  child.err_fd = fds[0];
  return child;
}

}  // namespace

int command_launch(const Args& raw) {
  auto split = std::find(raw.begin(), raw.end(), "--");
  auto args = parse_cli(launch_cli(), Args(raw.begin(), split));
  args.no_positional();
  if (split == raw.end() || split + 1 == raw.end())
    throw Error("launch: expected -- COMMAND [ARGS...] after the options");
  const long nproc = args.integer("nproc");
  if (nproc < 1 || nproc > 1024) throw Error("launch: --nproc must be in [1, 1024]");
  const std::string addr = args.require("master-addr");
  const long port = args.has("master-port") ? args.integer("master-port") : free_port();
  if (port < 1 || port > 65535) throw Error("launch: --master-port must be in [1, 65535]");
  const double grace = args.number("grace");
  const std::vector<std::string> command(split + 1, raw.end());
  const std::string exe = self_path();

  std::signal(SIGINT, remember_signal);
  std::signal(SIGTERM, remember_signal);
  std::signal(SIGPIPE, SIG_IGN);
  say("starting " + std::to_string(nproc) + " ranks of 'citeforge " + command.front() +
      "' with MASTER_ADDR=" + addr + " MASTER_PORT=" + std::to_string(port));
  std::vector<Child> children;
  for (int rank = 0; rank < nproc; ++rank)
    children.push_back(spawn(rank, int(nproc), addr, int(port), exe, command));

  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure_at;
  int exit_code = 0;
  bool terminated = false, forwarded = false;
  for (;;) {
    std::vector<pollfd> fds;
    for (auto& c : children)
      if (c.err_fd >= 0) fds.push_back({c.err_fd, POLLIN, 0});
    if (!fds.empty())
      poll(fds.data(), fds.size(), 100);
    else
      usleep(100 * 1000);
    for (auto& c : children)
      if (c.err_fd >= 0) {
        for (auto& p : fds)
          if (p.fd == c.err_fd && p.revents) relay(c, nproc > 1, false);
      }
    for (auto& c : children) {
      if (!c.running || waitpid(c.pid, &c.status, WNOHANG) != c.pid) continue;
      c.running = false;
      if (!failed(c.status)) continue;
      say("rank " + std::to_string(c.rank) + " (pid " + std::to_string(c.pid) + ") " +
          describe_exit(c.status));
      if (!first_failure_at) {
        first_failure_at = Clock::now();
        exit_code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status);
      }
    }
    if (g_signal && !forwarded) {
      forwarded = true;
      say("got signal " + std::to_string(int(g_signal)) + ": passing it on to the ranks");
      for (auto& c : children)
        if (c.running) kill(c.pid, int(g_signal));
    }
    const bool any_running =
        std::any_of(children.begin(), children.end(), [](const Child& c) { return c.running; });
    const bool any_open =
        std::any_of(children.begin(), children.end(), [](const Child& c) { return c.err_fd >= 0; });
    if (!any_running && !any_open) break;
    if (!any_running) {  // drain what is left in the pipes
      for (auto& c : children)
        if (c.err_fd >= 0) relay(c, nproc > 1, true);
      continue;
    }
    if (first_failure_at && !terminated &&
        std::chrono::duration<double>(Clock::now() - *first_failure_at).count() > grace) {
      terminated = true;
      for (auto& c : children)
        if (c.running) {
          say("rank " + std::to_string(c.rank) + " still runs " + std::to_string(int(grace)) +
              " s after the first failure: killing it");
          kill(c.pid, SIGKILL);
        }
    }
  }
  if (exit_code == 0 && g_signal) exit_code = 128 + int(g_signal);
  if (exit_code == 0) say("all " + std::to_string(nproc) + " ranks finished");
  return exit_code;
}

}  // namespace citeforge::trainer
