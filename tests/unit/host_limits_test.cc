// SPDX-License-Identifier: BSD-3-Clause
// The host limits named beside a bare "Out of memory" (common/host_limits.h), and UCX workers
// that take no System V segment (a host-wide count a few hundred ranks used up).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/host_limits.h"
#include "transport/progress_engine.h"
#include "transport/ucx/ucx_worker.h"

namespace rd {
namespace {

TEST(HostLimits, NoneIsNearOnAnIdleProcessAndEveryOneIsAtShareZero) {
  EXPECT_EQ(limits::hostLimitsNear(2.0), "");
  const std::string all = limits::hostLimitsNear(0.0);
  EXPECT_NE(all.find("open files of this process"), std::string::npos) << all;
  EXPECT_NE(all.find("kernel.shmmni"), std::string::npos) << all;
  EXPECT_NE(all.find("vm.max_map_count"), std::string::npos) << all;
}

TEST(HostLimits, OpenFilesNearTheLimitAreNamed) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> fds;
  for (int fd; (fd = open("/dev/null", O_RDONLY)) >= 0;) fds.push_back(fd);  // up to the limit
  // A few left free, as a process that just failed to open one usually has by the time it says
  // why (and the sanitizers' own checks need a pipe): 60 of 64 is still near.
  for (int i = 0; i < 4 && !fds.empty(); ++i) {
    close(fds.back());
    fds.pop_back();
  }
  const std::string near = limits::hostLimitsNear();
  for (int fd : fds) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_NE(near.find("open files of this process: "), std::string::npos) << near;
  EXPECT_NE(near.find(" of 64 (ulimit -n)"), std::string::npos) << near;
}

// Segments whose creator is this process (/proc/sysvipc/shm: key shmid perms size cpid ...).
int systemVSegmentsOfThisProcess() {
  std::ifstream in("/proc/sysvipc/shm");
  std::string line;
  std::getline(in, line);  // the header
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, id, perms, size;
    long cpid = 0;
    fields >> key >> id >> perms >> size >> cpid;
    if (cpid == getpid()) ++n;
  }
  return n;
}

TEST(UcxSharedMemory, WorkersTakeNoSystemVSegment) {
  if (std::getenv("UCX_TLS") != nullptr) GTEST_SKIP() << "UCX_TLS is set: the user's choice";
  auto engine = transport::ProgressEngine::shared();
  std::vector<std::unique_ptr<transport::UcxWorker>> workers(4);
  for (auto& w : workers) ASSERT_EQ(transport::UcxWorker::create(engine.get(), "", &w), rdSuccess);
  EXPECT_EQ(systemVSegmentsOfThisProcess(), 0);
}

}  // namespace
}  // namespace rd
