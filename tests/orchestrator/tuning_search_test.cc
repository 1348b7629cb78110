// SPDX-License-Identifier: BSD-3-Clause
// The tuning searchers: the unit-cube encoding, grid coverage, random reproducibility, the
// Gaussian process and Bayesian optimization on small objectives with known optima.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <string>

#include "orchestrator/tuning/gaussian_process.h"
#include "orchestrator/tuning/search.h"
#include "orchestrator/tuning/search_space.h"

namespace rd::orch::tune {
namespace {

ParameterSpec numeric(const std::string& id, ParameterKind kind, double min, double max,
                      ScaleType scale = ScaleType::kLinear) {
  ParameterSpec spec;
  spec.id = id;
  spec.kind = kind;
  spec.min = min;
  spec.max = max;
  spec.scale = scale;
  return spec;
}

ParameterSpec categorical(const std::string& id, std::vector<std::string> categories) {
  ParameterSpec spec;
  spec.id = id;
  spec.kind = ParameterKind::kCategorical;
  spec.categories = std::move(categories);
  return spec;
}

ParameterSpec discrete(const std::string& id, std::vector<double> values) {
  ParameterSpec spec;
  spec.id = id;
  spec.kind = ParameterKind::kDiscrete;
  spec.values = std::move(values);
  return spec;
}

const ParameterValue* find(const Assignment& assignment, const std::string& id) {
  for (const ParameterValue& value : assignment) {
    if (value.id == id) return &value;
  }
  return nullptr;
}

double number(const Assignment& assignment, const std::string& id) {
  const ParameterValue* value = find(assignment, id);
  EXPECT_NE(value, nullptr) << id;
  return value == nullptr ? NAN : value->number;
}

StudySpec study(std::vector<ParameterSpec> parameters, Algorithm algorithm, uint64_t seed,
                Goal goal = Goal::kMinimize) {
  StudySpec spec;
  spec.metrics.push_back({"objective", goal});
  spec.parameters = std::move(parameters);
  spec.algorithm = algorithm;
  spec.seed = seed;
  return spec;
}

// Suggests and measures @p trials trials one at a time; the history.
std::vector<Observation> runStudy(const StudySpec& spec, size_t trials,
                                  const std::function<double(const Assignment&)>& objective) {
  auto searcher = makeSearcher(spec);
  std::vector<Observation> done;
  for (size_t i = 0; i < trials; ++i) {
    std::optional<Assignment> next = searcher->suggest(done, {});
    if (!next) break;
    const double value = objective(*next);
    done.push_back({std::move(*next), value});
  }
  return done;
}

double bestValue(const std::vector<Observation>& done) {
  double best = INFINITY;
  for (const Observation& o : done) best = std::min(best, *o.value);
  return best;
}

// The conditional study of the grid tests: opt = sgd | adam | rmsprop, sgd with an integer
// "steps" (itself with "warm" under steps 3), adam with a discrete "beta"; "layers" on top.
std::vector<ParameterSpec> conditionalParameters() {
  ParameterSpec opt = categorical("opt", {"sgd", "adam", "rmsprop"});
  ParameterSpec steps = numeric("steps", ParameterKind::kInteger, 1, 3);
  steps.conditionals.push_back({{}, {3}, {categorical("warm", {"yes", "no"})}});
  opt.conditionals.push_back({{"sgd"}, {}, {steps}});
  opt.conditionals.push_back({{"adam"}, {}, {discrete("beta", {0.9, 0.99})}});
  return {opt, numeric("layers", ParameterKind::kInteger, 1, 2)};
}

TEST(TuningFormat, ArgumentsRoundTrip) {
  ParameterValue value{"n", false, 3, ""};
  EXPECT_EQ(formatArgument(value), "--n=3");
  value.number = 1000000;
  EXPECT_EQ(formatValue(value), "1000000");
  value.number = -2;
  EXPECT_EQ(formatValue(value), "-2");
  value.number = 0.1;
  EXPECT_EQ(formatValue(value), "0.1");
  value.number = 1e-5;
  EXPECT_EQ(std::strtod(formatValue(value).c_str(), nullptr), 1e-5);
  Rng rng(3);
  for (int i = 0; i < 1000; ++i) {
    value.number = std::exp(40 * rng.uniform() - 20) * (rng.uniform() - 0.5);
    EXPECT_EQ(std::strtod(formatValue(value).c_str(), nullptr), value.number);
  }
  EXPECT_EQ(formatArgument({"optimizer", true, 0, "adam"}), "--optimizer=adam");
}

TEST(TuningSpace, EncodeDecodeAndScales) {
  const std::vector<ParameterSpec> parameters = {
      numeric("lr", ParameterKind::kDouble, 1e-4, 1, ScaleType::kLog),
      numeric("batch", ParameterKind::kInteger, 8, 64), discrete("drop", {0.1, 0.2, 0.5}),
      categorical("opt", {"sgd", "adam"})};
  const SearchSpace space(parameters);
  ASSERT_EQ(space.dims(), 5u);
  const Assignment a = {{"lr", false, 1e-2, ""},
                        {"batch", false, 17, ""},
                        {"drop", false, 0.2, ""},
                        {"opt", true, 0, "adam"}};
  const std::vector<double> x = space.encode(a);
  EXPECT_NEAR(x[0], 0.5, 1e-12);  // the geometric middle of a log range
  EXPECT_EQ(x[3], 0.0);
  EXPECT_EQ(x[4], 1.0);
  const Assignment back = space.decode(x);
  EXPECT_NEAR(number(back, "lr"), 1e-2, 1e-15);
  EXPECT_EQ(number(back, "batch"), 17);
  EXPECT_EQ(number(back, "drop"), 0.2);
  EXPECT_EQ(find(back, "opt")->text, "adam");
  // Snapping: a discrete coordinate goes to the nearest listed value, integers round.
  std::vector<double> y = x;
  y[1] = 0.999;
  y[2] = 0.35;  // between 0.2 (1/4) and 0.5 (1): nearer 0.2
  const Assignment snapped = space.decode(y);
  EXPECT_EQ(number(snapped, "batch"), 64);
  EXPECT_EQ(number(snapped, "drop"), 0.2);
  EXPECT_EQ(space.canonical(y), space.encode(snapped));
}

TEST(TuningSpace, SamplingFollowsTheScale) {
  const SearchSpace space({numeric("log", ParameterKind::kDouble, 1e-4, 1, ScaleType::kLog),
                           numeric("lin", ParameterKind::kDouble, 0, 1),
                           numeric("rev", ParameterKind::kDouble, 1e-4, 1, ScaleType::kReverseLog),
                           numeric("int", ParameterKind::kInteger, 1, 4)});
  Rng rng(11);
  std::vector<double> logs, lins, revs;
  std::map<double, int> ints;
  for (int i = 0; i < 4001; ++i) {
    const Assignment a = space.sample(rng);
    logs.push_back(number(a, "log"));
    lins.push_back(number(a, "lin"));
    revs.push_back(number(a, "rev"));
    ++ints[number(a, "int")];
  }
  for (auto* v : {&logs, &lins, &revs}) std::sort(v->begin(), v->end());
  EXPECT_NEAR(std::log10(logs[2000]), -2.0, 0.15);  // median at the geometric mean
  EXPECT_NEAR(lins[2000], 0.5, 0.03);
  EXPECT_GT(revs[2000], 0.98);  // dense near the maximum
  EXPECT_GE(logs.front(), 1e-4);
  EXPECT_LE(logs.back(), 1.0);
  EXPECT_EQ(ints.size(), 4u);
  for (const auto& [value, count] : ints) EXPECT_NEAR(count, 1000, 120) << value;
}

TEST(TuningSpace, ChildrenOnlyWhenActive) {
  const SearchSpace space(conditionalParameters());
  Rng rng(5);
  std::map<std::string, int> seen;
  for (int i = 0; i < 600; ++i) {
    const Assignment a = space.sample(rng);
    const std::string opt = find(a, "opt")->text;
    ++seen[opt];
    EXPECT_EQ(find(a, "steps") != nullptr, opt == "sgd");
    EXPECT_EQ(find(a, "beta") != nullptr, opt == "adam");
    EXPECT_EQ(find(a, "warm") != nullptr, opt == "sgd" && number(a, "steps") == 3);
    EXPECT_EQ(a.front().id, "opt");  // parents first
    // Inactive children do not matter: the point stands for exactly this assignment.
    EXPECT_EQ(assignmentKey(space.decode(space.encode(a))), assignmentKey(a));
  }
  EXPECT_EQ(seen.size(), 3u);
}

TEST(TuningGrid, CoversEveryPointOnceThenStops) {
  const std::vector<ParameterSpec> parameters = {numeric("a", ParameterKind::kInteger, 1, 3),
                                                 discrete("b", {0.5, 1, 2}),
                                                 categorical("c", {"x", "y"})};
  ASSERT_EQ(gridSize(parameters), 18u);
  auto searcher = makeSearcher(study(parameters, Algorithm::kGrid, 1));
  std::vector<Observation> done;
  std::vector<Assignment> pending;
  std::set<std::string> keys;
  while (auto next = searcher->suggest(done, pending)) {
    EXPECT_TRUE(keys.insert(assignmentKey(*next)).second);
    // Half finish, half keep running: both count as tried.
    if (keys.size() % 2 == 0) {
      pending.push_back(*next);
    } else {
      done.push_back({*next, 1.0});
    }
    ASSERT_LE(keys.size(), 18u);
  }
  EXPECT_EQ(keys.size(), 18u);
}

TEST(TuningGrid, ConditionalChildrenExpandOnlyUnderTheirParents) {
  const std::vector<ParameterSpec> parameters = conditionalParameters();
  // (sgd: steps 1, 2, 3 x warm 2 = 4) + (adam: beta 2) + rmsprop = 7, times layers 2.
  ASSERT_EQ(gridSize(parameters), 14u);
  auto searcher = makeSearcher(study(parameters, Algorithm::kGrid, 1));
  std::vector<Observation> done;
  std::set<std::string> keys;
  while (auto next = searcher->suggest(done, {})) {
    const std::string opt = find(*next, "opt")->text;
    EXPECT_EQ(find(*next, "steps") != nullptr, opt == "sgd");
    EXPECT_EQ(find(*next, "beta") != nullptr, opt == "adam");
    EXPECT_EQ(find(*next, "warm") != nullptr, opt == "sgd" && number(*next, "steps") == 3);
    EXPECT_TRUE(keys.insert(assignmentKey(*next)).second);
    done.push_back({std::move(*next), std::nullopt});
    ASSERT_LE(keys.size(), 14u);
  }
  EXPECT_EQ(keys.size(), 14u);
}

TEST(TuningGrid, SizeIsZeroWithADouble) {
  std::vector<ParameterSpec> parameters = {numeric("a", ParameterKind::kInteger, 0, 9)};
  EXPECT_EQ(gridSize(parameters), 10u);
  parameters.push_back(numeric("lr", ParameterKind::kDouble, 0, 1));
  EXPECT_EQ(gridSize(parameters), 0u);
  EXPECT_EQ(makeSearcher(study(parameters, Algorithm::kGrid, 1))->suggest({}, {}), std::nullopt);
  ParameterSpec opt = categorical("opt", {"a", "b"});
  opt.conditionals.push_back({{"b"}, {}, {numeric("lr", ParameterKind::kDouble, 0, 1)}});
  EXPECT_EQ(gridSize({opt}), 0u);
  EXPECT_EQ(gridSize({numeric("wide", ParameterKind::kInteger, -1e9, 1e9)}), 2000000001u);
}

TEST(TuningRandom, ReproducibleInRangeAndSeedDependent) {
  const std::vector<ParameterSpec> parameters = {
      numeric("lr", ParameterKind::kDouble, 1e-5, 1e-1, ScaleType::kLog),
      numeric("units", ParameterKind::kInteger, 16, 512), categorical("act", {"relu", "tanh"})};
  auto keysOf = [&](uint64_t seed) {
    std::vector<std::string> keys;
    for (const Observation& o :
         runStudy(study(parameters, Algorithm::kRandom, seed), 30, [](const Assignment& a) {
           EXPECT_GE(number(a, "lr"), 1e-5);
           EXPECT_LE(number(a, "lr"), 1e-1);
           EXPECT_GE(number(a, "units"), 16);
           EXPECT_LE(number(a, "units"), 512);
           return 0.0;
         })) {
      keys.push_back(assignmentKey(o.parameters));
    }
    return keys;
  };
  const auto first = keysOf(7);
  EXPECT_EQ(first.size(), 30u);
  EXPECT_EQ(first, keysOf(7));
  EXPECT_NE(first, keysOf(8));
  // A resumed study continues as an uninterrupted one: trial i depends on the seed and i.
  auto searcher = makeSearcher(study(parameters, Algorithm::kRandom, 7));
  std::vector<Assignment> pending(5, Assignment{{"lr", false, 1e-3, ""}});
  EXPECT_EQ(assignmentKey(*searcher->suggest({}, {})), first[0]);
  EXPECT_EQ(assignmentKey(*searcher->suggest({}, pending)), first[5]);
}

TEST(TuningRandom, FiniteSpaceRunsOut) {
  const std::vector<ParameterSpec> parameters = {numeric("a", ParameterKind::kInteger, 1, 3),
                                                 categorical("c", {"x", "y"})};
  const auto done =
      runStudy(study(parameters, Algorithm::kRandom, 3), 20, [](const Assignment&) { return 0.0; });
  std::set<std::string> keys;
  for (const Observation& o : done) keys.insert(assignmentKey(o.parameters));
  EXPECT_EQ(done.size(), 6u);
  EXPECT_EQ(keys.size(), 6u);
}

double smooth(double x) {
  return std::sin(6 * x) + 0.5 * x;
}

TEST(TuningGaussianProcess, FitsASmoothFunction) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i <= 12; ++i) {
    x.push_back({i / 12.0});
    y.push_back(smooth(i / 12.0));
  }
  const GaussianProcess gp = GaussianProcess::fit(x, y);
  for (int i = 0; i < 12; ++i) {
    const double at = (i + 0.5) / 12.0;  // held out: halfway between training points
    const std::vector<double> point = {at};
    const auto p = gp.predict(point);
    EXPECT_NEAR(p.mean, smooth(at), 0.01) << at;
    EXPECT_LT(std::sqrt(p.variance), 0.05) << at;
  }
  const std::vector<double> far = {0.5};
  EXPECT_LT(gp.predict(x[6]).variance, gp.predict(far).variance + 1e-12);
}

