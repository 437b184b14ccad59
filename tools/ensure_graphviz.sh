#!/usr/bin/env bash
# Make sure Graphviz's `dot` program exists (the pip package `graphviz` is only its bindings).
#   tools/ensure_graphviz.sh             install it if possible, else fail (make test: graphs are checked)
#   tools/ensure_graphviz.sh --optional  install it if possible, else warn (make lab: graphs become text)
set -euo pipefail
optional=${1:-}
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

how_to_install='    sudo apt-get install graphviz          # Debian / Ubuntu
    brew install graphviz                  # macOS
    conda install -c conda-forge graphviz  # conda'
if [ "$optional" = --optional ]; then
  printf '%s\n' "WARNING: Graphviz's \`dot\` program is missing, so the notebooks show graphs as text." \
    "Install it with one of these, then restart the kernel to get pictures:" "$how_to_install" >&2
  exit 0
fi
printf '%s\n' "Graphviz's \`dot\` program is missing and could not be installed automatically." \
  "Install it with one of these, then run make again:" "$how_to_install" >&2
exit 1
