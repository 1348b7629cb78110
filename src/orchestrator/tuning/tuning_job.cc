// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/tuning_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "orchestrator/job_files.h"
#include "orchestrator/job_record.h"
#include "orchestrator/replica_process.h"
#include "orchestrator/tuning/early_stopping.h"
#include "orchestrator/tuning/search.h"
#include "orchestrator/tuning/trials.h"

namespace rd::orch::tune {
namespace {

constexpr int kPollMs = 250;  // how often running trials' metrics files are read
constexpr const char* kRunAgain = "run again as trial ";

double epochNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last non-empty line of a trial's console: its job's summary says why it failed.
std::string lastLine(const std::string& path) {
  std::string text = readWholeFile(path);
  std::string last;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(" \t") != std::string::npos) last = line;
  }
  return last;
}

// trials.png beside trials.json, drawn by the plot script (matplotlib); a missing script or
// library costs the picture only.
void drawPlot(const std::string& dir, const std::string& tool) {
  struct stat st {};
  if (tool.empty() || stat(tool.c_str(), &st) != 0) return;
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    std::string json = dir + "/trials.json";
    std::string png = dir + "/trials.png";
    execl("/usr/bin/python3", "python3", tool.c_str(), json.c_str(), png.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid < 0 || exitCodeOf(status) != 0) {
    std::fprintf(stderr, "reducectl: no plot of the trials (%s failed)\n", tool.c_str());
  }
}

// Where trial @p t's reports go (CLOUD_ML_HP_METRIC_FILE), and its reducectl's output.
std::string metricsFile(const Trial& t) {
  return t.job_dir + "/hypertune/output.metrics";
}
std::string consoleLog(const Trial& t) {
  return t.job_dir + "/reducectl-console.log";
}

const ParameterSpec* findParameter(const std::vector<ParameterSpec>& params,
                                   const std::string& id) {
  for (const ParameterSpec& p : params) {
    if (p.id == id) return &p;
    for (const ConditionalParameter& c : p.conditionals) {
      if (const ParameterSpec* found = findParameter(c.children, id)) return found;
    }
  }
  return nullptr;
}

class TuningJob {
 public:
  TuningJob(const TuningSpec& spec, const TuneOptions& options)
      : spec_(spec), options_(options), searcher_(makeSearcher(spec.study)) {}

  int run(const std::string& spec_text);

 private:
  bool prepare(const std::string& spec_text, std::string* error);
  bool resume(std::string* error);
  void loop();
  void startTrials();
  bool startTrial(Assignment params);
  void reap();
  void finishTrial(Trial& t, int exit_code);
  void readMetrics();
  void checkStudyStopping();
  void stopTrial(Trial& t, const std::string& why);
  void onSignal(int sig);
  void save();
  void note(const std::string& line) const;
  int finish();

  int countedTrials() const;
  bool mayStartMore() const;  // no stop, no cancel, trials left: more may start when room
  int running() const;
  JobSpec trialJob(const Trial& t) const;

  const TuningSpec& spec_;
  const TuneOptions& options_;
  std::unique_ptr<Searcher> searcher_;
  TuningRecord record_;
  std::string dir_;
  std::vector<size_t> rerun_;  // trials a resumed job runs again (their parameters, anew)
  int signal_fd_ = -1;
  sigset_t old_mask_{};
  int cancel_signal_ = 0;   // the user's SIGINT / SIGTERM
  std::string study_stop_;  // why no more trials start
  bool exhausted_ = false;  // the searcher has nothing left (a finished grid)
  bool failed_ = false;     // maxFailedTrialCount reached
  double start_epoch_ = 0;
  double last_progress_epoch_ = 0;  // when the best objective last improved
  int trials_since_progress_ = 0;
};

int TuningJob::countedTrials() const {
  int n = 0;
  for (const Trial& t : record_.trials) n += t.state == TrialState::kStopped ? 0 : 1;
  return n;
}

int TuningJob::running() const {
  int n = 0;
  for (const Trial& t : record_.trials) n += isFinal(t.state) ? 0 : 1;
  return n;
}

void TuningJob::note(const std::string& line) const {
  if (!options_.quiet)
    std::printf("reducectl: tuning %s: %s\n", record_.tuning_job_id.c_str(), line.c_str());
  std::fflush(stdout);
}

