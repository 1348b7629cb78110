// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <numeric>
#include <utility>

namespace rd::orch::tune {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Added to the diagonal: keeps near-duplicate points factorable without visibly smoothing.
constexpr double kJitter = 1e-9;

// Bounds of the hyperparameters (natural log), for standardized outputs and unit-cube inputs.
constexpr double kMinLogLength = -4.6;  // 0.01
constexpr double kMaxLogLength = 3.0;   // 20: the coordinate hardly matters
constexpr double kMinLogSignal = -3.0;  // 0.05
constexpr double kMaxLogSignal = 3.0;   // 20
constexpr double kMinLogNoise = -13.8;  // 1e-6
constexpr double kMaxLogNoise = 0.7;    // 2: all noise

// Weak priors: log length scale ~ N(log 0.5, 2^2), log signal variance ~ N(0, 2^2).
constexpr double kPriorLogLength = -0.693;
constexpr double kPriorSd = 2.0;

double scaledDistance(std::span<const double> a, std::span<const double> b,
                      const std::vector<double>& length_scales) {
  double sum = 0;
  for (size_t j = 0; j < a.size(); ++j) {
    const double d = (a[j] - b[j]) / length_scales[j];
    sum += d * d;
  }
  return std::sqrt(sum);
}

// The Cholesky factor of K + (noise + extra) I into @p factor.
bool factorKernel(const std::vector<std::vector<double>>& x, const GpParams& params, double extra,
                  std::vector<double>& factor) {
  const size_t n = x.size();
  factor.assign(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      factor[i * n + j] =
          params.signal_variance * matern52(scaledDistance(x[i], x[j], params.length_scales));
    }
    factor[i * n + i] = params.signal_variance + params.noise_variance + extra;
  }
  return cholesky(factor, n);
}

// Solves L v = b in place (L lower triangular, row-major).
void forwardSolve(const std::vector<double>& factor, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    double sum = b[i];
    for (size_t k = 0; k < i; ++k) sum -= factor[i * n + k] * b[k];
    b[i] = sum / factor[i * n + i];
  }
}

// Solves L^T v = b in place.
void backwardSolve(const std::vector<double>& factor, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double sum = b[i];
    for (size_t k = i + 1; k < n; ++k) sum -= factor[k * n + i] * b[k];
    b[i] = sum / factor[i * n + i];
  }
}

double logLikelihoodFromFactor(const std::vector<double>& factor, const std::vector<double>& z,
                               std::vector<double>& alpha) {
  const size_t n = z.size();
  alpha = z;
  forwardSolve(factor, n, alpha);
  double fit = 0;
  for (double v : alpha) fit += v * v;  // z^T K^-1 z = |L^-1 z|^2
  backwardSolve(factor, n, alpha);
  double log_det = 0;
  for (size_t i = 0; i < n; ++i) log_det += std::log(factor[i * n + i]);
  return -0.5 * fit - log_det - 0.5 * static_cast<double>(n) * std::log(2 * std::numbers::pi);
}

using Objective = std::function<double(const std::vector<double>&)>;

