// SPDX-License-Identifier: BSD-3-Clause
// The all-reduce algorithms a communicator can be set to, as data: the value of each
// (rdAlgorithm_t), its name in settings, Python and reducectl, and what it does. The operations
// that implement them are registered in collectives/algorithms/registry.h.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "libreduce/reduce.h"

namespace rd {

struct AlgorithmInfo {
  rdAlgorithm_t id;
  const char* name;
  const char* description;
  bool needs_reducers;  // a communicator without reducers cannot run it
};

/** Names indexed by rdAlgorithm_t: the allowed values of LIBREDUCE_ALGO. */
inline constexpr const char* kAlgorithmNames[] = {"auto", "rs", "ring"};
static_assert(std::size(kAlgorithmNames) == rdNumAlgorithms, "one name per rdAlgorithm_t");

/** Every algorithm, rdAlgoAuto first, in rdAlgorithm_t order. */
std::span<const AlgorithmInfo> algorithmCatalog();

/** True for a value of the rdAlgorithm_t enum (not rdNumAlgorithms). */
inline bool validAlgorithm(int algorithm) {
  return algorithm >= 0 && algorithm < rdNumAlgorithms;
}

/** The catalog's row for @p algorithm (which must be valid). */
const AlgorithmInfo& algorithmInfo(rdAlgorithm_t algorithm);

/** The name of @p algorithm ("rs", "ring", ...), "invalid" when it is not one. */
const char* algorithmName(rdAlgorithm_t algorithm);

/** The algorithm called @p name (case-insensitive); false when there is none. */
bool algorithmFromName(std::string_view name, rdAlgorithm_t* out);

/** "auto, rs or ring": the names for messages. */
std::string algorithmChoiceText();

}  // namespace rd