void TuningJob::save() {
  writeFileAtomically(dir_ + "/trials.json", tuningRecordJson(record_));
}

bool TuningJob::prepare(const std::string& spec_text, std::string* error) {
  if (!options_.resume_dir.empty()) return resume(error);
  record_.tuning_job_id = options_.job_id.empty() ? makeJobId(spec_.name) : options_.job_id;
  std::string base = spec_.base_output_dir.empty() ? "reducectl-jobs" : spec_.base_output_dir;
  dir_ = absolutePath(base) + "/" + record_.tuning_job_id;
  struct stat st {};
  if (stat((dir_ + "/trials.json").c_str(), &st) == 0) {
    *error = dir_ + " already holds a tuning job: continue it with --resume " + dir_;
    return false;
  }
  if (!makeDirectories(dir_, error)) return false;
  if (!writeFileAtomically(dir_ + "/" + kKeptSpecName, spec_text)) {
    *error = "cannot write " + dir_ + "/" + kKeptSpecName;
    return false;
  }
  record_.display_name = spec_.name;
  record_.metrics = spec_.study.metrics;
  record_.start_time = wallClockNow();
  return true;
}

bool TuningJob::resume(std::string* error) {
  dir_ = absolutePath(options_.resume_dir);
  if (!parseTuningRecord(readWholeFile(dir_ + "/trials.json"), &record_, error)) {
    *error = dir_ + "/" + *error;
    return false;
  }
  record_.metrics = spec_.study.metrics;
  record_.end_time.clear();
  record_.cause.clear();
  for (Trial& t : record_.trials) {
    // Values were read back as text: give each its parameter's type again.
    for (ParameterValue& v : t.parameters) {
      const ParameterSpec* p = findParameter(spec_.study.parameters, v.id);
      if (p == nullptr) {
        *error = dir_ + "/trials.json: trial " + t.id + " has the parameter '" + v.id +
                 "', which the kept spec does not define";
        return false;
      }
      v.is_text = p->kind == ParameterKind::kCategorical;
      if (!v.is_text) v.number = std::strtod(v.text.c_str(), nullptr);
      if (!v.is_text) v.text.clear();
    }
    if (t.state == TrialState::kStopped && t.cause.find(kRunAgain) == std::string::npos) {
      rerun_.push_back(static_cast<size_t>(&t - record_.trials.data()));
    }
  }
  note("resumed from " + dir_ + ": " + std::to_string(record_.trials.size()) + " trials so far, " +
       std::to_string(rerun_.size()) + " to run again");
  return true;
}

JobSpec TuningJob::trialJob(const Trial& t) const {
  JobSpec job = spec_.trial;
  job.base_output_dir = dir_.substr(0, dir_.rfind('/'));
  for (PoolKind kind : {PoolKind::kPrimary, PoolKind::kWorkers, PoolKind::kEvaluators}) {
    PoolSpec& pool = job.pool(kind);
    if (pool.replica_count == 0) continue;
    for (const ParameterValue& v : t.parameters) pool.command.push_back(formatArgument(v));
  }
  return job;
}

bool TuningJob::startTrial(Assignment params) {
  Trial t;
  t.id = std::to_string(record_.trials.size() + 1);
  t.parameters = std::move(params);
  t.job_dir = dir_ + "/" + t.id;
  t.start_time = wallClockNow();
  t.start_epoch = epochNow();
  std::string error;
  if (!makeDirectories(t.job_dir + "/hypertune", &error)) {
    study_stop_ = error;
    failed_ = true;
    return false;
  }
  JobSpec job = trialJob(t);
  RunOptions run = options_.run;
  run.job_id = record_.tuning_job_id;
  run.trial_id = t.id;
  run.hp_metric_file = metricsFile(t);
  run.quiet = true;
  const std::string console = consoleLog(t);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    // The trial's own reducectl: in a group of its own, so a terminal's Ctrl-C reaches only
    // the tuning job, which then cancels each trial once; gone with the tuning job.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::close(signal_fd_);
    int fd = ::open(console.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    JobResult result = runLocalJob(job, run);
    std::fflush(nullptr);
    _exit(result.exit_code);
  }
  if (pid < 0) {
    study_stop_ = std::string("cannot start a trial: fork: ") + std::strerror(errno);
    failed_ = true;
    return false;
  }
  t.pid = pid;
  std::string args;
  for (const ParameterValue& v : t.parameters) args += " " + formatArgument(v);
  note("trial " + t.id + " started:" + args);
  record_.trials.push_back(std::move(t));
  save();
  return true;
}

