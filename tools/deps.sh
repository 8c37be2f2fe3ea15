#!/usr/bin/env bash
# make deps: Debian packages, then a virtualenv with ackwise and its Python dependencies.
# Idempotent. bmv2 and p4c are not Debian packages: on Ubuntu this tries p4lang's own repository
# and carries on without them if it cannot reach it; the last lines say what is present.
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

# ---- bmv2 and p4c from p4lang's repository (Ubuntu only; fails soft) ----
if ! command -v simple_switch >/dev/null || ! command -v p4c-bm2-ss >/dev/null; then
  . /etc/os-release 2>/dev/null || true
  if [ "${ID:-}" = "ubuntu" ]; then
    repo="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
    if curl -fsSL --max-time 20 "$repo/Release.key" 2>/dev/null | gpg --dearmor 2>/dev/null \
        | as_root tee /etc/apt/trusted.gpg.d/home_p4lang.gpg >/dev/null; then
      echo "deb $repo/ /" | as_root tee /etc/apt/sources.list.d/home:p4lang.list >/dev/null
      as_root apt-get update -qq || true
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq p4lang-bmv2 p4lang-p4c >/dev/null \
        || echo "deps: p4lang packages not installable from $repo"
    else
      echo "deps: p4lang's package repository is not reachable ($repo)"
    fi
  fi
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

# ---- What is there ----
status=0
for tool in simple_switch simple_switch_CLI p4c-bm2-ss; do
  if command -v "$tool" >/dev/null; then
    echo "deps: $tool: $(command -v "$tool")"
  else
    echo "deps: $tool: MISSING"
    status=1
  fi
done
if "$VENV/bin/python" -c 'from ackwise.bmv2.toolchain import ensure_bmv2_bindings as e; e(); import bm_runtime, sswitch_runtime; print("deps: bmv2 Python bindings:", bm_runtime.__path__[0].rsplit("/", 1)[0])' 2>/dev/null; then
  :
else
  echo "deps: bmv2 Python bindings (bm_runtime, sswitch_runtime): MISSING"
  status=1
fi
if [ $status -ne 0 ]; then
  cat <<'MSG'
deps: bmv2 and/or p4c are missing. They are not on PyPI or in Debian:
  Ubuntu: p4lang's packages (p4lang-bmv2, p4lang-p4c) from download.opensuse.org/repositories/home:/p4lang
  Elsewhere: build https://github.com/p4lang/behavioral-model (with Thrift) and
  https://github.com/p4lang/p4c (bmv2 backend) from source, following their READMEs.
MSG
fi
exit 0
