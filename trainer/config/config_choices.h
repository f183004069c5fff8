// The config's closed sets of choices as enums, and the one converter between them and their
// names, which the YAML schema (run_config.cpp) and the commands' flags (trainer/cli/) share:
// a misspelt choice is an error naming the place and every valid name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/non_finite_weights.h"
#include "rewards/metrics.h"

namespace citeforge::trainer {

enum class Device { cpu, cuda };
enum class Dtype { float32, bfloat16 };
enum class Quantization { none, nf4 };          // of the frozen base
enum class Resume { automatic, never };         // "auto" | "never"
enum class TrainSchedule { constant, cosine };  // after warm-up
enum class PpoSchedule { constant, linear };    // linear decays to 0 over the iterations
enum class KlEstimator { k1, k3 };              // per-token KL to the reference
enum class ReadingSources { none, prose };      // the reading split's citations
enum class Backend { gloo, nccl };              // the process group's
using models::NonFiniteWeights;                 // error | warn
using rewards::InvalidCitations;                // penalize | ignore

template <class E>
struct Choice {
  E value;
  const char* name;
};

// Every choice of E with its name, in the order the messages list them (run_config_choices.cpp).
template <class E>
const std::vector<Choice<E>>& choices();

template <>
const std::vector<Choice<Device>>& choices();
template <>
const std::vector<Choice<Dtype>>& choices();
template <>
const std::vector<Choice<Quantization>>& choices();
template <>
const std::vector<Choice<Resume>>& choices();
template <>
const std::vector<Choice<TrainSchedule>>& choices();
template <>
const std::vector<Choice<PpoSchedule>>& choices();
template <>
const std::vector<Choice<KlEstimator>>& choices();
template <>
const std::vector<Choice<ReadingSources>>& choices();
template <>
const std::vector<Choice<Backend>>& choices();
template <>
const std::vector<Choice<InvalidCitations>>& choices();
template <>
const std::vector<Choice<NonFiniteWeights>>& choices();

template <class E>
const char* choice_name(E value) {
  for (const auto& c : choices<E>())
    if (c.value == value) return c.name;
  return "?";
}

template <class E>
std::optional<E> choice_from_name(const std::string& name) {
  for (const auto& c : choices<E>())
    if (name == c.name) return c.value;
  return std::nullopt;
}

// "a|b|c" for a table of options, "a or b", "a, b or c" for a message.
template <class E>
std::string choice_names(const char* separator = "|") {
  std::string text;
  for (const auto& c : choices<E>()) text += (text.empty() ? "" : separator) + std::string(c.name);
  return text;
}

template <class E>
std::string choice_list() {
  const auto& all = choices<E>();
  std::string text;
  for (std::size_t i = 0; i < all.size(); ++i)
    text += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + std::string(all[i].name);
  return text;
}

// `text` as an E, or an Error "<where> must be a or b, not 'x'".
template <class E>
E parse_choice(const std::string& text, const std::string& where) {
  if (auto value = choice_from_name<E>(text)) return *value;
  throw Error(where + " must be " + choice_list<E>() + ", not '" + text + "'");
}

}  // namespace citeforge::trainer
