// The list of citeforge's commands.
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

const std::vector<CliSubcommand>& citeforge_commands() {
  static const std::vector<CliSubcommand> commands{
      {"run", &run_cli(), command_run},
      {"launch", &launch_cli(), command_launch},
      {"generate", &generate_cli(), command_generate},
      {"score", &score_cli(), command_score},
      {"paired", &paired_cli(), command_paired},
      {"holm", &holm_cli(), command_holm},
      {"fix-citations", &fix_citations_cli(), command_fix_citations},
      {"evaluate-retriever", &evaluate_retriever_cli(), command_evaluate_retriever},
      {"judge-attributability", &judge_attributability_cli(), command_judge_attributability},
      {"data", nullptr, command_data, data_summary()},
      {"tables", &tables_cli(), command_tables},
      {"export", &export_cli(), command_export},
      {"import", &import_cli(), command_import},
      {"tokenize", &tokenize_cli(), command_tokenize},
  };
  return commands;
}

bool is_command(const std::string& name) {
  for (const auto& c : citeforge_commands())
    if (c.name == name) return true;
  return false;
}

}  // namespace citeforge::trainer
