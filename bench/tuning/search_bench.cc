// SPDX-License-Identifier: BSD-3-Clause
// The tuning searchers on synthetic objectives with known optima: the best value found after 16
// and 32 trials (as regret: best minus the optimum), median and quartiles over seeds, Bayesian
// optimization (one trial at a time, and 4 at a time with constant liars) against random search.
// Prints a markdown table (bench/results/tuning/search.md).
//
//   tuning_search_bench [--seeds N] [--trials N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "orchestrator/tuning/search.h"
#include "orchestrator/tuning/search_space.h"

namespace {

using rd::orch::tune::Algorithm;
using rd::orch::tune::Assignment;
using rd::orch::tune::Goal;
using rd::orch::tune::Observation;
using rd::orch::tune::ParameterKind;
using rd::orch::tune::ParameterSpec;
using rd::orch::tune::ParameterValue;
using rd::orch::tune::StudySpec;

struct Objective {
  std::string name;
  std::vector<ParameterSpec> parameters;
  double optimum = 0;               // the known minimum of the noise-free value
  double noise = 0;                 // the standard deviation of the Gaussian noise measured on top
  double diverge_above = INFINITY;  // worse values are reported 1e8 times worse (diverged runs)
  std::function<double(const Assignment&)> value;  // noise-free
};

ParameterSpec real(const std::string& id, double min, double max) {
  ParameterSpec spec;
  spec.id = id;
  spec.min = min;
  spec.max = max;
  return spec;
}

const ParameterValue& get(const Assignment& assignment, const std::string& id) {
  for (const ParameterValue& value : assignment) {
    if (value.id == id) return value;
  }
  std::fprintf(stderr, "missing parameter %s\n", id.c_str());
  std::exit(1);
}

// sum (x_i - c_i)^2 over [-5, 5]^dims, plus an offset per category of "shift" (0 for "mid").
Objective shiftedQuadratic(size_t dims, double noise) {
  static const double kCenters[] = {1.3, -2.1, 0.7, 3.2};
  Objective objective;
  objective.name = "quadratic " + std::to_string(dims) + "-D + categorical";
  if (noise > 0) objective.name += ", noise sd " + std::to_string(noise).substr(0, 3);
  for (size_t i = 0; i < dims; ++i)
    objective.parameters.push_back(real("x" + std::to_string(i), -5, 5));
  ParameterSpec shift;
  shift.id = "shift";
  shift.kind = ParameterKind::kCategorical;
  shift.categories = {"low", "mid", "high"};
  objective.parameters.push_back(shift);
  objective.noise = noise;
  objective.value = [dims](const Assignment& a) {
    double sum = 0;
    for (size_t i = 0; i < dims; ++i) {
      const double d = get(a, "x" + std::to_string(i)).number - kCenters[i];
      sum += d * d;
    }
    const std::string& category = get(a, "shift").text;
    return sum + (category == "low" ? 1.0 : category == "high" ? 2.0 : 0.0);
  };
  return objective;
}

// The 3-D quadratic without the categorical, its values above 30 reported as if diverged.
Objective divergingQuadratic() {
  Objective objective = shiftedQuadratic(3, 0);
  objective.name = "quadratic 3-D, values > 30 reported x 1e8";
  objective.parameters.pop_back();
  const auto value = objective.value;
  objective.value = [value](const Assignment& a) {
    Assignment with_shift = a;
    with_shift.push_back({"shift", true, 0, "mid"});
    return value(with_shift);
  };
  objective.diverge_above = 30;
  return objective;
}

Objective branin() {
  Objective objective;
  objective.name = "Branin 2-D";
  objective.parameters = {real("x1", -5, 10), real("x2", 0, 15)};
  objective.optimum = 0.397887;
  objective.value = [](const Assignment& a) {
    const double x1 = get(a, "x1").number, x2 = get(a, "x2").number;
    const double b = 5.1 / (4 * std::numbers::pi * std::numbers::pi), c = 5 / std::numbers::pi;
    const double t = 1 / (8 * std::numbers::pi);
    const double r = x2 - b * x1 * x1 + c * x1 - 6;
    return r * r + 10 * (1 - t) * std::cos(x1) + 10;
  };
  return objective;
}

struct Method {
  std::string name;
  Algorithm algorithm;
  size_t batch;  // trials suggested before any of them is measured
};

struct Run {
  std::vector<double> regret;  // after each trial: of the best measured trial's noise-free value
  double suggest_seconds = 0;
  size_t suggestions = 0;
};

Run runStudy(const Objective& objective, const Method& method, uint64_t seed, size_t trials) {
  StudySpec study;
  study.metrics.push_back({"objective", Goal::kMinimize});
  study.parameters = objective.parameters;
  study.algorithm = method.algorithm;
  study.seed = seed;
  auto searcher = rd::orch::tune::makeSearcher(study);
  rd::orch::tune::Rng noise(rd::orch::tune::mixSeed(seed, 0x6E6F697365ULL));
  Run run;
  std::vector<Observation> done;
  double best_measured = INFINITY, best_true = INFINITY;
  while (done.size() < trials) {
    std::vector<Assignment> pending;
    const auto start = std::chrono::steady_clock::now();
    while (pending.size() < method.batch && done.size() + pending.size() < trials) {
      auto next = searcher->suggest(done, pending);
      if (!next) break;
      pending.push_back(std::move(*next));
    }
    run.suggest_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.suggestions += pending.size();
    if (pending.empty()) break;
    for (Assignment& assignment : pending) {
      const double truth = objective.value(assignment);
      double measured = truth + objective.noise * noise.normal();
      if (measured > objective.diverge_above) measured *= 1e8;
      // The best trial is the best measured one; its noise-free value is what it is worth.
      if (measured < best_measured) {
        best_measured = measured;
        best_true = truth;
      }
      run.regret.push_back(best_true - objective.optimum);
      done.push_back({std::move(assignment), measured});
    }
  }
  return run;
}

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto low = static_cast<size_t>(std::floor(at));
  const size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (at - static_cast<double>(low)) * (values[high] - values[low]);
}

