// SPDX-License-Identifier: BSD-3-Clause
// Vertex AI's machine types as resources: how many vCPUs, how much memory and how many GPUs a
// machineSpec stands for, so that a backend can ask its scheduler for the same.
#pragma once

#include <cstdint>
#include <string>

#include "orchestrator/job_spec.h"

namespace rd::orch {

struct MachineShape {
  int vcpus = 0;          // 0: the machine type was not given
  int64_t memory_mb = 0;  // the machine's memory
  int gpus = 0;           // acceleratorCount, else the GPUs the machine type comes with
  std::string gpu_model;  // Vertex's accelerator name ("NVIDIA_TESLA_A100"); empty: none
};

/**
 * The shape of @p machine. Known machine types: n1, n2, n2d, e2, c2, c2d, c3, n4 in -standard-N,
 * -highmem-N and -highcpu-N; a2-highgpu-Kg, a2-ultragpu-Kg, a2-megagpu-16g, a3-highgpu-8g,
 * g2-standard-N. False with @p error for another machine type (with the nearest known name) or
 * a TPU accelerator (no cluster outside Google's has them).
 */
bool machineShape(const MachineSpec& machine, MachineShape* shape, std::string* error);

/**
 * Whether @p type is a machine type machineShape knows; when not, *error says so, with the known
 * name nearest to it where one is near ("did you mean n1-standard-8?" for "n1-standrd-8").
 */
bool knownMachineType(const std::string& type, std::string* error);

}  // namespace rd::orch
