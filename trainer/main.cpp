// citeforge: fine-tune open-weight LLMs to cite their sources. See README.md.
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "trainer/commands.h"

namespace {

using namespace citeforge::trainer;

struct Command {
  std::function<int(const Args&)> run;
  const char* summary;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table = {
      {"generate", {command_generate, "decode a continuation with a model (and adapter)"}},
      {"score", {command_score, "score answers' citations against an example file"}},
      {"run", {command_run, "run a config's whole pipeline (train, evaluate, select, tables)"}},
      {"data", {command_data, "import, synthesise, inspect and render example files"}},
      {"tables", {command_tables, "rebuild the papers' tables and plots of run directories"}},
      {"export", {command_export, "export a checkpoint's adapter (peft) or a merged model"}},
      {"launch", {command_launch, "start N local ranks of a distributed command (like torchrun)"}},
  };
  return table;
}

void print_usage() {
  std::fprintf(stderr, "usage: citeforge COMMAND [options]\n\ncommands:\n");
  for (const auto& [name, command] : commands())
    std::fprintf(stderr, "  %-10s %s\n", name.c_str(), command.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  auto it = commands().find(argv[1]);
  if (it == commands().end()) {
    std::fprintf(stderr, "citeforge: unknown command '%s'\n", argv[1]);
    print_usage();
    return 2;
  }
  try {
    return it->second.run(Args(argv + 2, argv + argc));
  } catch (const citeforge::Error& e) {
    std::fprintf(stderr, "citeforge %s: error: %s\n", argv[1], e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "citeforge %s: internal error: %s\n", argv[1], e.what());
  }
  return 1;
}
