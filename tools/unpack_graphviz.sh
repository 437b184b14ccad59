#!/usr/bin/env bash
# Make Graphviz's `dot` runnable from the Debian packages that `make gpu-wheels` saved, on a machine
# without it and without network: unpack them into PREFIX, keep the plugins the suite uses (SVG and
# PNG output, the dot layout), write PREFIX/bin/dot (a wrapper that points dot at its own libraries,
# plugins and fonts) and register the plugins. Usage: tools/unpack_graphviz.sh DEB_FOLDER PREFIX
set -euo pipefail
debs=${1:?usage: tools/unpack_graphviz.sh DEB_FOLDER PREFIX}
prefix=${2:?usage: tools/unpack_graphviz.sh DEB_FOLDER PREFIX}
arch_dir=usr/lib/x86_64-linux-gnu

shopt -s nullglob
packages=("$debs"/*.deb)
if [ ${#packages[@]} -eq 0 ]; then
  echo "no .deb files in $debs: run 'make gpu-wheels' where packages can be downloaded" >&2
  exit 1
fi
command -v dpkg-deb >/dev/null || { echo "dpkg-deb is missing: cannot unpack $debs" >&2; exit 1; }

mkdir -p "$prefix/bin" "$prefix/etc/fonts" "$prefix/var/cache/fontconfig"
prefix=$(cd "$prefix" && pwd)
for package in "${packages[@]}"; do dpkg-deb -x "$package" "$prefix"; done

# The other plugins need libraries that were not saved (libgd, libwebp, X11 tools, libgts).
plugins="$prefix/$arch_dir/graphviz"
for plugin in "$plugins"/libgvplugin_*; do
  case $(basename "$plugin") in
    libgvplugin_core.* | libgvplugin_dot_layout.* | libgvplugin_pango.*) ;;
    *) rm -f "$plugin" ;;
  esac
done

cat > "$prefix/etc/fonts/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <dir>$prefix/usr/share/fonts</dir>
  <cachedir>$prefix/var/cache/fontconfig</cachedir>
</fontconfig>
EOF

cat > "$prefix/bin/dot" <<EOF
#!/bin/sh
# Graphviz unpacked by tools/unpack_graphviz.sh: its own libraries, plugins and fonts.
LD_LIBRARY_PATH="$prefix/$arch_dir:$prefix/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
GVBINDIR="$plugins" FONTCONFIG_FILE="$prefix/etc/fonts/fonts.conf" \\
exec "$prefix/usr/bin/dot" "\$@"
EOF
chmod +x "$prefix/bin/dot"

"$prefix/bin/dot" -c
echo 'digraph { a -> b }' | "$prefix/bin/dot" -Tsvg | grep -q '</svg>'
echo 'digraph { a -> b }' | "$prefix/bin/dot" -Tpng | head -c 8 | grep -q PNG
echo "Graphviz ready: $prefix/bin/dot ($("$prefix/bin/dot" -V 2>&1))"
