// SPDX-License-Identifier: BSD-3-Clause
// Gaussian-process regression for the Bayesian searcher: a Matern 5/2 kernel with a length scale
// per input (ARD) or one shared, a constant mean, Gaussian noise. The outputs are standardized
// (the constant mean is their average or their lowest value); the hyperparameters are fitted by
// maximizing the log marginal likelihood (with weak priors, optional), deterministically: a grid of
// starting points in log space, then Nelder-Mead. The inputs are points of the unit cube
// (search_space.h); the solves use a Cholesky factorization of our own, as n is at most a few
// hundred.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace rd::orch::tune {

/** The kernel's and the noise's parameters, in the units of the standardized outputs. */
struct GpParams {
  std::vector<double> length_scales;  // one per input coordinate
  double signal_variance = 1;
  double noise_variance = 1e-4;
  double mean = 0;  // the constant prior mean
};

struct GpFitOptions {
  bool ard = true;     // a length scale per coordinate (else one shared by all)
  bool priors = true;  // weak log-normal priors on the length scales and the signal variance,
                       // which keep a fit to a handful of points from degenerating
  int max_evaluations = 600;  // of the likelihood, in all
  // The constant prior mean: the outputs' average, or their lowest value. The lowest predicts
  // unexplored regions to be poor, so an optimizer maximizing the outputs refines around its good
  // points and explores where the uncertainty alone warrants it rather than in every far corner.
  enum class Mean { kAverage, kLowest } mean = Mean::kAverage;
};

/** The Matern 5/2 correlation at scaled distance @p r: (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r). */
double matern52(double r);

/**
 * Factors the symmetric positive-definite @p n x @p n row-major matrix @p a in place into its
 * lower Cholesky factor L (a = L L^T). Only the lower triangle is read; the upper one is zeroed.
 * False if the matrix is not positive definite (a is then unspecified).
 */
bool cholesky(std::vector<double>& a, size_t n);

/** E[max(f - best, 0)] for f ~ N(@p mean, @p sd^2): the expected improvement over @p best. */
double expectedImprovement(double mean, double sd, double best);

/** log expectedImprovement(), accurate where the improvement itself underflows to 0. */
double logExpectedImprovement(double mean, double sd, double best);

class GaussianProcess {
 public:
  /** The posterior of the latent function at a point, in the units of the outputs. */
  struct Prediction {
    double mean = 0;
    double variance = 0;
  };

  /** Fits the hyperparameters to the points @p x (rows) and outputs @p y, then conditions. */
  static GaussianProcess fit(std::vector<std::vector<double>> x, std::vector<double> y,
                             const GpFitOptions& options = {});

  /**
   * Conditions on @p x and @p y with the given hyperparameters (missing length scales take the
   * first one's value, or 0.5).
   */
  static GaussianProcess withParams(std::vector<std::vector<double>> x, std::vector<double> y,
                                    GpParams params);

  /**
   * This model with the points @p x and outputs @p y added, its hyperparameters and output
   * scaling kept: how pending trials enter with made-up values (constant liar).
   */
  GaussianProcess extended(const std::vector<std::vector<double>>& x,
                           const std::vector<double>& y) const;

  Prediction predict(std::span<const double> x) const;

  /** The kernel's correlation between @p a and @p b, in [0, 1]: 1 at the same point. */
  double correlation(std::span<const double> a, std::span<const double> b) const;

  /** The log marginal likelihood of the standardized outputs under params(). */
  double logMarginalLikelihood() const { return log_likelihood_; }
  const GpParams& params() const { return params_; }
  size_t size() const { return x_.size(); }

 private:
  GaussianProcess() = default;
  // A model of x and y with y's standardization set, not yet conditioned.
  static GaussianProcess standardized(std::vector<std::vector<double>> x, std::vector<double> y);
  void condition();

  std::vector<std::vector<double>> x_;
  std::vector<double> y_;  // as given
  double shift_ = 0;       // outputs are standardized as (y - shift_) / scale_
  double scale_ = 1;
  GpParams params_;
  std::vector<double> factor_;  // Cholesky factor of the kernel matrix plus noise
  std::vector<double> alpha_;   // (K + noise I)^-1 z
  double log_likelihood_ = 0;
};

/**
 * The log marginal likelihood of the standardized outputs @p z at the points @p x under
 * @p params; -infinity if the kernel matrix cannot be factored.
 */
double gpLogMarginalLikelihood(const std::vector<std::vector<double>>& x,
                               const std::vector<double>& z, const GpParams& params);

/** The hyperparameters that maximize the (penalized) marginal likelihood of @p z at @p x. */
GpParams fitGpParams(const std::vector<std::vector<double>>& x, const std::vector<double>& z,
                     const GpFitOptions& options = {});

}  // namespace rd::orch::tune
