#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpora of protocol_fuzz (corpus/) and bootstrap_fuzz (corpus_bootstrap/),
next to this script.

Each seed is a wire header followed by its payload, the input layout protocol_fuzz.cc reads.
The kData seeds are valid frames for the fixed CommShape in protocol_fuzz.cc (keep the two in
step), so fuzzing starts from frames that pass every check. Rerun after changing either.
"""
import os
import struct

COMM_ID = 0x5EED0000C0FFEE01
EPOCH = 3
NRANKS = 4
CHUNK_BYTES = 4096  # the frames' chunk size, and the shape's cap

MAGIC = 0x31584452
VERSION = 10  # wire::kVersion
HELLO, JOINED, DATA = 1, 5, 7
ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST = 0, 1, 2, 3
INT8, FLOAT32, BFLOAT16 = 0, 7, 9
SUM = 0
WIDE_SUM = 4  # wire::kFlagWideSum

# wire::Header: magic version type coll dtype op flags rank nranks epoch root chunk_bytes
# comm_id seq count chunk status payload_bytes (72 bytes, little-endian).
HEADER = struct.Struct("<IHBBBBHIIIIIQQQIiQ")
assert HEADER.size == 72


def header(msg_type, rank, payload, coll=0, dtype=0, op=0, root=0, epoch=EPOCH, seq=1, count=0,
           chunk=0, chunk_bytes=0, flags=0):
    return HEADER.pack(MAGIC, VERSION, msg_type, coll, dtype, op, flags, rank, NRANKS, epoch, root,
                       chunk_bytes, COMM_ID, seq, count, chunk, 0, len(payload)) + payload


def data(coll, dtype, esize, count, rank, chunk, root=0, flags=0):
    """A kData frame whose payload has exactly the chunk's length (see wire::chunkSpan)."""
    chunk_elems = CHUNK_BYTES // esize
    per_rank = coll in (REDUCE_SCATTER, ALL_GATHER)
    local = chunk % max(1, -(-count // chunk_elems)) if per_rank else chunk
    start = local * chunk_elems
    elems = max(0, min(chunk_elems, count - start))
    payload = bytes((i * 7) & 0xFF for i in range(elems * esize))
    return header(DATA, rank, payload, coll=coll, dtype=dtype, op=SUM, root=root, count=count,
                  chunk=chunk, chunk_bytes=CHUNK_BYTES, flags=flags)


RS = 1  # rdAlgoReductionServer


def hello(address):
    # wire::HelloBody: chunk_bytes timeout_ms address_len spread algorithm heartbeat_ms reserved
    # nonce[32], then the address text.
    body = (struct.pack("<QIIIIII", CHUNK_BYTES, 30000, len(address), 1, RS, 5000, 0) +
            bytes(range(32)) + address)
    return header(HELLO, 0, body, epoch=0, seq=0)


def joined(addresses):
    body = b"".join(struct.pack("<H", len(a)) + a for a in addresses)
    return header(JOINED, 0, body)


SEEDS = {
    # Last, partial chunk of a 2500-element float32 all-reduce: 452 elements.
    "data_allreduce": data(ALL_REDUCE, FLOAT32, 4, 2500, rank=1, chunk=2),
    # Rank 3's second chunk of a 1500-per-rank all-gather: 476 elements.
    "data_allgather": data(ALL_GATHER, FLOAT32, 4, 1500, rank=3, chunk=7),
    "data_broadcast": data(BROADCAST, INT8, 1, 100, rank=2, chunk=0, root=2),
    # float32 compressed to bfloat16: the last chunk of a 5000-element all-reduce, 904 elements.
    "data_allreduce_bf16": data(ALL_REDUCE, BFLOAT16, 2, 5000, rank=0, chunk=2, flags=WIDE_SUM),
    "hello": hello(b"127.0.0.1:5000"),
    "joined": joined([b"10.0.0.%d:4000" % r for r in range(NRANKS)]),
}

# bootstrap_fuzz: mode byte, piece size byte, then the bytes of that mode (bootstrap_fuzz.cc).
BOOTSTRAP_MAGIC, BOOTSTRAP_VERSION = 0x5342524C, 1
B_HELLO, B_CHALLENGE, B_AUTH, B_WELCOME, B_REFUSED = 1, 2, 3, 4, 5


def bframe(kind, body):
    return struct.pack("<IHHI", BOOTSTRAP_MAGIC, BOOTSTRAP_VERSION, kind, len(body)) + body


TAG_AND_ADDRESS = struct.pack("<Q", 0x1234) + bytes(range(200))
BOOTSTRAP_SEEDS = {
    "listener_hello": bytes([0, 255]) + bframe(B_HELLO, bytes(32)),
    "listener_hello_auth": bytes([0, 7]) + bframe(B_HELLO, bytes(32)) +
                           bframe(B_AUTH, bytes(32) + TAG_AND_ADDRESS),
    "connector_challenge": bytes([1, 255]) + bframe(B_CHALLENGE, bytes(64)),
    "listener_past_proof": bytes([2, 255]) + TAG_AND_ADDRESS,
    "connector_welcome": bytes([3, 255]) + bframe(B_WELCOME, TAG_AND_ADDRESS),
    "connector_refused": bytes([3, 3]) + bframe(B_REFUSED, struct.pack("<I", 1)),
}


def write(directory, seeds):
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), directory)
    os.makedirs(out, exist_ok=True)
    for name, blob in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    write("corpus", SEEDS)
    write("corpus_bootstrap", BOOTSTRAP_SEEDS)
