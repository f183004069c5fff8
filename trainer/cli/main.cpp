// citeforge: fine-tune open-weight LLMs to cite their sources. See README.md.
#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>
#include <string>

#include "common/error.h"
#include "common/version.h"
#include "trainer/cli/commands.h"

int main(int argc, char** argv) {
  using namespace citeforge::trainer;
  const Args args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("%s\n", citeforge::version_text().c_str());
    return 0;
  }
  // The command's name for the error line: "citeforge run: error: ...".
  const std::string name = !args.empty() && is_command(args[0]) ? " " + args[0] : "";
  try {
    return run_subcommand("citeforge", "fine-tune open-weight LLMs to cite their sources",
                          citeforge_commands(), args);
  } catch (const CliHelp& help) {
    std::printf("%s", help.text.c_str());
    return 0;
  } catch (const citeforge::Error& e) {
    std::fprintf(stderr, "citeforge%s: error: %s\n", name.c_str(), e.what());
    // A missing or unknown command is a usage error, as with other tools.
    if (name.empty()) return 2;
  } catch (const c10::Error& e) {
    // LibTorch's message without its C++ stack trace, on one line.
    std::string message = e.what_without_backtrace();
    for (auto& c : message)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "citeforge%s: internal error: %s\n", name.c_str(), message.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "citeforge%s: internal error: %s\n", name.c_str(), e.what());
  }
  return 1;
}
