# SPDX-License-Identifier: BSD-3-Clause
"""The commands a `pip install .` puts on the environment's PATH: each runs the program of the
same name installed inside the package (libreduce/bin), which finds its library and its sibling
programs relative to itself (reducectl starts the reduce-server beside it)."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _run(name):
    program = os.path.join(_BIN, name)
    if not os.access(program, os.X_OK):
        sys.exit("libreduce: %s is not installed in this package (%s); the package was not "
                 "installed by `pip install .`" % (name, program))
    os.execv(program, [name] + sys.argv[1:])


def reduce_server():
    _run("reduce-server")


def reducectl():
    _run("reducectl")


def reduce_info():
    _run("reduce-info")
