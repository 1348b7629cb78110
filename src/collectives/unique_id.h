// SPDX-License-Identifier: BSD-3-Clause
// How ranks learn the communicator's facts: the unique id (NCCL style) or the launcher's
// environment. Without reducers, rank 0 runs a small in-process rendezvous (rendezvous.h) and
// the ranks use ring all-reduce.
#pragma once

#include <string>

#include "collectives/communicator.h"
#include "collectives/rendezvous.h"
#include "libreduce/reduce.h"

namespace rd::coll {

/**
 * Fills @p id with a fresh random comm id, the reducer list and the secret. Without reducers it
 * starts the rendezvous (@p rendezvous) in this process, at routableHost(@p reached_from).
 */
rdResult_t makeUniqueId(const std::string& reducers, const std::string& secret,
                        const RendezvousStarter& rendezvous, rdUniqueId* id,
                        const std::string& reached_from = "");

/**
 * makeUniqueId with a comm id the caller chose: ranks that agree on @p comm_id, the reducers and
 * the secret build equal ids on their own (the NCCL plugin derives the comm id from the handle
 * rank 0 published). Ids of communicators alive at once on the same reducers must differ.
 */
rdResult_t makeUniqueIdWithCommId(const std::string& reducers, const std::string& secret,
                                  uint64_t comm_id, const RendezvousStarter& rendezvous,
                                  rdUniqueId* id, const std::string& transport = "ucx",
                                  const std::string& reached_from = "");

/** Reads an id made by makeUniqueId into @p config (reducers, rendezvous, comm id, secret). */
rdResult_t readUniqueId(const rdUniqueId& id, CommConfig* config);

/**
 * Replaces the secret in @p id with a mark that makes every rank take the secret from its own
 * settings, so that the id can travel over channels that are not private. No-op without one.
 */
rdResult_t stripSecret(rdUniqueId* id);

/** Applies the fields of a caller's rdCommConfig_t that are set (NULL = none). */
rdResult_t applyConfig(const rdCommConfig_t* user, CommConfig* config);

/**
 * Rank, size, comm id and rendezvous from LIBREDUCE_* / torchrun variables. Rank 0 starts the
 * rendezvous (@p rendezvous) on MASTER_PORT + 1 for a communicator without reducers, and for
 * one whose id LIBREDUCE_COMM_ID does not give: its id is then drawn there (drawCommId).
 */
rdResult_t configFromLauncherEnv(const RendezvousStarter& rendezvous, CommConfig* config);

/**
 * The communicator id nobody can guess, as NCCL's bootstrap root makes one: every rank joins
 * rank 0's rendezvous (@p config's id_rendezvous) once, which draws a random id and hands the
 * same to each. Replaces @p config's comm id; the join needs the job secret like any other.
 */
rdResult_t drawCommId(CommConfig* config);

}  // namespace rd::coll