TEST(TuningGaussianProcess, LikelihoodPicksSensibleLengthScales) {
  auto fitted = [](const std::function<double(double, double)>& f) {
    std::vector<std::vector<double>> x;
    std::vector<double> z;
    Rng rng(17);
    for (int i = 0; i < 40; ++i) {
      x.push_back({rng.uniform(), rng.uniform()});
      z.push_back(f(x.back()[0], x.back()[1]));
    }
    GpFitOptions options;
    options.priors = false;  // the likelihood alone
    return fitGpParams(x, z, options);
  };
  const GpParams slow = fitted([](double a, double) { return std::sin(2 * a); });
  const GpParams fast = fitted([](double a, double) { return std::sin(12 * a); });
  // Only the first coordinate matters: the second gets a much longer length scale.
  EXPECT_GT(slow.length_scales[1], 10 * slow.length_scales[0]);
  EXPECT_GT(fast.length_scales[1], 10 * fast.length_scales[0]);
  // sin(12 x) turns every 0.26 in x, sin(2 x) not once in the unit interval.
  EXPECT_GT(fast.length_scales[0], 0.1);
  EXPECT_LT(fast.length_scales[0], 0.6);
  EXPECT_GT(slow.length_scales[0], 1.0);
  EXPECT_LT(fast.noise_variance, 1e-2);
}