// Nelder-Mead minimization of @p f from @p start (axis steps of @p step), at most @p budget
// evaluations; returns the best point and its value.
std::pair<std::vector<double>, double> nelderMead(const Objective& f,
                                                  const std::vector<double>& start, double step,
                                                  int budget) {
  const size_t dims = start.size();
  std::vector<std::vector<double>> simplex(dims + 1, start);
  std::vector<double> values(dims + 1);
  for (size_t i = 0; i < dims; ++i) simplex[i + 1][i] += step;
  for (size_t i = 0; i <= dims; ++i) values[i] = f(simplex[i]);
  int used = static_cast<int>(dims) + 1;
  std::vector<size_t> order(dims + 1);
  auto along = [&](const std::vector<double>& from, const std::vector<double>& to, double t) {
    std::vector<double> point(dims);
    for (size_t j = 0; j < dims; ++j) point[j] = from[j] + t * (to[j] - from[j]);
    return point;
  };
  while (used < budget) {
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return values[a] < values[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[dims - 1];
    if (values[worst] - values[best] < 1e-9 * (1 + std::fabs(values[best]))) break;
    std::vector<double> centroid(dims, 0.0);
    for (size_t i : order) {
      if (i == worst) continue;
      for (size_t j = 0; j < dims; ++j) centroid[j] += simplex[i][j] / static_cast<double>(dims);
    }
    std::vector<double> reflected = along(centroid, simplex[worst], -1.0);
    const double reflected_value = f(reflected);
    ++used;
    if (reflected_value < values[best]) {
      std::vector<double> expanded = along(centroid, simplex[worst], -2.0);
      const double expanded_value = f(expanded);
      ++used;
      const bool take = expanded_value < reflected_value;
      simplex[worst] = take ? std::move(expanded) : std::move(reflected);
      values[worst] = take ? expanded_value : reflected_value;
      continue;
    }
    if (reflected_value < values[second]) {
      simplex[worst] = std::move(reflected);
      values[worst] = reflected_value;
      continue;
    }
    const bool outside = reflected_value < values[worst];
    std::vector<double> contracted =
        outside ? along(centroid, reflected, 0.5) : along(centroid, simplex[worst], 0.5);
    const double contracted_value = f(contracted);
    ++used;
    if (contracted_value < std::min(reflected_value, values[worst])) {
      simplex[worst] = std::move(contracted);
      values[worst] = contracted_value;
      continue;
    }
    for (size_t i : order) {  // shrink towards the best
      if (i == best) continue;
      simplex[i] = along(simplex[best], simplex[i], 0.5);
      values[i] = f(simplex[i]);
      ++used;
    }
  }
  const auto best =
      static_cast<size_t>(std::min_element(values.begin(), values.end()) - values.begin());
  return {simplex[best], values[best]};
}

// theta: log length scales (one, or one per coordinate), log signal variance, log noise variance.
GpParams paramsOf(const std::vector<double>& theta, size_t dims) {
  GpParams params;
  const size_t lengths = theta.size() - 2;
  params.length_scales.resize(dims);
  for (size_t j = 0; j < dims; ++j) {
    params.length_scales[j] =
        std::exp(std::clamp(theta[lengths == 1 ? 0 : j], kMinLogLength, kMaxLogLength));
  }
  params.signal_variance = std::exp(std::clamp(theta[lengths], kMinLogSignal, kMaxLogSignal));
  params.noise_variance = std::exp(std::clamp(theta[lengths + 1], kMinLogNoise, kMaxLogNoise));
  return params;
}

// The negated penalized log likelihood, the Nelder-Mead objective.
double penalizedCost(const std::vector<std::vector<double>>& x, const std::vector<double>& z,
                     const std::vector<double>& theta, bool priors) {
  const GpParams params = paramsOf(theta, x.front().size());
  double value = gpLogMarginalLikelihood(x, z, params);
  if (!std::isfinite(value)) return 1e300;
  const size_t lengths = theta.size() - 2;
  const double lows[3] = {kMinLogLength, kMinLogSignal, kMinLogNoise};
  const double highs[3] = {kMaxLogLength, kMaxLogSignal, kMaxLogNoise};
  for (size_t i = 0; i < theta.size(); ++i) {
    const size_t kind = i < lengths ? 0 : i - lengths + 1;
    const double outside =
        std::max(0.0, lows[kind] - theta[i]) + std::max(0.0, theta[i] - highs[kind]);
    value -= outside * outside;  // steers the simplex back inside the bounds
  }
  if (priors) {
    const double shared = lengths == 1 ? static_cast<double>(x.front().size()) : 1.0;
    for (size_t i = 0; i < lengths; ++i) {
      const double d = (theta[i] - kPriorLogLength) / kPriorSd;
      value -= 0.5 * d * d * shared;
    }
    const double s = theta[lengths] / kPriorSd;
    value -= 0.5 * s * s;
  }
  return -value;
}

// fitGpParams' search, in log space (paramsOf's theta).
std::vector<double> fitTheta(const std::vector<std::vector<double>>& x, std::vector<double> z,
                             double mean, const GpFitOptions& options) {
  const size_t n = x.size();
  const size_t dims = n == 0 ? 0 : x.front().size();
  if (n == 0 || dims == 0) return {std::log(0.5), 0.0, std::log(1e-4)};
  for (double& v : z) v -= mean;
  // Each evaluation factors an n x n matrix: fewer of them for a long history.
  const double cost =
      static_cast<double>(n * n) * (static_cast<double>(n) / 3.0 + static_cast<double>(dims));
  const int budget = std::max(60, std::min(options.max_evaluations, static_cast<int>(2e9 / cost)));
  auto objective = [&](const std::vector<double>& theta) {
    return penalizedCost(x, z, theta, options.priors);
  };
  // Starting points: a grid over one shared length scale and the noise.
  std::vector<std::pair<double, std::vector<double>>> starts;
  for (double length : {0.03, 0.08, 0.2, 0.5, 1.2, 3.0}) {
    for (double noise : {1e-6, 1e-3, 0.05, 0.5}) {
      std::vector<double> theta = {std::log(length), 0.0, std::log(noise)};
      starts.emplace_back(objective(theta), std::move(theta));
    }
  }
  int left = budget - static_cast<int>(starts.size());
  std::sort(starts.begin(), starts.end());
  // Refine the two best starts with the length scale shared, then (ARD) per coordinate.
  std::pair<std::vector<double>, double> shared{starts.front().second, starts.front().first};
  const bool ard = options.ard && dims > 1;
  const int shared_budget = ard ? left / 4 : left / 2;
  for (size_t s = 0; s < 2 && s < starts.size(); ++s) {
    auto refined = nelderMead(objective, starts[s].second, 0.7, shared_budget);
    if (refined.second < shared.second) shared = std::move(refined);
  }
  left -= 2 * shared_budget;
  if (!ard) return shared.first;
  std::vector<double> theta(dims, shared.first[0]);
  theta.push_back(shared.first[1]);
  theta.push_back(shared.first[2]);
  auto refined = nelderMead(objective, theta, 0.5, std::max(left, 2 * static_cast<int>(dims) + 4));
  return refined.second > shared.second ? shared.first : refined.first;
}

}  // namespace

