#include "models/peft_adapter_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_fits.h"

namespace citeforge::models {
namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& file, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!json_fits<T>(j[key]))
    fail_at(file, std::string("field '") + key + "'", "expected an integer, got " + j[key].dump());
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    fail_at(file, std::string("field '") + key + "'", "has the wrong type");
  }
}

}  // namespace

PeftAdapterSettings parse_peft_adapter_config(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) fail_at(path, "", "expected a JSON object");
  PeftAdapterSettings out;
  if (field<std::string>(j, "peft_type", path, "LORA") != "LORA")
    fail_at(path, "field 'peft_type'", "only LORA adapters are supported");
  if (field<bool>(j, "use_dora", path, false))
    fail_at(path, "field 'use_dora'", "DoRA adapters are not supported");
  if (field<bool>(j, "use_rslora", path, false))
    fail_at(path, "field 'use_rslora'", "rsLoRA scaling is not supported");
  if (field<bool>(j, "fan_in_fan_out", path, false))
    fail_at(path, "field 'fan_in_fan_out'", "transposed (Conv1D) layers are not supported");
  if (field<std::string>(j, "bias", path, "none") != "none")
    fail_at(path, "field 'bias'", "adapters with biases are not supported");
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (j.contains(key) && !j[key].is_null() && !j[key].empty())
      fail_at(path, std::string("field '") + key + "'",
              "per-module ranks or alphas are not supported");
  if (j.contains("modules_to_save") && !j["modules_to_save"].is_null() &&
      !j["modules_to_save"].empty())
    fail_at(path, "field 'modules_to_save'", "fully trained extra modules are not supported");
  if (!j.contains("r")) fail_at(path, "field 'r'", "missing");
  out.r = field<int64_t>(j, "r", path, 0);
  out.alpha = field<double>(j, "lora_alpha", path, 8.0);
  out.dropout = field<double>(j, "lora_dropout", path, 0.0);
  out.base_model = field<std::string>(j, "base_model_name_or_path", path, "");
  if (j.contains("target_modules") && j["target_modules"].is_string())
    out.target_modules = {j["target_modules"].get<std::string>()};
  else
    out.target_modules = field<std::vector<std::string>>(j, "target_modules", path, {"all-linear"});
  if (out.r <= 0) fail_at(path, "field 'r'", "must be > 0");
  if (!std::isfinite(out.alpha) || out.alpha <= 0)
    fail_at(path, "field 'lora_alpha'", "must be a finite number > 0");
  if (!(out.dropout >= 0 && out.dropout < 1))
    fail_at(path, "field 'lora_dropout'", "must be in [0, 1)");
  return out;
}

}  // namespace citeforge::models