TEST(TuningGaussianProcess, CholeskyFactors) {
  const std::vector<double> a = {4, 2, 0.4, 2, 10, 3, 0.4, 3, 6};
  std::vector<double> factor = a;
  ASSERT_TRUE(cholesky(factor, 3));
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      double sum = 0;
      for (size_t k = 0; k < 3; ++k) sum += factor[i * 3 + k] * factor[j * 3 + k];
      EXPECT_NEAR(sum, a[i * 3 + j], 1e-12) << i << " " << j;
      if (j > i) {
        EXPECT_EQ(factor[i * 3 + j], 0.0);
      }
    }
  }
  std::vector<double> singular = {1, 1, 1, 1};
  EXPECT_FALSE(cholesky(singular, 2));
}

TEST(TuningGaussianProcess, ExpectedImprovement) {
  EXPECT_NEAR(expectedImprovement(0, 1, 0), 1 / std::sqrt(2 * std::numbers::pi), 1e-12);
  EXPECT_EQ(expectedImprovement(2, 0, 1), 1.0);
  for (double mean : {-3.0, -6.5, -10.0, -30.0}) {
    const double log_ei = logExpectedImprovement(mean, 1, 0);
    EXPECT_TRUE(std::isfinite(log_ei));
    if (mean > -30) {
      EXPECT_NEAR(log_ei, std::log(expectedImprovement(mean, 1, 0)), 0.01);
    }
  }
  EXPECT_LT(logExpectedImprovement(-30, 1, 0), logExpectedImprovement(-10, 1, 0));
}

