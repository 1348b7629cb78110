// SPDX-License-Identifier: BSD-3-Clause
// Reading the transports back from what ucp_ep_print_info writes (UCX 1.13's layout). Real
// endpoints are read in the doctor's tests (tests/orchestrator) and the reducer's metrics tests.
#include "transport/ucx/ucx_ep_info.h"

#include <gtest/gtest.h>

#include <string>

namespace rd::transport {
namespace {

TEST(UcxEpInfo, DataLanesInOrderWithoutRepeatsOrWireupOnlyLanes) {
  const std::string printed =
      "#\n# UCP endpoint \n#\n#               peer: <no debug data>\n"
      "#                 lane[0]:  0:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] "
      "rma_bw#0 am am_bw#0\n"
      "#                 lane[1]:  1:tcp/eth0.0 md[0]              -> md[0]/tcp/sysdev[255] "
      "wireup\n"
      "#                 lane[2]:  2:tcp/lo.1 md[0]                -> md[0]/tcp/sysdev[255] "
      "am_bw#1\n"
      "#\n#                tag_send: 0..<egr/short>..8185..<egr/bcopy>..8192..<rndv>..(inf)\n";
  EXPECT_EQ(transportsFromEpInfo(printed), "tcp/lo");
}

TEST(UcxEpInfo, SharedMemoryAndRdmaLanesAreJoined) {
  const std::string printed =
      "#                 lane[0]:  1:posix/memory.0 md[1]          -> md[1]/posix/sysdev[255] am "
      "am_bw#0\n"
      "#                 lane[1]:  8:cma/memory.0 md[5]            -> md[5]/cma/sysdev[255] "
      "rma_bw#0 wireup\n"
      "#                 lane[2]: 12:rc_mlx5/mlx5_0:1.0 md[6]      -> md[6]/ib/sysdev[1] "
      "rma_bw#1\n";
  EXPECT_EQ(transportsFromEpInfo(printed), "posix/memory+cma/memory+rc_mlx5/mlx5_0:1");
}

TEST(UcxEpInfo, NothingReadableGivesNothing) {
  EXPECT_EQ(transportsFromEpInfo(""), "");
  EXPECT_EQ(transportsFromEpInfo("#  lane[0]: garbage\n#  lane[1]:\n lane[2]:  3:tcp\n"), "");
  EXPECT_EQ(transportsFromEpInfo("#  lane[0]:  0:tcp/lo.0 md[0] -> md[0]/tcp/sysdev[255] wireup\n"),
            "");
}

}  // namespace
}  // namespace rd::transport
