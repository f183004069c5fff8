#include <catch2/catch.hpp>

#include "common/error.h"
#include "data/synth_teacher.h"

using namespace citeforge::data;

TEST_CASE("teacher calibration hits its targets in expectation") {
  for (auto [p, r, z] :
       {std::tuple{0.8, 0.8, 0.1}, std::tuple{0.75, 0.8, 0.0}, std::tuple{0.9, 0.85, 0.2},
        std::tuple{0.7, 0.9, 0.1}, std::tuple{0.6, 0.7, 0.1}}) {
    TeacherPlan plan = calibrate_teacher(p, r, z, 1, 3);
    auto [ep, er] = expected_teacher_scores(plan, z, 1, 3);
    CHECK(ep == Approx(p).margin(2e-3));
    CHECK(er == Approx(r).margin(2e-3));
    CHECK(plan.keep >= 0);
    CHECK(plan.keep <= 1);
    CHECK(plan.add >= 0);
    CHECK(plan.add <= 1);
  }
  TeacherPlan perfect = calibrate_teacher(1, 1, 0.1, 1, 3);
  CHECK(perfect.keep == 1);
  CHECK(perfect.add == 0);
}

TEST_CASE("expected teacher scores follow the metric's edge cases") {
  // One relevant document, always kept, wrong citation always added: precision 1/2, recall 1.
  auto [p, r] = expected_teacher_scores({1.0, 1.0}, 0.0, 1, 1);
  CHECK(p == Approx(0.5));
  CHECK(r == Approx(1.0));
  // Only unanswerable questions: abstaining is perfect, a wrong citation scores 0.
  auto [p0, r0] = expected_teacher_scores({1.0, 0.25}, 1.0, 1, 3);
  CHECK(p0 == Approx(0.75));
  CHECK(r0 == Approx(0.75));
  // Dropping the only citation scores 0 for both.
  auto [p1, r1] = expected_teacher_scores({0.0, 0.0}, 0.0, 1, 1);
  CHECK(p1 == 0.0);
  CHECK(r1 == 0.0);
}

TEST_CASE("unreachable teacher targets are a clear error") {
  CHECK_THROWS_AS(calibrate_teacher(1.0, 0.3, 0.1, 1, 3), citeforge::Error);
  // Dropping every relevant citation of an example scores precision 0 there, so a low recall
  // caps precision: at recall 0.6 about 0.78 is the most this teacher can reach.
  CHECK_THROWS_WITH(calibrate_teacher(0.9, 0.6, 0.1, 1, 3), Catch::Contains("closest"));
  CHECK_THROWS_WITH(calibrate_teacher(0.9, 0.5, 1.0, 1, 3), Catch::Contains("cannot both"));
}

TEST_CASE("teacher_citations: perfect plan cites exactly the relevant keys") {
  std::vector<TeacherSource> sources = {{Label::irrelevant, false},
                                        {Label::relevant, false},
                                        {Label::seemingly_relevant, true},
                                        {Label::relevant, false}};
  Rng rng(1);
  auto choice = teacher_citations(sources, {1.0, 0.0}, rng);
  CHECK(choice.keys == std::vector<int>{2, 4});
  CHECK(choice.wrong_key == 0);
  CHECK_FALSE(choice.abstain);

  std::vector<TeacherSource> none = {{Label::irrelevant, false},
                                     {Label::seemingly_relevant, false}};
  auto abstain = teacher_citations(none, {1.0, 0.0}, rng);
  CHECK(abstain.abstain);
  CHECK(abstain.keys.empty());
}

TEST_CASE("teacher_citations: wrong citations prefer seemingly relevant documents") {
  std::vector<TeacherSource> sources = {
      {Label::irrelevant, false}, {Label::seemingly_relevant, false}, {Label::relevant, false}};
  Rng rng(5);
  int seemingly = 0, irrelevant = 0;
  for (int i = 0; i < 4000; ++i) {
    auto choice = teacher_citations(sources, {1.0, 1.0}, rng);
    REQUIRE(choice.keys.size() == 2);
    REQUIRE(std::is_sorted(choice.keys.begin(), choice.keys.end()));
    seemingly += choice.wrong_key == 2;
    irrelevant += choice.wrong_key == 1;
  }
  CHECK(seemingly == Approx(3000).margin(150));
  CHECK(irrelevant == Approx(1000).margin(150));

  // Unanswerable: the confusing document is the one stating the asked attribute.
  std::vector<TeacherSource> unanswerable = {{Label::seemingly_relevant, false},
                                             {Label::seemingly_relevant, true}};
  for (int i = 0; i < 50; ++i) {
    auto choice = teacher_citations(unanswerable, {1.0, 1.0}, rng);
    REQUIRE(choice.wrong_key == 2);
    REQUIRE_FALSE(choice.abstain);
  }
}
