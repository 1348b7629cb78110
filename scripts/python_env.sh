# SPDX-License-Identifier: BSD-3-Clause
# The project's Python environments (sourced by scripts/setup.sh, test.sh and the tools that
# run Python with torch). Each is a virtual environment outside the clone, so that every clone
# and every CI run on this machine shares it: it is created once from a pinned requirements
# file and installed again only when that file changes (a fresh machine pays the torch download
# once, about 5 GB).
#
#   LIBREDUCE_VENV            the main one: the newest torch and what the tests use
#                             (python/requirements/dev.txt)
#   LIBREDUCE_VENV_TORCH2_11  torch 2.11, what the GPU machines run: the backend is built and
#                             tested against it too (python/requirements/torch-2.11.txt)
#
# Both can be set beforehand to put the environments elsewhere.

: "${LIBREDUCE_VENV:=${XDG_CACHE_HOME:-$HOME/.cache}/libreduce/venv}"
: "${LIBREDUCE_VENV_TORCH2_11:=${XDG_CACHE_HOME:-$HOME/.cache}/libreduce/venv-torch2.11}"
export LIBREDUCE_VENV LIBREDUCE_VENV_TORCH2_11

# venv_python DIR: the interpreter of the environment in DIR.
venv_python() { echo "$1/bin/python"; }

# venv_ensure DIR REQUIREMENTS: creates the environment in DIR from Debian's python3 (with its
# venv module) unless it exists, and installs REQUIREMENTS into it unless exactly that file was
# installed last (its hash is kept in DIR). Prints one line of what it did.
venv_ensure() {
  local dir=$1 requirements=$2 stamp want
  stamp="$dir/.libreduce-requirements.sha256"
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [[ -x $dir/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
    echo "setup: $dir holds $requirements"
    return 0
  fi
  if [[ ! -x $dir/bin/python ]]; then
    mkdir -p "$(dirname "$dir")"
    /usr/bin/python3 -m venv "$dir"
  fi
  echo "setup: installing $requirements into $dir"
  local start=$SECONDS
  # --no-input: never wait on a prompt; the log says which package failed.
  # --use-pep517: cloudml-hypertune is an sdist; it is built as a wheel, as pip will require.
  "$dir/bin/python" -m pip install --no-input --disable-pip-version-check --use-pep517 -q \
    -r "$requirements"
  echo "$want" >"$stamp"
  echo "setup: $dir ready in $((SECONDS - start)) s"
}