bool TuningJob::mayStartMore() const {
  int limit = spec_.max_trials;
  if (spec_.study.max_num_trials > 0) limit = std::min(limit, spec_.study.max_num_trials);
  return !cancel_signal_ && study_stop_.empty() && !exhausted_ && countedTrials() < limit;
}

void TuningJob::startTrials() {
  while (mayStartMore() && running() < spec_.parallel_trials) {
    std::optional<Assignment> next;
    if (!rerun_.empty()) {
      Trial& old = record_.trials[rerun_.front()];
      rerun_.erase(rerun_.begin());
      old.cause += std::string("; ") + kRunAgain + std::to_string(record_.trials.size() + 1);
      next = old.parameters;
    } else {
      std::vector<Observation> done;
      std::vector<Assignment> pending;
      for (const Trial& t : record_.trials) {
        if (t.state == TrialState::kStopped) continue;
        if (!isFinal(t.state)) {
          pending.push_back(t.parameters);
          continue;
        }
        Observation o{t.parameters, std::nullopt};
        if (t.final_measurement) o.value = objectiveOf(*t.final_measurement, record_.metrics);
        done.push_back(o);
      }
      next = searcher_->suggest(done, pending);
    }
    if (!next) {
      exhausted_ = true;
      note("every point of the search space was tried");
      return;
    }
    if (!startTrial(std::move(*next))) return;
  }
}

void TuningJob::readMetrics() {
  bool changed = false;
  for (Trial& t : record_.trials) {
    if (isFinal(t.state)) continue;
    std::vector<Measurement> now = readHypertuneMetrics(metricsFile(t));
    // A rewrite caught half-way can show fewer reports than before: keep the longer view.
    if (now.size() <= t.measurements.size()) continue;
    t.measurements = std::move(now);
    changed = true;
    if (t.state != TrialState::kActive || !spec_.study.median_stopping) continue;
    std::string why;
    if (shouldStopEarly(t, record_, spec_.study, &why)) stopTrial(t, why);
  }
  if (changed) save();
}

void TuningJob::stopTrial(Trial& t, const std::string& why) {
  if (t.state != TrialState::kActive) return;
  t.state = TrialState::kStopping;
  t.early_stopped = cancel_signal_ == 0;
  t.cause = why;
  kill(t.pid, SIGTERM);  // its reducectl cancels its job and exits
  note("trial " + t.id + " stopping: " + why);
}

void TuningJob::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (Trial& t : record_.trials) {
      if (t.pid == pid && !isFinal(t.state)) finishTrial(t, exitCodeOf(status));
    }
  }
}

void TuningJob::finishTrial(Trial& t, int exit_code) {
  std::vector<Measurement> last = readHypertuneMetrics(metricsFile(t));
  if (last.size() >= t.measurements.size()) t.measurements = std::move(last);
  t.final_measurement =
      selectMeasurement(t.measurements, record_.metrics, spec_.study.best_measurement);
  t.end_time = wallClockNow();
  t.pid = 0;
  if (t.state == TrialState::kStopping && !t.early_stopped) {
    t.state = TrialState::kStopped;
  } else if (exit_code == 0 || t.early_stopped) {
    t.state = t.final_measurement ? TrialState::kSucceeded : TrialState::kInfeasible;
    if (!t.final_measurement) t.cause = "it never reported " + record_.metrics[0].id;
  } else {
    t.state = TrialState::kFailed;
    t.cause = "its job failed (exit " + std::to_string(exit_code) + "): " + lastLine(consoleLog(t));
  }
  std::string line = "trial " + t.id + " " + trialStateName(t.state);
  if (t.final_measurement) {
    std::optional<double> v = objectiveOf(*t.final_measurement, record_.metrics);
    line += ": " + record_.metrics[0].id + " = " + shortNumber(v.value_or(0));
    int best = bestTrial(record_);
    bool improved = best >= 0 && record_.trials[static_cast<size_t>(best)].id == t.id;
    if (improved) {
      line += " (best so far)";
      last_progress_epoch_ = epochNow();
      trials_since_progress_ = 0;
    } else {
      ++trials_since_progress_;
    }
  } else if (!t.cause.empty()) {
    line += ": " + t.cause;
  }
  note(line);
  save();
}