const std::vector<ParameterSpec> kQuadraticParameters = {
    numeric("x", ParameterKind::kDouble, -5, 5), numeric("y", ParameterKind::kDouble, -5, 5)};

double quadratic(const Assignment& a) {
  const double dx = number(a, "x") - 1.3, dy = number(a, "y") + 2.1;
  return dx * dx + dy * dy;
}

TEST(TuningBayesian, BeatsRandomOnAQuadratic) {
  double bayes_total = 0, random_total = 0;
  for (uint64_t seed : {1, 2, 3}) {
    const double bayes =
        bestValue(runStudy(study(kQuadraticParameters, Algorithm::kBayesian, seed), 20, quadratic));
    const double random =
        bestValue(runStudy(study(kQuadraticParameters, Algorithm::kRandom, seed), 20, quadratic));
    EXPECT_LT(bayes, 0.01) << seed;
    bayes_total += bayes;
    random_total += random;
  }
  EXPECT_LT(bayes_total * 100, random_total);
}

TEST(TuningBayesian, MaximizesToo) {
  const auto done = runStudy(study(kQuadraticParameters, Algorithm::kBayesian, 4, Goal::kMaximize),
                             20, [](const Assignment& a) { return -quadratic(a); });
  double best = -INFINITY;
  for (const Observation& o : done) best = std::max(best, *o.value);
  EXPECT_GT(best, -0.01);
}

