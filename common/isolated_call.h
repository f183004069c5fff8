// Runs work that hands a file from a stranger to a library which may crash on it (libhdf5 reads
// a corrupted global heap with memcpy from wherever the file points) in a forked child, so that
// such a crash is one line for the user instead of a dead process. The child shares nothing
// back but the bytes its work returns.
#pragma once

#include <functional>
#include <string>

namespace citeforge {

// Runs `work` in a child process and returns the bytes it returned. A citeforge::Error thrown in
// the child is thrown here with the same message; any other exception, or the child killed by a
// signal, is an Error that reads "`file`: `crashed`" (with the signal's name). The child touches
// only what `work` touches and leaves with _exit, so no destructor or atexit handler of the
// parent runs twice; its standard error goes to /dev/null, the parent's line speaking for it.
std::string isolated_call(const std::function<std::string()>& work, const std::string& file,
                          const std::string& crashed);

}  // namespace citeforge