double matern52(double r) {
  const double s = std::sqrt(5.0) * r;
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

bool cholesky(std::vector<double>& a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double* row_j = &a[j * n];
    double diagonal = row_j[j];
    for (size_t k = 0; k < j; ++k) diagonal -= row_j[k] * row_j[k];
    if (!(diagonal > 0)) return false;
    row_j[j] = std::sqrt(diagonal);
    for (size_t i = j + 1; i < n; ++i) {
      double* row_i = &a[i * n];
      double sum = row_i[j];
      for (size_t k = 0; k < j; ++k) sum -= row_i[k] * row_j[k];
      row_i[j] = sum / row_j[j];
    }
    for (size_t k = j + 1; k < n; ++k) row_j[k] = 0.0;
  }
  return true;
}

double expectedImprovement(double mean, double sd, double best) {
  if (!(sd > 0)) return std::max(mean - best, 0.0);
  const double z = (mean - best) / sd;
  const double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
  return std::max(sd * (z * cdf + pdf), 0.0);
}

double logExpectedImprovement(double mean, double sd, double best) {
  if (!(sd > 0)) return mean > best ? std::log(mean - best) : -kInf;
  const double z = (mean - best) / sd;
  if (z > -6.0) return std::log(expectedImprovement(mean, sd, best));
  // z Phi(z) + phi(z) = phi(z) / z^2 (1 - 3 / z^2 + 15 / z^4 - ...) for z -> -inf; the direct
  // form cancels to nothing there.
  const double z2 = z * z;
  const double log_pdf = -0.5 * z2 - 0.5 * std::log(2 * std::numbers::pi);
  return std::log(sd) + log_pdf - std::log(z2) + std::log1p(-3.0 / z2 + 15.0 / (z2 * z2));
}

double gpLogMarginalLikelihood(const std::vector<std::vector<double>>& x,
                               const std::vector<double>& z, const GpParams& params) {
  std::vector<double> factor;
  if (!factorKernel(x, params, kJitter, factor)) return -kInf;
  std::vector<double> centered = z, alpha;
  for (double& v : centered) v -= params.mean;
  return logLikelihoodFromFactor(factor, centered, alpha);
}

