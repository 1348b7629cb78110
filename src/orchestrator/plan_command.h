// SPDX-License-Identifier: BSD-3-Clause
// `reducectl plan`: how many reducers a job needs (plan_model.h) and, given a bucket size, the
// all-reduce time the scale model predicts for rs and ring (scale_model.h), as text or JSON.
#pragma once

namespace rd::orch {

/** reducectl plan ...: argv[1] is "plan". Returns the exit status (dies on bad usage). */
int runPlanCommand(int argc, char** argv);

}  // namespace rd::orch
