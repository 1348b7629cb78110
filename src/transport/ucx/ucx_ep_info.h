// SPDX-License-Identifier: BSD-3-Clause
// Which UCX transports and devices an endpoint uses ("tcp/eth0", "posix/memory+cma/memory"),
// for the people who ask why a link is slow. UCX 1.13 has no query for it: ucp_ep_print_info
// prints the endpoint's lanes, and this reads them back. The lanes settle once the endpoint's
// wire-up is done, so the answer is right after the first messages went through.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace rd::transport {

/**
 * The transports and devices of the data lanes (active messages, bulk transfers) in
 * @p printed, what ucp_ep_print_info writes: "TL/DEVICE" for each, in lane order, without
 * repeats, joined by '+'. Lanes that only carry the wire-up are left out. "" when there are none.
 */
std::string transportsFromEpInfo(const std::string& printed);

/** transportsFromEpInfo of @p ep now; call it on the thread that progresses its worker. */
std::string endpointTransports(ucp_ep_h ep);

}  // namespace rd::transport
