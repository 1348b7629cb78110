// SPDX-License-Identifier: BSD-3-Clause
// The ring rendezvous as the reducer serves it (collectives/rendezvous.h): a ReductionServer in
// the process that only ever sees joins, one per transport and secret, alive until exit.
#pragma once

#include <string>

#include "collectives/rendezvous.h"

namespace rd::server {

/** A coll::RendezvousStarter. */
rdResult_t startRendezvous(const coll::RendezvousRequest& request, std::string* address);

}  // namespace rd::server