std::string summary(const std::vector<double>& values) {
  char text[96];
  std::snprintf(text, sizeof text, "%.3g [%.3g, %.3g]", quantile(values, 0.5),
                quantile(values, 0.25), quantile(values, 0.75));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  size_t seeds = 20, trials = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seeds") == 0) seeds = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--trials") == 0) trials = std::strtoul(argv[i + 1], nullptr, 10);
  }
  const std::vector<size_t> checkpoints = {trials / 2, trials};
  const std::vector<Objective> objectives = {shiftedQuadratic(2, 0),   shiftedQuadratic(3, 0),
                                             shiftedQuadratic(4, 0),   branin(),
                                             shiftedQuadratic(2, 1.0), divergingQuadratic()};
  const std::vector<Method> methods = {{"random", Algorithm::kRandom, 1},
                                       {"bayesian", Algorithm::kBayesian, 1},
                                       {"bayesian, 4 parallel", Algorithm::kBayesian, 4}};
  std::printf(
      "Regret (best trial's noise-free value minus the optimum): median [q1, q3] over %zu "
      "seeds.\n\n",
      seeds);
  std::printf("| objective | searcher | after %zu trials | after %zu trials | ms / suggestion |\n",
              checkpoints[0], checkpoints[1]);
  std::printf("|---|---|---|---|---|\n");
  for (const Objective& objective : objectives) {
    for (const Method& method : methods) {
      std::vector<std::vector<double>> at(checkpoints.size());
      double seconds = 0;
      size_t suggestions = 0;
      for (uint64_t seed = 1; seed <= seeds; ++seed) {
        const Run run = runStudy(objective, method, seed, trials);
        for (size_t c = 0; c < checkpoints.size(); ++c) {
          at[c].push_back(run.regret[std::min(checkpoints[c], run.regret.size()) - 1]);
        }
        seconds += run.suggest_seconds;
        suggestions += run.suggestions;
      }
      std::printf("| %s | %s | %s | %s | %.1f |\n", objective.name.c_str(), method.name.c_str(),
                  summary(at[0]).c_str(), summary(at[1]).c_str(),
                  1e3 * seconds / static_cast<double>(suggestions));
      std::fflush(stdout);
    }
  }
  return 0;
}
