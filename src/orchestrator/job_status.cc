// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_status.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "orchestrator/job_files.h"

namespace rd::orch {
namespace {

std::string statusFile(const std::string& job_dir) {
  return job_dir + "/reducectl/status";
}

std::string registryDir() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') return std::string(state) + "/reducectl/jobs";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] == '/' ? home : "/tmp") +
         "/.local/state/reducectl/jobs";
}

}  // namespace

bool writeJobStatus(const std::string& job_dir, const JobStatusRecord& s) {
  std::string text = "job_id=" + s.job_id + "\nstate=" + s.state + "\nbackend=" + s.backend +
                     "\nslurm_job=" + s.slurm_job + "\ndriver_pid=" + std::to_string(s.driver_pid) +
                     "\ncause=" + s.cause.substr(0, s.cause.find('\n')) + "\n";
  return writeFileAtomically(statusFile(job_dir), text);
}

bool readJobStatus(const std::string& job_dir, JobStatusRecord* s) {
  std::ifstream in(statusFile(job_dir));
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "job_id") s->job_id = value;
    if (key == "state") s->state = value;
    if (key == "backend") s->backend = value;
    if (key == "slurm_job") s->slurm_job = value;
    if (key == "cause") s->cause = value;
    if (key == "driver_pid") s->driver_pid = std::atoi(value.c_str());
  }
  return !s->state.empty();
}

void registerJob(const std::string& job_id, const std::string& job_dir) {
  std::string dir = registryDir();
  std::string error;
  if (!makeDirectories(dir, &error)) return;
  std::string link = dir + "/" + job_id;
  unlink(link.c_str());
  if (symlink(job_dir.c_str(), link.c_str()) != 0) {
    // best effort: status and cancel also take the job's directory
  }
}

std::string findJobDir(const std::string& id_or_dir) {
  struct stat st {};
  std::string candidates[] = {id_or_dir, registryDir() + "/" + id_or_dir};
  for (const std::string& c : candidates) {
    if (stat((c + "/reducectl/status").c_str(), &st) == 0) return absolutePath(c);
  }
  return "";
}

bool isReducectlProcess(int pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string argv0;
  std::getline(in, argv0, '\0');
  return argv0.size() >= 9 && argv0.compare(argv0.size() - 9, 9, "reducectl") == 0;
}

bool isFinalState(const std::string& state) {
  return state == "SUCCEEDED" || state == "FAILED" || state == "CANCELLED";
}

}  // namespace rd::orch
