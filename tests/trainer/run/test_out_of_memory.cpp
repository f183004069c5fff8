// A device out of memory becomes one line naming what ran, its shapes and the memory in use.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "trainer/run/out_of_memory.h"

using namespace citeforge;

TEST_CASE("an out-of-memory error names the work and the memory in use, without a stack trace",
          "[trainer][errors]") {
  const c10::OutOfMemoryError cuda(
      {"malloc", "CUDACachingAllocator.cpp", 1446},
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB "
      "of which 3.19 MiB is free. Including non-PyTorch memory, this process has 79.18 GiB "
      "memory in use. If reserved but unallocated memory is large try setting "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
  try {
    trainer::throw_out_of_memory("sft epoch 1 step 3: a micro-batch of 8 sequences x 1536 tokens",
                                 cuda);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.rfind("sft epoch 1 step 3: a micro-batch of 8 sequences x 1536 tokens: out of "
                        "memory (CUDA out of memory. Tried to allocate 20.00 MiB.",
                        0) == 0);
    CHECK(message.find("this process has 79.18 GiB memory in use.)") != std::string::npos);
    CHECK(message.find("expandable_segments") == std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find("gradient_checkpointing") != std::string::npos);
  }
}

TEST_CASE("an out-of-memory error that does not say what is in use gets the process's memory",
          "[trainer][errors]") {
  // LibTorch's CPU allocator aborts the process instead of raising its error, so this case is
  // the message of another allocator that names no memory in use.
  const c10::OutOfMemoryError error({"allocate", "alloc.cpp", 1},
                                    "not enough memory: you tried to allocate 2147483648 bytes.");
  const auto describe = [] { return std::string("eval batch 1"); };
  try {
    trainer::naming_out_of_memory(describe, [&]() -> int { throw error; });
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.rfind("eval batch 1: out of memory (not enough memory: you tried to allocate "
                        "2147483648 bytes.; this process has ",
                        0) == 0);
    CHECK(message.find("GiB resident)") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}
