#!/usr/bin/env bash
# Prepares what a GPU machine that cannot download anything needs to build and check FAST there
# (docs/gpu.md): downloads (does not install) the Debian 12 packages of FAST's build dependencies
# that such a machine lacks, and copies the Fashion-MNIST files, into .gpu/ at the repository root
# (ignored by git: add `/.gpu/` to .git/info/exclude). Run it on a Debian 12 machine that reaches
# Debian's archive; carry .gpu/ with the tree; bench/gpu/check.sh unpacks it there.
# usage: bench/gpu/fetch-deps.sh        (FAST_DATA_DIR: the Fashion-MNIST folder, default Debian's)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEST=$ROOT/.gpu
DATA=${FAST_DATA_DIR:-/usr/share/datasets/fashion-mnist}
# Headers and libraries FAST links (fmt, JSON, TOML, CLI11, libzip, zlib, GoogleTest; ZeroMQ for two
# processes on one GPU, with the shared libraries libzmq5 loads), and pkg-config.
PACKAGES=(libfmt-dev libfmt9 nlohmann-json3-dev libtomlplusplus-dev libtomlplusplus3 libcli11-dev libzip-dev libzip4 zlib1g-dev
          libgtest-dev googletest libzmq3-dev libzmq5 cppzmq-dev libsodium23 libpgm-5.3-0 libnorm1 libbsd0
          libmd0 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1
          pkgconf pkgconf-bin libpkgconf3)
mkdir -p "$DEST/debs" "$DEST/fashion-mnist"
(cd "$DEST/debs" && rm -f ./*.deb && apt-get download "${PACKAGES[@]}")
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [[ -f $DATA/$f ]] || { echo "fetch-deps: $DATA/$f not found (set FAST_DATA_DIR)" >&2; exit 1; }
  cp "$DATA/$f" "$DEST/fashion-mnist/"
done
grep -qx '/.gpu/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >> "$ROOT/.git/info/exclude"
du -sh "$DEST"