void TuningJob::checkStudyStopping() {
  int failed = 0;
  int completed = 0;
  for (const Trial& t : record_.trials) {
    failed += t.state == TrialState::kFailed ? 1 : 0;
    completed += t.state == TrialState::kSucceeded || t.state == TrialState::kInfeasible ? 1 : 0;
  }
  if (spec_.max_failed_trials > 0 && failed >= spec_.max_failed_trials && !failed_) {
    failed_ = true;
    study_stop_ = std::to_string(failed) + " trials failed (maxFailedTrialCount " +
                  std::to_string(spec_.max_failed_trials) + ")";
    for (Trial& t : record_.trials) {
      if (t.state == TrialState::kActive) stopTrial(t, "the tuning job failed");
    }
    note(study_stop_);
    return;
  }
  if (!study_stop_.empty() || completed + failed < spec_.study.min_num_trials) return;
  std::string why = studyStopReason(record_, spec_.study, epochNow() - start_epoch_,
                                    epochNow() - last_progress_epoch_, trials_since_progress_);
  if (!why.empty()) {
    study_stop_ = why;
    note("no more trials: " + why);
  }
}

void TuningJob::onSignal(int sig) {
  if (sig == SIGCHLD) return;
  if (cancel_signal_ != 0) {
    // A second signal: the trials' reducectls stop their replicas at once on their second.
    for (Trial& t : record_.trials) {
      if (!isFinal(t.state)) kill(t.pid, SIGTERM);
    }
    return;
  }
  cancel_signal_ = sig;
  note(std::string("cancelled (") + strsignal(sig) + "): stopping the running trials");
  for (Trial& t : record_.trials) stopTrial(t, std::string("cancelled by ") + strsignal(sig));
}

void TuningJob::loop() {
  for (;;) {
    reap();
    readMetrics();
    if (!failed_) checkStudyStopping();  // after reap(): finished trials count at once
    startTrials();
    if (running() == 0 && !mayStartMore()) return;
    pollfd pfd{signal_fd_, POLLIN, 0};
    if (poll(&pfd, 1, kPollMs) > 0) {
      signalfd_siginfo info{};
      while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        onSignal(static_cast<int>(info.ssi_signo));
      }
    }
  }
}

int TuningJob::finish() {
  int best = bestTrial(record_);
  if (cancel_signal_ != 0) {
    record_.state = "CANCELLED";
    record_.cause = std::string("cancelled by ") + strsignal(cancel_signal_);
  } else if (failed_ || best < 0) {
    record_.state = "FAILED";
    record_.cause = failed_ ? study_stop_ : "no trial reported " + record_.metrics[0].id;
  } else {
    record_.state = "SUCCEEDED";
  }
  record_.end_time = wallClockNow();
  save();
  std::printf("\n%s", trialsTable(record_).c_str());
  std::printf("tuning job %s %s%s; trials in %s (trials.json)\n", record_.tuning_job_id.c_str(),
              record_.state.c_str(), record_.cause.empty() ? "" : (": " + record_.cause).c_str(),
              dir_.c_str());
  std::fflush(stdout);
  drawPlot(dir_, options_.plot_tool);
  if (cancel_signal_ != 0) return 128 + cancel_signal_;
  return record_.state == "SUCCEEDED" ? 0 : 1;
}

int TuningJob::run(const std::string& spec_text) {
  std::string error;
  if (!prepare(spec_text, &error)) {
    std::fprintf(stderr, "reducectl: %s\n", error.c_str());
    return 1;
  }
  record_.state = "RUNNING";
  start_epoch_ = epochNow();
  last_progress_epoch_ = start_epoch_;
  signal_fd_ = blockJobSignals(&old_mask_, &error);
  if (signal_fd_ < 0) {
    std::fprintf(stderr, "reducectl: %s\n", error.c_str());
    return 1;
  }
  note("started; trials in " + dir_);
  save();
  loop();
  int code = finish();
  unblockJobSignals(&signal_fd_, old_mask_);
  return code;
}

}  // namespace

int runTuningJob(const TuningSpec& spec, const std::string& spec_text, const TuneOptions& options) {
  TuningJob job(spec, options);
  return job.run(spec_text);
}

}  // namespace rd::orch::tune
