#include "trainer/run/out_of_memory.h"

#include <cstdlib>
#include <fstream>

#include "common/error.h"
#include "common/fault.h"

namespace citeforge::trainer {
namespace {

// The sentences of PyTorch's message that say how much was asked for and what is in use
// (CUDA's allocator: "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
// capacity of ... this process has 78.9 GiB memory in use. Of the allocated memory ...");
// its advice on allocator settings and its documentation link are left out.
std::string allocator_words(const c10::OutOfMemoryError& e) {
  std::string text = e.what_without_backtrace();
  for (const char* cut :
       {" If reserved but unallocated", " See documentation", "\nException raised"})
    if (auto at = text.find(cut); at != std::string::npos) text.resize(at);
  for (auto& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// The process's resident memory, for errors that do not say what is in use (the CPU's).
std::string resident_memory() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) {
      const double kib = std::atof(line.c_str() + 6);
      char text[64];
      std::snprintf(text, sizeof text, "this process has %.2f GiB resident", kib / (1 << 20));
      return text;
    }
  return "";
}

}  // namespace

void throw_out_of_memory(const std::string& what, const c10::OutOfMemoryError& e) {
  std::string words = allocator_words(e);
  if (words.find("in use") == std::string::npos) {
    const std::string rss = resident_memory();
    if (!rss.empty()) words += (words.empty() ? "" : "; ") + rss;
  }
  throw Error(what + ": out of memory (" + words +
              "); lower the batch size or the sequence length, or turn on the stage's "
              "gradient_checkpointing");
}

void maybe_out_of_memory_at(const std::string& point, int64_t count) {
  static const char* spec = std::getenv("CITEFORGE_OOM_AT");
  if (!fault_spec_matches(spec, point, count)) return;
  // What PyTorch 2.11's CUDA caching allocator raises, stack trace included.
  throw c10::OutOfMemoryError(
      {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
      "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
      "of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB "
      "memory in use. Of the allocated memory 76.40 GiB is allocated by PyTorch, and 1.21 GiB "
      "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
      "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
      "documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
      "Exception raised from malloc at c10/cuda/CUDACachingAllocator.cpp:1446 (most recent "
      "call first):\nframe #0: c10::Error::Error(...) + 0x9c (0x7f...)\nframe #1: ...");
}

}  // namespace citeforge::trainer
