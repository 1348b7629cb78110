// SPDX-License-Identifier: BSD-3-Clause
// Bayesian optimization: a Gaussian process (gaussian_process.h) models the objective over the
// unit cube from the finished trials; the next trial maximizes its expected improvement over the
// best predicted value at a trial so far. The first trials are random (the model needs points to
// stand on), drawn exactly as random search would. Running trials enter the model with the best
// value so far as a made-up outcome (constant liar), so parallel suggestions spread out instead of
// piling onto one point. Outputs are modelled after outliers are tamed (warpOutputs), with a
// pessimistic prior mean (GpFitOptions::Mean::kLowest). Failed trials have no value to model;
// instead the acquisition is scaled down near them by (1 - the kernel's correlation), so a region
// that fails is not probed over and over, and no tried point is suggested again.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "orchestrator/tuning/gaussian_process.h"
#include "orchestrator/tuning/search_space.h"

namespace rd::orch::tune {

namespace {

constexpr size_t kMaxInitialTrials = 6;
constexpr size_t kRandomCandidates = 1000;
constexpr size_t kNeighbourhoods = 5;  // of the best trials, searched more densely
constexpr size_t kNeighbours = 40;     // candidates around each
constexpr size_t kRefined = 5;         // best candidates improved by a local search
constexpr uint64_t kCandidateStream = 0xB7E151628AED2A6BULL;  // not the random draws' stream

struct Candidate {
  double score = 0;  // Acquisition::at
  std::vector<double> x;
};

// Expected improvement over the incumbent, damped near failed trials (log scale).
struct Acquisition {
  const GaussianProcess& gp;
  double incumbent = 0;
  const std::vector<std::vector<double>>& failed;

  double at(std::span<const double> x) const {
    const GaussianProcess::Prediction p = gp.predict(x);
    double value = logExpectedImprovement(p.mean, std::sqrt(p.variance), incumbent);
    for (const auto& point : failed) value += std::log1p(-std::min(gp.correlation(x, point), 1.0));
    // NaN would break the candidates' ordering; -inf ranks last.
    return std::isnan(value) ? -std::numeric_limits<double>::infinity() : value;
  }
};

// The standard normal quantile, by bisection on erfc (a few dozen values per suggestion).
double normalQuantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::numbers::sqrt2) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Output warping for outliers: a value below the median is raised to where its rank falls in a
// normal distribution with the median and the spread of the better half, if that is higher. A
// few very bad trials (a diverged run reporting 1e9) would otherwise dominate the standardization
// and the kernel's fit, and the model would resolve nothing near the optimum. Order is kept.
std::vector<double> warpOutputs(std::vector<double> y) {
  const size_t n = y.size();
  std::vector<double> sorted = y;
  std::sort(sorted.begin(), sorted.end());
  const double median = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double sum = 0;
  size_t good = 0;
  for (double v : y) {
    if (v < median) continue;
    sum += (v - median) * (v - median);
    ++good;
  }
  const double spread = std::sqrt(sum / static_cast<double>(good));
  if (!(spread > 0)) return y;
  for (double& v : y) {
    if (v >= median) continue;
    const auto below =
        static_cast<double>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
    const auto equal =
        static_cast<double>(std::upper_bound(sorted.begin(), sorted.end(), v) - sorted.begin()) -
        below;
    const double quantile = (below + 0.5 * equal) / static_cast<double>(n);
    v = std::max(v, median + spread * normalQuantile(quantile));
  }
  return y;
}

class BayesSearcher final : public Searcher {
 public:
  BayesSearcher(const std::vector<ParameterSpec>& parameters, Goal goal, uint64_t seed)
      : space_(parameters),
        grid_(parameters),
        sign_(goal == Goal::kMinimize ? -1.0 : 1.0),
        seed_(seed) {}

  std::optional<Assignment> suggest(const std::vector<Observation>& done,
                                    const std::vector<Assignment>& pending) override;

 private:
  std::optional<Assignment> modelled(const std::vector<std::vector<double>>& x,
                                     const std::vector<double>& y,
                                     const std::vector<std::vector<double>>& failed,
                                     const std::vector<Assignment>& pending,
                                     const std::unordered_set<std::string>& tried,
                                     uint64_t trial) const;
  Candidate refine(Candidate start, const Acquisition& acquisition) const;

