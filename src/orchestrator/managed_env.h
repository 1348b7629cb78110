// SPDX-License-Identifier: BSD-3-Clause
// The variables reducectl sets for every replica, defined once: the job's wiring. A spec may not
// set them, and a value inherited from reducectl's own environment is scrubbed before a replica
// starts, so that nothing overrides what reducectl gives.
#pragma once

#include <string>
#include <vector>

#include "common/settings.h"

namespace rd::orch {

/** Every managed variable's name (libreduce settings by their LIBREDUCE_* name). */
const std::vector<std::string>& managedVariables();

/** Why a spec may not give @p name in a pool's env, or null when it may. */
const char* managedVariableReason(const std::string& name);

/** Why a spec may not give libreduce setting @p id, or null when it may. */
const char* managedSettingReason(settings::Id id);

}  // namespace rd::orch
