// SPDX-License-Identifier: BSD-3-Clause
// reducectl's commands on a job that another reducectl follows: run --detach (start it in the
// background and return its id), status and cancel (by id or directory, either backend).
#pragma once

#include <functional>
#include <string>

#include "orchestrator/local_backend.h"

namespace rd::orch {

/**
 * Starts @p run_job in a background reducectl (its own session, output to
 * OUTPUT_DIR/reducectl/reducectl.log) and returns once the job has started (local: its replicas
 * launched; Slurm: submitted): prints the job's id and how to follow it. @p run_job gets the
 * notify descriptor to put in RunOptions. Returns reducectl's exit status: 0 started, 1 not.
 */
int runDetached(const std::string& job_id, const std::string& output_dir,
                const std::function<JobResult(int notify_fd)>& run_job);

/**
 * The job's side of runDetached: writes @p line (the job's id, and Slurm's) to *@p fd to say the
 * job started, or nothing when @p line is empty (it will not start), and closes it (-1 after).
 * Nothing when *@p fd is -1.
 */
void tellDetachedWaiter(int* fd, const std::string& line);

/** `reducectl status JOB`: prints the job's state; 0, or 2 for an unknown job. */
int showJobStatus(const std::string& id_or_dir);

/**
 * `reducectl cancel JOB`: asks the reducectl following the job to cancel it (SIGTERM) and waits
 * up to @p wait_s for its end; a Slurm job whose reducectl is gone is cancelled with scancel.
 * 0 when the job has ended (or had), 1 when it did not end in time, 2 for an unknown job.
 */
int cancelJob(const std::string& id_or_dir, int wait_s);

}  // namespace rd::orch
