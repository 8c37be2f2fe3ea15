#!/usr/bin/env bash
# make deps: Debian packages, a virtualenv with ackwise and its Python dependencies, and bmv2 and
# p4c: a user's own on PATH, or the pinned ones built from source once per machine
# (tools/toolchain.sh). Idempotent; the last lines say which toolchain ackwise uses and how its
# simple_switch was built.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
DEBIAN_PACKAGES=(
  python3 python3-venv python3-dev build-essential pkg-config
  iproute2 iptables ethtool procps psmisc
  mininet bridge-utils iputils-ping iperf3 tcpdump
  libnetfilter-queue-dev
  valgrind   # make bench: instructions per packet (callgrind)
)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# ---- Debian packages ----
if command -v apt-get >/dev/null 2>&1; then
  missing=()
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
      --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "deps: Debian packages present"
  fi
else
  echo "deps: no apt-get here; install the equivalents of: ${DEBIAN_PACKAGES[*]}"
fi

# ---- Python ----
# The system interpreter, because Debian's Mininet is installed for it; --system-site-packages
# lets the virtualenv import Mininet.
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import mininet' 2>/dev/null; then
  rm -rf "$VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check -e '.[dev]'
echo "deps: Python packages installed in $VENV"

# ---- bmv2 and p4c ----
# A toolchain already on PATH is used as it is (ACKWISE_TOOLCHAIN=auto); otherwise, or with
# ACKWISE_TOOLCHAIN=pinned, the pinned one is built from source once per machine (tools/toolchain.sh;
# tens of minutes the first time, seconds after that).
mode=${ACKWISE_TOOLCHAIN:-auto}
if [ "$mode" = pinned ] || [ -z "$(tools/toolchain.sh user-toolchain)" ]; then
  tools/toolchain.sh build || { echo "deps: the P4 toolchain did not build (above: the step and its log)"; exit 1; }
  tools/toolchain.sh link
fi

# ---- What is there ----
if ! "$VENV/bin/python" -m ackwise.bmv2.toolchain --deps; then
  exit 1
fi
