// Whether a JSON value can be read as T without undefined behaviour. nlohmann's get<Integer>()
// converts a JSON float (or an integer out of range) with a plain cast, undefined when the value
// does not fit: a stranger's "r": 3e31 in an adapter config was one (found by the fuzzer). Readers
// of files from strangers check with json_fits<T> first and name the field when it fails.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

namespace citeforge {

template <typename T>
struct JsonFits {
  // Non-integer types: nlohmann's own checks (which throw json exceptions) are enough.
  static bool check(const nlohmann::json&) { return true; }
};

template <typename T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) struct JsonFits<T> {
  static bool check(const nlohmann::json& v) {
    if (v.is_number_unsigned())
      return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    if (!v.is_number_integer()) return false;  // a float, or not a number at all
    const auto x = v.get<std::int64_t>();      // negative here: unsigned ones were handled above
    if constexpr (std::is_unsigned_v<T>) return false;
    return x >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
           x <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
  }
};

template <typename T>
struct JsonFits<std::vector<T>> {
  static bool check(const nlohmann::json& v) {
    if (!v.is_array()) return true;  // nlohmann's get throws for it
    for (const auto& item : v)
      if (!JsonFits<T>::check(item)) return false;
    return true;
  }
};

template <typename T>
bool json_fits(const nlohmann::json& v) {
  return JsonFits<T>::check(v);
}

}  // namespace citeforge
