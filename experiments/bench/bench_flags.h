// The benchmarks' command lines are `--flag value` pairs, read by a loop over pairs. A flag
// without a value (`--help` among them) would fall off the end of that loop and start minutes of
// benchmarking with the defaults: it stops the program with one line instead.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace citeforge::bench {

inline void require_flag_pairs(int argc, char** argv) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 < argc && flag != "--help") continue;
    const std::string name = std::filesystem::path(argv[0]).filename().string();
    const std::string problem = flag == "--help" ? "" : flag + " needs a value; ";
    std::fprintf(stderr, "%s: %sthe options are --flag value pairs, listed at the top of %s.cpp\n",
                 name.c_str(), problem.c_str(), ("experiments/bench/" + name).c_str());
    std::exit(2);
  }
}

}  // namespace citeforge::bench
