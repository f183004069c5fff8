// A device that runs out of memory is a user's problem to fix (a smaller batch, shorter
// sequences, gradient checkpointing), so it is reported as one line naming what was running,
// with its shapes and the device's memory in use, never as LibTorch's message with its C++
// stack trace.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <string>

namespace citeforge::trainer {

// Throws the Error for `e` raised while doing `what` ("sft epoch 2 step 14: a micro-batch of
// 8 sequences x 1536 tokens").
[[noreturn]] void throw_out_of_memory(const std::string& what, const c10::OutOfMemoryError& e);

// Runs `work()`; an out-of-memory error inside it becomes throw_out_of_memory(describe(), e).
// `describe` is called only then, so the shapes cost nothing on the way.
template <class Work, class Describe>
decltype(auto) naming_out_of_memory(Describe&& describe, Work&& work) {
  try {
    return work();
  } catch (const c10::OutOfMemoryError& e) {
    throw_out_of_memory(describe(), e);
  }
}

// For the tests: when CITEFORGE_OOM_AT equals "<point>:<count>", throws the out-of-memory error
// a GPU would (its message as PyTorch's CUDA allocator words it), so the error path runs on a
// machine without one.
void maybe_out_of_memory_at(const std::string& point, int64_t count);

}  // namespace citeforge::trainer