TEST(TuningBayesian, ConstantLiarSpreadsParallelSuggestions) {
  const auto done = runStudy(study(kQuadraticParameters, Algorithm::kRandom, 9), 8, quadratic);
  auto searcher = makeSearcher(study(kQuadraticParameters, Algorithm::kBayesian, 9));
  const SearchSpace space(kQuadraticParameters);
  std::vector<Assignment> pending;
  pending.reserve(4);
  for (int i = 0; i < 4; ++i) pending.push_back(*searcher->suggest(done, pending));
  for (size_t i = 0; i < pending.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const auto a = space.encode(pending[i]), b = space.encode(pending[j]);
      EXPECT_GT(std::hypot(a[0] - b[0], a[1] - b[1]), 1e-3) << i << " " << j;
    }
  }
  // The same history gives the same suggestions.
  EXPECT_EQ(assignmentKey(*searcher->suggest(done, {})), assignmentKey(pending[0]));
}

TEST(TuningBayesian, ToleratesInfeasibleTrials) {
  // Every trial with x > 0 fails: the search goes on, among the feasible, and repeats nothing.
  auto searcher = makeSearcher(study(kQuadraticParameters, Algorithm::kBayesian, 5));
  std::vector<Observation> done;
  std::set<std::string> keys;
  for (int i = 0; i < 16; ++i) {
    Assignment next = *searcher->suggest(done, {});
    EXPECT_TRUE(keys.insert(assignmentKey(next)).second);
    std::optional<double> value;
    if (number(next, "x") <= 0) value = quadratic(next);
    done.push_back({std::move(next), value});
  }
  double best = INFINITY;
  size_t feasible = 0;
  for (const Observation& o : done) {
    best = std::min(best, o.value.value_or(INFINITY));
    feasible += o.value.has_value();
  }
  EXPECT_GE(feasible, 5u);  // the failing half is not probed over and over
  EXPECT_LT(best, 10.0);    // the feasible optimum is 1.69, at x = 0
  // A small finite space: failed points are never suggested again, and it runs out.
  const std::vector<ParameterSpec> small = {numeric("a", ParameterKind::kInteger, 1, 3),
                                            categorical("c", {"x", "y"})};
  const auto all = runStudy(study(small, Algorithm::kBayesian, 6), 20, [](const Assignment& a) {
    return find(a, "c")->text == "x" ? std::nan("") : number(a, "a");
  });
  EXPECT_EQ(all.size(), 6u);
}

