// English stop words for the keyword matching of citation correction: function words that two
// unrelated sentences share, so counting them would reward long documents, not relevant ones.
#pragma once

#include <string>

namespace citeforge::attribution {

// True for a lower-case English stop word ("the", "of", "is", ...).
bool is_stop_word(const std::string& lower_word);

}  // namespace citeforge::attribution
