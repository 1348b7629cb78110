// SPDX-License-Identifier: BSD-3-Clause
// Which network devices UCX may use: by default only the interface that owns the address a
// transport listens and talks on (and the RDMA ports of that same NIC), so "listen on
// 127.0.0.1" leaves nothing listening elsewhere. UCX_NET_DEVICES, when the user sets it, wins.
#pragma once

#include <string>

namespace rd::transport {

/**
 * The UCX_NET_DEVICES value for a transport on @p local_host ("lo", "eth0,mlx5_0:1"), or ""
 * for no restriction: an empty or wildcard host, one that is not an address of this machine,
 * or UCX_NET_DEVICES set in the environment.
 */
std::string netDevicesFor(const std::string& local_host);

}  // namespace rd::transport
