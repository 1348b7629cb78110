// SPDX-License-Identifier: BSD-3-Clause
// Which address of this host other hosts reach it at: what a rank listens on for its ring
// neighbours, and where rank 0's rendezvous listens when a communicator has no reducers.
#pragma once

#include <string>

namespace rd::coll {

/** The local IPv4 address the kernel would use to reach @p address ("host:port"). */
std::string localAddressToward(const std::string& address);

/**
 * The address this host is reached at by the other ranks, first of:
 * LIBREDUCE_LISTEN_HOST; the local address toward @p peer (a host the other ranks reach too,
 * e.g. their shared store) and then toward MASTER_ADDR (a loopback one only where the peer is
 * written as loopback, which means one host: a name that resolves to loopback here is this host's
 * own name in Debian's and Ubuntu's /etc/hosts); the address the host name resolves to, unless
 * loopback; the address of the interface that holds the default route; the first other interface
 * that is up. 127.0.0.1 only when there is none, with a warning: ranks on other hosts cannot
 * reach it.
 */
std::string routableHost(const std::string& peer = "");

}  // namespace rd::coll
