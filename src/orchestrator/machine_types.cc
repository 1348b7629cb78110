// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/machine_types.h"

#include <charconv>
#include <string>
#include <vector>

#include "orchestrator/spec_fields.h"

namespace rd::orch {
namespace {

// General-purpose families: memory per vCPU in MiB for -standard / -highmem / -highcpu
// (Google's published sizes, e.g. n1-standard-8 = 8 vCPUs, 30 GB).
struct Family {
  const char* name;
  int standard_mb, highmem_mb, highcpu_mb;  // 0: the family has no such class
};
constexpr Family kFamilies[] = {
    {"n1", 3840, 6656, 922},  {"n2", 4096, 8192, 1024}, {"n2d", 4096, 8192, 1024},
    {"e2", 4096, 8192, 1024}, {"c2", 4096, 0, 0},       {"c2d", 4096, 8192, 2048},
    {"c3", 4096, 8192, 2048}, {"n4", 4096, 8192, 2048},
};

// Accelerator-optimized types: the GPUs come with the machine.
struct GpuMachine {
  const char* name;
  int vcpus;
  int64_t memory_mb;
  int gpus;
  const char* model;
};
constexpr GpuMachine kGpuMachines[] = {
    {"a2-highgpu-1g", 12, int64_t{85} * 1024, 1, "NVIDIA_TESLA_A100"},
    {"a2-highgpu-2g", 24, int64_t{170} * 1024, 2, "NVIDIA_TESLA_A100"},
    {"a2-highgpu-4g", 48, int64_t{340} * 1024, 4, "NVIDIA_TESLA_A100"},
    {"a2-highgpu-8g", 96, int64_t{680} * 1024, 8, "NVIDIA_TESLA_A100"},
    {"a2-megagpu-16g", 96, int64_t{1360} * 1024, 16, "NVIDIA_TESLA_A100"},
    {"a2-ultragpu-1g", 12, int64_t{170} * 1024, 1, "NVIDIA_A100_80GB"},
    {"a2-ultragpu-2g", 24, int64_t{340} * 1024, 2, "NVIDIA_A100_80GB"},
    {"a2-ultragpu-4g", 48, int64_t{680} * 1024, 4, "NVIDIA_A100_80GB"},
    {"a2-ultragpu-8g", 96, int64_t{1360} * 1024, 8, "NVIDIA_A100_80GB"},
    {"a3-highgpu-8g", 208, int64_t{1872} * 1024, 8, "NVIDIA_H100_80GB"},
};

// g2-standard-N: N vCPUs, 4 GB each, L4 GPUs by size.
int g2Gpus(int vcpus) {
  switch (vcpus) {
    case 4:
    case 8:
    case 12:
    case 16:
    case 32: return 1;
    case 24: return 2;
    case 48: return 4;
    case 96: return 8;
    default: return 0;
  }
}

bool parseCount(const std::string& text, int* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out > 0 && *out <= 1024;
}

bool generalPurpose(const std::string& type, MachineShape* shape) {
  size_t first = type.find('-');
  size_t second = type.find('-', first + 1);
  if (first == std::string::npos || second == std::string::npos) return false;
  std::string family = type.substr(0, first);
  std::string kind = type.substr(first + 1, second - first - 1);
  int vcpus = 0;
  if (!parseCount(type.substr(second + 1), &vcpus)) return false;
  if (family == "g2" && kind == "standard" && g2Gpus(vcpus) > 0) {
    *shape = {vcpus, int64_t{vcpus} * 4096, g2Gpus(vcpus), "NVIDIA_L4"};
    return true;
  }
  for (const Family& f : kFamilies) {
    if (family != f.name) continue;
    int per_cpu = kind == "standard"  ? f.standard_mb
                  : kind == "highmem" ? f.highmem_mb
                  : kind == "highcpu" ? f.highcpu_mb
                                      : 0;
    if (per_cpu == 0) return false;
    *shape = {vcpus, int64_t{vcpus} * per_cpu, 0, ""};
    return true;
  }
  return false;
}

// Why @p type is refused, naming the known type nearest to it where one is near. The
// candidates: every family and class with the same vCPU count (the part after the last '-'),
// and the accelerator-optimized names.
std::string unknownTypeError(const std::string& type) {
  std::vector<std::string> names;
  std::string count = type.substr(type.rfind('-') + 1);
  for (const Family& f : kFamilies) {
    for (const char* kind : {"standard", "highmem", "highcpu"}) {
      names.push_back(std::string(f.name) + "-" + kind + "-" + count);
    }
  }
  names.push_back("g2-standard-" + count);
  for (const GpuMachine& g : kGpuMachines) names.emplace_back(g.name);
  std::string closest = spec::closestName(type, names);
  return "machineType '" + type + "' is not one reducectl knows" +
         (closest.empty() ? "" : " (did you mean " + closest + "?)") +
         "; leave it out and give the resources directly (slurm: cpusPerTask, memory, gpus)";
}

}  // namespace

bool machineShape(const MachineSpec& machine, MachineShape* shape, std::string* error) {
  *shape = MachineShape{};
  if (machine.accelerator_type.rfind("TPU", 0) == 0) {
    *error = "acceleratorType " + machine.accelerator_type +
             " is a TPU, which only Google Cloud has; give GPUs or drop the accelerator";
    return false;
  }
  if (!machine.machine_type.empty()) {
    bool known = generalPurpose(machine.machine_type, shape);
    for (const GpuMachine& g : kGpuMachines) {
      if (machine.machine_type == g.name) {
        *shape = {g.vcpus, g.memory_mb, g.gpus, g.model};
        known = true;
      }
    }
    if (!known) {
      *error = unknownTypeError(machine.machine_type);
      return false;
    }
  }
  if (machine.accelerator_count > 0) {
    shape->gpus = machine.accelerator_count;
    shape->gpu_model = machine.accelerator_type;
  }
  return true;
}

bool knownMachineType(const std::string& type, std::string* error) {
  MachineSpec machine;
  machine.machine_type = type;
  MachineShape shape;
  return machineShape(machine, &shape, error);
}

}  // namespace rd::orch
