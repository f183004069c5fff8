#include "common/isolated_call.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "common/error.h"

namespace citeforge {
namespace {

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void child(int fd, const std::function<std::string()>& work) {
  // The parent speaks for the child: what the library prints while it crashes (and, in a
  // sanitizer build, the sanitizer's report of that crash) is not the user's to read; the
  // parent's one line names the file and the signal.
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDERR_FILENO);
  std::string reply;
  try {
    reply = "O" + work();
  } catch (const Error& e) {
    reply = std::string("E") + e.what();
  } catch (const std::exception& e) {
    reply = std::string("X") + e.what();
  } catch (...) {
    reply = "X";
  }
  const bool sent = write_all(fd, reply.data(), reply.size());
  ::_exit(sent ? 0 : 3);
}

}  // namespace

std::string isolated_call(const std::function<std::string()>& work, const std::string& file,
                          const std::string& crashed) {
  int fds[2];
  if (::pipe(fds) != 0)
    fail_at(file, "", std::string("cannot make a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail_at(file, "", std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], work);
  }
  ::close(fds[1]);
  std::string reply;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) fail_at(file, "", crashed + " (" + ::strsignal(WTERMSIG(status)) + ")");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty())
    fail_at(file, "", crashed + " (the reader stopped without an answer)");
  if (reply[0] == 'E') throw Error(reply.substr(1));
  if (reply[0] == 'X') fail_at(file, "", crashed + " (" + reply.substr(1) + ")");
  return reply.substr(1);
}

}  // namespace citeforge
