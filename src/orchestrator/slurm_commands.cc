// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/slurm_commands.h"

#include <sstream>

#include "orchestrator/external_command.h"

namespace rd::orch {
namespace {

constexpr int kQueryTimeoutS = 30;

}  // namespace

bool slurmSubmit(const std::string& script, std::string* job_id, std::string* error) {
  std::string out, err;
  int code = runCommand({"sbatch", "--parsable", script}, &out, &err, kQueryTimeoutS);
  if (code != 0) {
    *error = code < 0 ? err + " (is Slurm installed? scripts/local_slurm.sh starts one)"
                      : "sbatch refused the job: " + trimSpace(err.empty() ? out : err);
    return false;
  }
  // "123" or "123;cluster".
  *job_id = trimSpace(out.substr(0, out.find(';')));
  if (job_id->empty()) {
    *error = "sbatch printed no job id (" + trimSpace(out + err) + ")";
    return false;
  }
  return true;
}

SlurmQueueState slurmQueueState(const std::string& job_id) {
  SlurmQueueState s;
  std::string out, err;
  int code = runCommand({"squeue", "-h", "-j", job_id, "-o", "%T|%r"}, &out, &err, kQueryTimeoutS);
  if (code != 0) {
    // A job that left the queue long ago is unknown to squeue: that is an answer too.
    if (err.find("Invalid job id") != std::string::npos) {
      s.answered = true;
      return s;
    }
    s.error = "squeue: " + trimSpace(err.empty() ? "exit " + std::to_string(code) : err);
    return s;
  }
  s.answered = true;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    line = trimSpace(line);
    if (line.empty()) continue;
    std::string state = line.substr(0, line.find('|'));
    std::string reason = line.find('|') == std::string::npos ? "" : line.substr(line.find('|') + 1);
    if (!s.in_queue) s.state = state;
    s.in_queue = true;
    if (state == "PENDING") {
      s.pending = true;
      if (s.reason.empty() || s.reason == "None") s.reason = reason;
    }
  }
  return s;
}

std::string slurmFinalState(const std::string& job_id) {
  std::string out, err;
  if (runCommand({"scontrol", "-o", "show", "job", job_id}, &out, &err, kQueryTimeoutS) != 0) {
    return "";
  }
  size_t at = out.find("JobState=");
  if (at == std::string::npos) return "";
  return out.substr(at + 9, out.find_first_of(" \n", at) - at - 9);
}

bool slurmCancel(const std::string& job_id, std::string* error) {
  std::string out, err;
  int code = runCommand({"scancel", job_id}, &out, &err, kQueryTimeoutS);
  if (code != 0) *error = "scancel " + job_id + ": " + trimSpace(err.empty() ? out : err);
  return code == 0;
}

bool slurmReasonIsHopeless(const std::string& reason) {
  static const char* const kHopeless[] = {
      "PartitionNodeLimit", "PartitionTimeLimit",    "PartitionConfig",
      "BadConstraints",     "InvalidAccount",        "InvalidQOS",
      "AccountNotAllowed",  "QOSMaxNodePerJobLimit", "QOSMaxCpuPerJobLimit",
  };
  for (const char* hopeless : kHopeless) {
    if (reason == hopeless) return true;
  }
  return false;
}

}  // namespace rd::orch
