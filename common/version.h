// Which citeforge this is: what `citeforge --version` prints and what a run directory's
// builds.jsonl records each time a build starts or continues the run, so that a record can name
// the code its numbers came from.
#pragma once

#include <string>

namespace citeforge {

// "citeforge 0.9.0 (commit 1a2b3c4d5e6f[-dirty]), LibTorch 2.11.0[, CUDA 13.0]".
std::string version_text();

}  // namespace citeforge
