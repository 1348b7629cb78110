// SPDX-License-Identifier: BSD-3-Clause
#include "common/algorithm.h"

#include <cctype>
#include <iterator>

#include "common/status.h"

namespace rd {
namespace {

constexpr AlgorithmInfo kCatalog[] = {
    {rdAlgoDefault, kAlgorithmNames[rdAlgoDefault],
     "with reducers: each all-reduce size class tries rs and ring on its first calls and keeps "
     "the faster (other collectives run rs); without: ring",
     false},
    {rdAlgoReductionServer, kAlgorithmNames[rdAlgoReductionServer],
     "reduction server: chunks go to the reducers, which send the sums back (needs reducers)",
     true},
    {rdAlgoRing, kAlgorithmNames[rdAlgoRing],
     "ring all-reduce between the workers: reduce-scatter then all-gather around the ring", false},
};
static_assert(std::size(kCatalog) == rdNumAlgorithms, "one row per rdAlgorithm_t");

constexpr bool rowsInEnumOrder() {
  for (int i = 0; i < rdNumAlgorithms; ++i) {
    if (kCatalog[i].id != i) return false;
  }
  return true;
}
static_assert(rowsInEnumOrder(), "kCatalog rows must follow rdAlgorithm_t");

bool equalNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::span<const AlgorithmInfo> algorithmCatalog() {
  return kCatalog;
}

const AlgorithmInfo& algorithmInfo(rdAlgorithm_t algorithm) {
  return kCatalog[validAlgorithm(algorithm) ? algorithm : rdAlgoDefault];
}

const char* algorithmName(rdAlgorithm_t algorithm) {
  return validAlgorithm(algorithm) ? kCatalog[algorithm].name : "invalid";
}

bool algorithmFromName(std::string_view name, rdAlgorithm_t* out) {
  for (const AlgorithmInfo& a : kCatalog) {
    if (equalNoCase(name, a.name)) {
      *out = a.id;
      return true;
    }
  }
  return false;
}

std::string algorithmChoiceText() {
  std::string text;
  for (int i = 0; i < rdNumAlgorithms; ++i) {
    if (i != 0) text += i + 1 == rdNumAlgorithms ? " or " : ", ";
    text += kCatalog[i].name;
  }
  return text;
}

}  // namespace rd

extern "C" {

const char* rdAlgorithmName(rdAlgorithm_t algorithm) {
  return rd::algorithmName(algorithm);
}

rdResult_t rdAlgorithmFromName(const char* name, rdAlgorithm_t* algorithm) {
  rd::clearLastError();
  if (name == nullptr || algorithm == nullptr) {
    return rd::setError(rdInvalidArgument, "name or algorithm is NULL");
  }
  if (!rd::algorithmFromName(name, algorithm)) {
    return rd::setErrorf(rdInvalidArgument, "no algorithm '%s': expected %s", name,
                         rd::algorithmChoiceText().c_str());
  }
  return rdSuccess;
}

}  // extern "C"
