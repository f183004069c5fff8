#include "trainer/config/config_choices.h"

namespace citeforge::trainer {

template <>
const std::vector<Choice<Device>>& choices() {
  static const std::vector<Choice<Device>> all{{Device::cpu, "cpu"}, {Device::cuda, "cuda"}};
  return all;
}

template <>
const std::vector<Choice<Dtype>>& choices() {
  static const std::vector<Choice<Dtype>> all{{Dtype::float32, "float32"},
                                              {Dtype::bfloat16, "bfloat16"}};
  return all;
}

template <>
const std::vector<Choice<Quantization>>& choices() {
  static const std::vector<Choice<Quantization>> all{{Quantization::none, "none"},
                                                     {Quantization::nf4, "nf4"}};
  return all;
}

template <>
const std::vector<Choice<NonFiniteWeights>>& choices() {
  static const std::vector<Choice<NonFiniteWeights>> all{{NonFiniteWeights::error, "error"},
                                                         {NonFiniteWeights::warn, "warn"}};
  return all;
}

template <>
const std::vector<Choice<Resume>>& choices() {
  static const std::vector<Choice<Resume>> all{{Resume::automatic, "auto"},
                                               {Resume::never, "never"}};
  return all;
}

template <>
const std::vector<Choice<TrainSchedule>>& choices() {
  static const std::vector<Choice<TrainSchedule>> all{{TrainSchedule::constant, "constant"},
                                                      {TrainSchedule::cosine, "cosine"}};
  return all;
}

template <>
const std::vector<Choice<PpoSchedule>>& choices() {
  static const std::vector<Choice<PpoSchedule>> all{{PpoSchedule::constant, "constant"},
                                                    {PpoSchedule::linear, "linear"}};
  return all;
}

template <>
const std::vector<Choice<KlEstimator>>& choices() {
  static const std::vector<Choice<KlEstimator>> all{{KlEstimator::k1, "k1"},
                                                    {KlEstimator::k3, "k3"}};
  return all;
}

template <>
const std::vector<Choice<ReadingSources>>& choices() {
  static const std::vector<Choice<ReadingSources>> all{{ReadingSources::none, "none"},
                                                       {ReadingSources::prose, "prose"}};
  return all;
}

template <>
const std::vector<Choice<Backend>>& choices() {
  static const std::vector<Choice<Backend>> all{{Backend::gloo, "gloo"}, {Backend::nccl, "nccl"}};
  return all;
}

// The names rewards/ gives its modes, so `citeforge score --invalid-citations` and the config
// spell them alike.
template <>
const std::vector<Choice<InvalidCitations>>& choices() {
  static const std::vector<Choice<InvalidCitations>> all{
      {InvalidCitations::penalize, rewards::to_string(InvalidCitations::penalize)},
      {InvalidCitations::ignore, rewards::to_string(InvalidCitations::ignore)}};
  return all;
}

}  // namespace citeforge::trainer
