#!/usr/bin/env bash
# Make sure Graphviz's `dot` program exists (the pip package `graphviz` is only its bindings).
set -euo pipefail
command -v dot >/dev/null 2>&1 && exit 0

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
  if [ "$sudo" != none ]; then
    echo "Graphviz's dot is missing: installing Debian's graphviz with apt-get"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq graphviz >/dev/null
    command -v dot >/dev/null 2>&1 && exit 0
  fi
fi

cat >&2 <<'MSG'
Graphviz's `dot` program is missing and could not be installed automatically.
Install it with one of these, then run make again:
    sudo apt-get install graphviz          # Debian / Ubuntu
    brew install graphviz                  # macOS
    conda install -c conda-forge graphviz  # conda
MSG
exit 1
