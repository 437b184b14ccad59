#!/usr/bin/env bash
# `make gpu-wheels`: save everything the offline GPU run (tools/test_gpu.py) needs beyond the GPU
# image, where packages can be downloaded. Usage: tools/gpu_wheels.sh [DEST]   (default: wheels)
#   DEST/*.whl    requirements/gpu-wheels.txt for CPython $GPU_PYTHON (default 3.12), x86_64 Linux
#   DEST/debs/    Graphviz's dot and the libraries and font it needs (requirements/gpu-debs.txt),
#                 Debian bookworm amd64 packages; tools/unpack_graphviz.sh makes them runnable
# DEST is emptied first: two versions of one package would stop the offline install.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-wheels}
python=${PYTHON:-python3}
version=${GPU_PYTHON:-3.12}
abi=cp${version/./}

rm -rf "$dest"
mkdir -p "$dest/debs"
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$version" --implementation cp --abi "$abi" --abi abi3 --abi none \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d "$dest" -r requirements/gpu-wheels.txt

packages=$(grep -v '^#' requirements/gpu-debs.txt | tr -s ' \n' ' ')
if ! command -v apt-get >/dev/null 2>&1; then
  echo "apt-get is missing: Graphviz not saved; the GPU run then needs dot on the GPU machine" >&2
else
  (cd "$dest/debs" && apt-get download -o APT::Architecture=amd64 $packages 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
fi

wheels=$(ls "$dest"/*.whl | wc -l)
debs=$(ls "$dest"/debs/*.deb 2>/dev/null | wc -l)
echo "saved $wheels wheels and $debs Debian packages in $dest/ ($(du -sh "$dest" | cut -f1)); carry '$dest' to the GPU machine"
[ "$wheels" -eq "$(grep -c '==' requirements/gpu-wheels.txt)" ]
