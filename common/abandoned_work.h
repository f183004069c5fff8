// Work folders and files that a killed import or export leaves behind (named PREFIX<pid>...,
// beside where the result was to go) are removed by the next one in the same place, once their
// process is gone, so a kill never leaves litter for good.
#pragma once

#include <string>

namespace citeforge {

// Removes the entries of `parent` named `prefix` followed by the id of a process that no longer
// runs (a live process's, or this one's, are left alone), and logs each removal.
void remove_abandoned_work(const std::string& parent, const std::string& prefix,
                           void (*log)(const std::string&) = nullptr);

}  // namespace citeforge
