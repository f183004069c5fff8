// Results made in a work folder beside where they go and renamed into place when complete, so
// a killed import or export never leaves a half-made result; what a killed one leaves behind
// (named PREFIX<pid>...) is removed by the next one in the same place, once its process is gone.
#pragma once

#include <functional>
#include <string>

namespace citeforge {

// Removes the entries of `parent` named `prefix` followed by the id of a process that no longer
// runs (a live process's, or this one's, are left alone), and logs each removal.
void remove_abandoned_work(const std::string& parent, const std::string& prefix,
                           void (*log)(const std::string&) = nullptr);

// Makes the directory `target`: refuses one that exists and is not empty, removes the work
// folders of killed processes, lets `fill` write into a fresh work folder beside it
// (.NAME.<verb>-PID) and renames that into place. On an error the work folder goes and the
// error is rethrown.
void make_directory_atomically(const std::string& target, const std::string& verb,
                               const std::function<void(const std::string& work)>& fill,
                               void (*log)(const std::string&) = nullptr);

}  // namespace citeforge