TEST(TuningBayesian, ConditionalAndScaledParameters) {
  // lr on a log scale; opt's children only where active. The optimum: adam, beta 0.9, lr 1e-3.
  std::vector<ParameterSpec> parameters = conditionalParameters();
  parameters.push_back(numeric("lr", ParameterKind::kDouble, 1e-5, 1e-1, ScaleType::kLog));
  const auto done =
      runStudy(study(parameters, Algorithm::kBayesian, 8), 24, [](const Assignment& a) {
        EXPECT_EQ(find(a, "steps") != nullptr, find(a, "opt")->text == "sgd");
        EXPECT_EQ(find(a, "beta") != nullptr, find(a, "opt")->text == "adam");
        const double lr = number(a, "lr");
        EXPECT_GE(lr, 1e-5);
        EXPECT_LE(lr, 1e-1);
        double value = std::pow(std::log10(lr) + 3, 2) + (find(a, "opt")->text == "adam" ? 0 : 1);
        if (const ParameterValue* beta = find(a, "beta")) value += beta->number == 0.9 ? 0 : 0.5;
        return value;
      });
  std::set<std::string> keys;
  for (const Observation& o : done) EXPECT_TRUE(keys.insert(assignmentKey(o.parameters)).second);
  EXPECT_LT(bestValue(done), 0.05);
}

TEST(TuningSearch, ClockSeededSearchersWork) {
  // seed 0: seeded from the clock, once; suggestions stay valid and distinct.
  const auto done = runStudy(study(kQuadraticParameters, Algorithm::kBayesian, 0), 10, quadratic);
  ASSERT_EQ(done.size(), 10u);
  std::set<std::string> keys;
  for (const Observation& o : done) keys.insert(assignmentKey(o.parameters));
  EXPECT_EQ(keys.size(), 10u);
}

}  // namespace
}  // namespace rd::orch::tune