  SearchSpace space_;
  Grid grid_;
  double sign_;  // the model maximizes sign_ * value
  uint64_t seed_;
};

std::optional<Assignment> BayesSearcher::suggest(const std::vector<Observation>& done,
                                                 const std::vector<Assignment>& pending) {
  const uint64_t trial = done.size() + pending.size();
  const std::unordered_set<std::string> tried = triedKeys(done, pending);
  const size_t finite = grid_.size();
  if (finite > 0 && tried.size() >= finite && !grid_.firstUntried(tried)) return std::nullopt;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  std::vector<std::vector<double>> failed;
  for (const Observation& observation : done) {
    if (!observation.value || !std::isfinite(*observation.value)) {
      failed.push_back(space_.encode(observation.parameters));
      continue;
    }
    x.push_back(space_.encode(observation.parameters));
    y.push_back(sign_ * *observation.value);
  }
  const size_t initial = std::clamp<size_t>(space_.dims() + 1, 2, kMaxInitialTrials);
  if (trial < initial || x.size() < 2 || space_.dims() == 0) {
    Rng rng(mixSeed(seed_, trial));
    return sampleUntried(space_, grid_, tried, rng);
  }
  return modelled(x, y, failed, pending, tried, trial);
}

// A pattern search on the canonical points: numeric coordinates stepped both ways with shrinking
// steps, categories swapped; the first improvement is taken.
Candidate BayesSearcher::refine(Candidate start, const Acquisition& acquisition) const {
  Candidate best = std::move(start);
  auto consider = [&](std::vector<double> trial) {
    trial = space_.canonical(trial);
    if (trial == best.x) return false;
    const double value = acquisition.at(trial);
    if (!(value > best.score)) return false;
    best = {value, std::move(trial)};
    return true;
  };
  for (double step : {0.1, 0.03, 0.01, 0.003}) {
    bool improved = true;
    for (int pass = 0; improved && pass < 3; ++pass) {
      improved = false;
      for (const SearchSpace::Block& block : space_.blocks()) {
        for (size_t c = 0; block.one_hot && c < block.width; ++c) {
          std::vector<double> trial = best.x;
          std::fill_n(trial.begin() + static_cast<std::ptrdiff_t>(block.offset), block.width, 0.0);
          trial[block.offset + c] = 1.0;
          improved = consider(std::move(trial)) || improved;
        }
        for (double direction : {-1.0, 1.0}) {
          if (block.one_hot) break;
          std::vector<double> trial = best.x;
          trial[block.offset] = std::clamp(trial[block.offset] + direction * step, 0.0, 1.0);
          improved = consider(std::move(trial)) || improved;
        }
      }
    }
  }
  return best;
}

std::optional<Assignment> BayesSearcher::modelled(const std::vector<std::vector<double>>& x,
                                                  const std::vector<double>& measured,
                                                  const std::vector<std::vector<double>>& failed,
                                                  const std::vector<Assignment>& pending,
                                                  const std::unordered_set<std::string>& tried,
                                                  uint64_t trial) const {
  const std::vector<double> y = warpOutputs(measured);
  GpFitOptions options;
  options.mean = GpFitOptions::Mean::kLowest;
  GaussianProcess gp = GaussianProcess::fit(x, y, options);
  const double best_seen = *std::max_element(y.begin(), y.end());
  if (!pending.empty()) {
    std::vector<std::vector<double>> running;
    running.reserve(pending.size());
    for (const Assignment& assignment : pending) running.push_back(space_.encode(assignment));
    gp = gp.extended(running, std::vector<double>(running.size(), best_seen));
  }
  // The incumbent is the best predicted value at a trial, not the best measured: a lucky noisy
  // measurement would otherwise make every improvement look unlikely.
  double incumbent = -std::numeric_limits<double>::infinity();
  for (const auto& point : x) incumbent = std::max(incumbent, gp.predict(point).mean);
  const Acquisition acquisition{gp, incumbent, failed};

  Rng rng(mixSeed(seed_ ^ kCandidateStream, trial));
  std::vector<Candidate> candidates;
  auto add = [&](const std::vector<double>& point) {
    std::vector<double> canonical = space_.canonical(point);
    const double value = acquisition.at(canonical);
    candidates.push_back({value, std::move(canonical)});
  };
  for (size_t k = 0; k < kRandomCandidates; ++k) add(space_.sampleUnit(rng));
  std::vector<size_t> order(y.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y[a] > y[b]; });
  for (size_t r = 0; r < kNeighbourhoods && r < order.size(); ++r) {
    for (size_t k = 0; k < kNeighbours; ++k) {
      const double spread = k % 2 == 0 ? 0.1 : 0.02;
      std::vector<double> point = x[order[r]];
      for (double& coordinate : point) coordinate += spread * rng.normal();
      add(point);
    }
  }
  auto higher = [](const Candidate& a, const Candidate& b) { return a.score > b.score; };
  std::stable_sort(candidates.begin(), candidates.end(), higher);
  std::vector<Candidate> refined;
  for (size_t i = 0; i < candidates.size() && refined.size() < kRefined; ++i) {
    const bool seen = std::any_of(refined.begin(), refined.end(),
                                  [&](const Candidate& r) { return r.x == candidates[i].x; });
    if (!seen) refined.push_back(candidates[i]);
  }
  for (Candidate& start : refined) candidates.push_back(refine(std::move(start), acquisition));
  std::stable_sort(candidates.begin(), candidates.end(), higher);
  for (const Candidate& candidate : candidates) {
    Assignment assignment = space_.decode(candidate.x);
    if (tried.count(assignmentKey(assignment)) == 0) return assignment;
  }
  Rng fallback(mixSeed(seed_, trial));
  return sampleUntried(space_, grid_, tried, fallback);
}

}  // namespace

std::unique_ptr<Searcher> makeBayesSearcher(const std::vector<ParameterSpec>& parameters, Goal goal,
                                            uint64_t seed) {
  return std::make_unique<BayesSearcher>(parameters, goal, seed);
}

}  // namespace rd::orch::tune
