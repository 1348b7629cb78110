// SPDX-License-Identifier: BSD-3-Clause
// Fills any version of ncclNetProperties from the version-neutral v8 fields, and the
// virtual-device call of v9 and later (one device: nothing to merge).
#pragma once

#include "nccl_plugin/nccl_net_abi.h"

namespace rd::nccl {

/** Largest transfer NCCL may hand over at once (fits the int sizes test() reports). */
constexpr size_t kMaxTransferBytes = size_t{1} << 30;

/** @p fill is net::fillProperties or collnet::fillProperties. */
template <typename Props>
ncclResult_t fillVersioned(ncclResult_t (*fill)(int, ncclNetProperties_v8_t*), int dev,
                           Props* props) {
  if (props == nullptr) return ncclInvalidArgument;
  ncclNetProperties_v8_t base{};
  ncclResult_t res = fill(dev, &base);
  if (res != ncclSuccess) return res;
  *props = Props{};
  props->name = base.name;
  props->pciPath = base.pciPath;
  props->guid = base.guid;
  props->ptrSupport = base.ptrSupport;
  props->regIsGlobal = base.regIsGlobal;
  props->forceFlush = 0;
  props->speed = base.speed;
  props->port = base.port;
  props->latency = base.latency;
  props->maxComms = base.maxComms;
  props->maxRecvs = base.maxRecvs;
  props->netDeviceType = base.netDeviceType;
  props->netDeviceVersion = base.netDeviceVersion;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = kMaxTransferBytes;
  props->maxCollBytes = kMaxTransferBytes;
  if constexpr (requires { props->maxMultiRequestSize; }) props->maxMultiRequestSize = 1;
  if constexpr (requires { props->railId; }) {
    props->railId = -1;  // NCCL_NET_ID_UNDEF: no rail / plane topology
    props->planeId = -1;
  }
  return ncclSuccess;
}

/** The only virtual device this plugin can make is its one physical device. */
template <typename VProps>
ncclResult_t makeSingleVDevice(int* dev, VProps* props) {
  if (dev == nullptr || props == nullptr) return ncclInvalidArgument;
  if (props->ndevs != 1 || props->devs[0] != 0) return ncclInvalidUsage;
  *dev = 0;
  return ncclSuccess;
}

}  // namespace rd::nccl