GpParams fitGpParams(const std::vector<std::vector<double>>& x, const std::vector<double>& z,
                     const GpFitOptions& options) {
  const size_t n = x.size();
  const size_t dims = n == 0 ? 0 : x.front().size();
  const bool lowest = options.mean == GpFitOptions::Mean::kLowest && n > 0;
  const double mean = lowest ? *std::min_element(z.begin(), z.end()) : 0.0;
  std::vector<double> theta = fitTheta(x, z, mean, options);
  GpParams params = paramsOf(theta, dims);
  params.mean = mean;
  return params;
}

GaussianProcess GaussianProcess::fit(std::vector<std::vector<double>> x, std::vector<double> y,
                                     const GpFitOptions& options) {
  GaussianProcess gp = standardized(std::move(x), std::move(y));
  std::vector<double> z(gp.y_.size());
  for (size_t i = 0; i < z.size(); ++i) z[i] = (gp.y_[i] - gp.shift_) / gp.scale_;
  gp.params_ = fitGpParams(gp.x_, z, options);
  gp.condition();
  return gp;
}

GaussianProcess GaussianProcess::standardized(std::vector<std::vector<double>> x,
                                              std::vector<double> y) {
  GaussianProcess gp;
  gp.x_ = std::move(x);
  gp.y_ = std::move(y);
  const double n = static_cast<double>(gp.y_.size());
  if (!gp.y_.empty()) {
    gp.shift_ = std::accumulate(gp.y_.begin(), gp.y_.end(), 0.0) / n;
    double sum = 0;
    for (double v : gp.y_) sum += (v - gp.shift_) * (v - gp.shift_);
    const double sd = std::sqrt(sum / n);
    gp.scale_ = sd > 1e-12 * std::max(1.0, std::fabs(gp.shift_)) ? sd : 1.0;
  }
  return gp;
}

GaussianProcess GaussianProcess::withParams(std::vector<std::vector<double>> x,
                                            std::vector<double> y, GpParams params) {
  GaussianProcess gp = standardized(std::move(x), std::move(y));
  const size_t dims = gp.x_.empty() ? 0 : gp.x_.front().size();
  const double fill = params.length_scales.empty() ? 0.5 : params.length_scales.front();
  params.length_scales.resize(dims, fill);
  gp.params_ = std::move(params);
  gp.condition();
  return gp;
}

GaussianProcess GaussianProcess::extended(const std::vector<std::vector<double>>& x,
                                          const std::vector<double>& y) const {
  GaussianProcess gp = *this;
  gp.x_.insert(gp.x_.end(), x.begin(), x.end());
  gp.y_.insert(gp.y_.end(), y.begin(), y.end());
  gp.condition();
  return gp;
}

void GaussianProcess::condition() {
  const size_t n = x_.size();
  std::vector<double> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = (y_[i] - shift_) / scale_ - params_.mean;
  // Points closer than the noise can separate (repeated trials) need more on the diagonal.
  for (double extra : {kJitter, 1e-6, 1e-4, 1e-2}) {
    if (factorKernel(x_, params_, extra * params_.signal_variance, factor_)) {
      log_likelihood_ = logLikelihoodFromFactor(factor_, z, alpha_);
      return;
    }
  }
  factor_.clear();  // predict() falls back to the prior
  alpha_.clear();
  log_likelihood_ = -kInf;
}

double GaussianProcess::correlation(std::span<const double> a, std::span<const double> b) const {
  return matern52(scaledDistance(a, b, params_.length_scales));
}

GaussianProcess::Prediction GaussianProcess::predict(std::span<const double> x) const {
  const size_t n = x_.size();
  const double prior = params_.signal_variance;
  if (factor_.empty() || n == 0) return {shift_ + scale_ * params_.mean, prior * scale_ * scale_};
  std::vector<double> k(n);
  double mean = params_.mean;
  for (size_t i = 0; i < n; ++i) {
    k[i] = prior * matern52(scaledDistance(x, x_[i], params_.length_scales));
    mean += k[i] * alpha_[i];
  }
  forwardSolve(factor_, n, k);
  double explained = 0;
  for (double v : k) explained += v * v;
  const double variance = std::max(prior - explained, 1e-12 * prior);
  return {shift_ + scale_ * mean, scale_ * scale_ * variance};
}

}  // namespace rd::orch::tune
