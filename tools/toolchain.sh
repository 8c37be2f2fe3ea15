#!/usr/bin/env bash
# The pinned P4 toolchain (bmv2 and p4c, versions and flags in tools/toolchain.env), built from
# source into versioned prefixes outside the checkout, reused by every clone on the machine.
#
#   tools/toolchain.sh build [bmv2-fast|bmv2-logging|p4c ...]   build what is missing (default: all)
#   tools/toolchain.sh prefix COMPONENT                         where COMPONENT is (or would be) installed
#   tools/toolchain.sh path                                     bin directories to put first on PATH
#   tools/toolchain.sh link                                     link the pinned tools into /usr/local/bin
#   tools/toolchain.sh user-toolchain                           a bmv2/p4c of the user's own on PATH, if any
#   tools/toolchain.sh status                                   what is built, what PATH has
#
# Variables (README, "The P4 toolchain"):
#   ACKWISE_TOOLCHAIN=auto|pinned   auto (default): a bmv2/p4c already on PATH is used as it is, the
#                                   pinned build otherwise; pinned: build and use the pinned ones anyway
#   ACKWISE_TOOLCHAIN_SOURCE        where the sources come from: a base URL (default
#                                   https://github.com/p4lang) or a local directory holding git
#                                   repositories (bare or not), source trees or tarballs
#   ACKWISE_TOOLCHAIN_ROOT          where the prefixes go (default /opt/ackwise-toolchain)
#   ACKWISE_TOOLCHAIN_JOBS          parallel compile jobs (default: the number of CPUs)
#   ACKWISE_TOOLCHAIN_BIN           where `link` puts its links (default /usr/local/bin)
set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/toolchain.env
. "$HERE/toolchain.env"

ROOT=${ACKWISE_TOOLCHAIN_ROOT:-/opt/ackwise-toolchain}
SOURCE=${ACKWISE_TOOLCHAIN_SOURCE:-https://github.com/p4lang}
MODE=${ACKWISE_TOOLCHAIN:-auto}
JOBS=${ACKWISE_TOOLCHAIN_JOBS:-$(nproc 2>/dev/null || echo 2)}
COMPONENTS=(bmv2-fast bmv2-logging p4c)

die() { echo "toolchain: $*" >&2; exit 1; }

case "$MODE" in auto | pinned) ;; *) die "ACKWISE_TOOLCHAIN=$MODE: use auto or pinned" ;; esac

split_flags() { # "a|b c|d" -> one array element per |-separated field, in FLAGS
  local IFS='|'
  # shellcheck disable=SC2206
  FLAGS=($1)
}

os_release() { (. /etc/os-release 2>/dev/null && echo "${ID:-unknown}-${VERSION_ID:-unknown}") || echo unknown; }

# What defines a build: component, version, ref, flags and the OS release it links against.
definition() {
  case "$1" in
    bmv2-fast) echo "bmv2|$BMV2_VERSION|$BMV2_REF|$BMV2_COMMON_FLAGS|$BMV2_FAST_FLAGS|$(os_release)" ;;
    bmv2-logging) echo "bmv2|$BMV2_VERSION|$BMV2_REF|$BMV2_COMMON_FLAGS|$BMV2_LOGGING_FLAGS|$(os_release)" ;;
    p4c) echo "p4c|$P4C_VERSION|$P4C_REF|$P4RUNTIME_REF|$P4C_CMAKE_FLAGS|$(os_release)" ;;
    *) die "unknown component '$1' (one of: ${COMPONENTS[*]})" ;;
  esac
}

prefix_of() {
  local key version
  key=$(definition "$1" | sha256sum | cut -c1-10)
  case "$1" in
    bmv2-fast) version="bmv2-$BMV2_VERSION-fast" ;;
    bmv2-logging) version="bmv2-$BMV2_VERSION-logging" ;;
    p4c) version="p4c-$P4C_VERSION" ;;
  esac
  echo "$ROOT/$version-$key"
}

built() { [ -f "$(prefix_of "$1")/.ackwise-toolchain" ]; }

# A toolchain the user installed (not links to ours, see cmd_link): both tools on PATH, outside ROOT.
user_tool() {
  local path
  path=$(command -v "$1" 2>/dev/null) || return 1
  case "$(readlink -f "$path")" in "$(readlink -m "$ROOT")"/*) return 1 ;; esac
  echo "$path"
}
on_path() { user_tool simple_switch >/dev/null && user_tool p4c-bm2-ss >/dev/null; }

# ---------------------------------------------------------------- sources

# A git repository itself (bare, or the top of a work tree), not a folder inside another one.
is_git_repo() {
  [ -d "$1" ] || return 1
  [ "$(git -C "$1" rev-parse --is-bare-repository 2>/dev/null)" = true ] && return 0
  [ "$(git -C "$1" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$1" && pwd -P)" ]
}

# Put the tree of repository NAME at REF into DEST, from SOURCE (URL or local directory).
fetch_tree() {
  local name=$1 ref=$2 dest=$3 exclude=${4:-}
  mkdir -p "$dest"
  local pathspec=(-- .)
  [ -n "$exclude" ] && pathspec+=(":!$exclude")
  if [ -d "$SOURCE" ]; then
    local candidate
    for candidate in "$SOURCE/$name" "$SOURCE/$name.git" "$SOURCE/p4lang/$name" "$SOURCE/p4lang/$name.git" \
      "$SOURCE"/*"$name"* "$SOURCE"/*"$name"*/*; do
      [ -e "$candidate" ] || continue
      if is_git_repo "$candidate"; then
        if git -C "$candidate" cat-file -e "$ref^{commit}" 2>/dev/null; then
          echo "  $name $ref from git repository $candidate"
          # A snapshot may lack large blobs (p4c's docs/compiler-design.pptx): EXCLUDE skips them.
          git -C "$candidate" archive --format=tar "$ref" "${pathspec[@]}" 2>/dev/null | tar -x -C "$dest"
          return 0
        fi
      elif [ -f "$candidate" ] && [[ "$candidate" =~ \.(tar\.gz|tgz|tar\.xz|tar\.bz2|tar)$ ]] &&
        [[ "$(basename "$candidate")" == *"${ref#v}"* ]]; then
        echo "  $name $ref from tarball $candidate"
        tar -x -C "$dest" --strip-components=1 -f "$candidate"
        return 0
      elif [ -d "$candidate" ] && [ "$(basename "$candidate")" = "$name-${ref#v}" ]; then
        echo "  $name $ref from source tree $candidate"
        cp -a "$candidate/." "$dest/"
        return 0
      fi
    done
    die "no $name at $ref under $SOURCE: expected a git repository ($name or $name.git) holding $ref, a tarball $name-${ref#v}.tar.gz or a tree $name-${ref#v}/"
  fi
  # A URL: a shallow fetch of just that ref into a cache repository, reused next time.
  local cache="$ROOT/.src/$name.git" url="${SOURCE%/}/$name.git"
  [ -d "$cache" ] || git init -q --bare "$cache"
  if ! git -C "$cache" cat-file -e "$ref^{commit}" 2>/dev/null; then
    echo "  fetching $name $ref from $url"
    if [[ "$ref" =~ ^[0-9a-f]{40}$ ]]; then
      git -C "$cache" fetch -q --depth 1 "$url" "$ref" || die "cannot fetch $ref from $url"
    else
      git -C "$cache" fetch -q --depth 1 "$url" "refs/tags/$ref:refs/tags/$ref" ||
        die "cannot fetch tag $ref from $url (set ACKWISE_TOOLCHAIN_SOURCE to a mirror)"
    fi
  fi
  git -C "$cache" archive --format=tar "$ref" "${pathspec[@]}" 2>/dev/null | tar -x -C "$dest"
}

# ---------------------------------------------------------------- building

STEP=""
LOG=""
STAGE=""
HEARTBEAT=""

cleanup() {
  [ -n "$HEARTBEAT" ] && kill "$HEARTBEAT" 2>/dev/null
  [ -n "$STAGE" ] && rm -rf "$STAGE"
  return 0
}

on_error() {
  local status=$?
  cleanup
  echo "toolchain: FAILED at step '$STEP' (exit $status); nothing was installed. Log: $LOG" >&2
  [ -n "$LOG" ] && [ -f "$LOG" ] && tail -n 25 "$LOG" | sed 's/^/  | /' >&2
  exit "$status"
}

# Run a build step with its output in the log and a line every minute saying how far it is.
step() {
  STEP=$1
  shift
  local started=$SECONDS
  echo "  [$(date +%H:%M:%S)] $STEP"
  echo "==== $STEP: $*" >>"$LOG"
  (
    while sleep 60; do
      local progress
      progress=$(grep -aoE '^\[ *[0-9]+%\]' "$LOG" 2>/dev/null | tail -n 1 || true)
      echo "      ... $STEP, $(((SECONDS - started) / 60)) min${progress:+, $progress}"
    done
  ) 9>&- &
  HEARTBEAT=$!
  "$@" >>"$LOG" 2>&1
  kill "$HEARTBEAT" 2>/dev/null || true
  wait "$HEARTBEAT" 2>/dev/null || true
  HEARTBEAT=""
}

install_build_packages() {
  local packages=$1 missing=() pkg
  command -v dpkg-query >/dev/null 2>&1 || return 0
  for pkg in $packages; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "  installing build packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

build_bmv2() { # component prefix workdir
  local component=$1 prefix=$2 work=$3 variant_flags
  [ "$component" = bmv2-fast ] && variant_flags=$BMV2_FAST_FLAGS || variant_flags=$BMV2_LOGGING_FLAGS
  split_flags "$BMV2_COMMON_FLAGS|$variant_flags"
  local flags=("${FLAGS[@]}")
  install_build_packages "$BMV2_BUILD_PACKAGES"
  STEP="fetch behavioral-model $BMV2_REF"
  fetch_tree behavioral-model "$BMV2_REF" "$work/src"
  cd "$work/src"
  step "bmv2 autogen" ./autogen.sh
  # Debian's python3 (the one ackwise's virtualenv is made from) decides where the bindings go.
  step "bmv2 configure (${flags[*]})" ./configure --prefix="$prefix" PYTHON=/usr/bin/python3 "${flags[@]}"
  step "bmv2 compile (-j$JOBS; about 10-15 minutes on 2 cores)" make -j"$JOBS"
  step "bmv2 install into the staging directory" make install DESTDIR="$STAGE"
}

build_p4c() { # prefix workdir
  local prefix=$1 work=$2
  split_flags "$P4C_CMAKE_FLAGS"
  local flags=("${FLAGS[@]}")
  install_build_packages "$P4C_BUILD_PACKAGES"
  STEP="fetch p4c $P4C_REF"
  # The public snapshot of p4c can lack this large file; the build does not need it.
  fetch_tree p4c "$P4C_REF" "$work/p4c" docs/compiler-design.pptx
  STEP="fetch p4runtime $P4RUNTIME_REF"
  fetch_tree p4runtime "$P4RUNTIME_REF" "$work/p4runtime"
  step "p4c configure" cmake -S "$work/p4c" -B "$work/p4c/build" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$work/p4runtime" "${flags[@]}"
  step "p4c compile p4c-bm2-ss (-j$JOBS; about 20-30 minutes on 2 cores)" \
    make -C "$work/p4c/build" -j"$JOBS" p4c-bm2-ss
  step "p4c install into the staging directory" make -C "$work/p4c/build" install DESTDIR="$STAGE"
}

build_one() {
  local component=$1 prefix
  prefix=$(prefix_of "$component")
  if built "$component"; then
    echo "toolchain: $component present in $prefix"
    return 0
  fi
  mkdir -p "$ROOT/logs"
  LOG="$ROOT/logs/$component-$(date +%Y%m%d-%H%M%S).log"
  local work
  work=$(mktemp -d "$ROOT/.work-$component.XXXXXX")
  STAGE="$work/stage"
  echo "toolchain: building $component into $prefix"
  echo "  this takes tens of minutes; log: $LOG"
  local started=$SECONDS
  trap on_error ERR
  case "$component" in
    bmv2-*) build_bmv2 "$component" "$prefix" "$work" ;;
    p4c) build_p4c "$prefix" "$work" ;;
  esac
  STEP="move the staged install into $prefix"
  [ -d "$STAGE$prefix" ] || false
  definition "$component" | tr '|' '\n' >"$STAGE$prefix/.ackwise-toolchain"
  rm -rf "$prefix"
  mv "$STAGE$prefix" "$prefix"
  trap - ERR
  cd "$ROOT"
  rm -rf "$work"
  STAGE=""
  echo "toolchain: $component built in $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s: $prefix"
}

cmd_build() {
  local wanted=("$@")
  [ ${#wanted[@]} -gt 0 ] || wanted=("${COMPONENTS[@]}")
  mkdir -p "$ROOT" || die "cannot create $ROOT: run as root or set ACKWISE_TOOLCHAIN_ROOT"
  exec 9>"$ROOT/.lock"
  flock -n 9 || { echo "toolchain: another build holds $ROOT/.lock; waiting for it"; flock 9; }
  trap cleanup EXIT
  local component
  for component in "${wanted[@]}"; do
    definition "$component" >/dev/null
    build_one "$component"
  done
}

cmd_path() {
  # auto: a toolchain already on PATH wins; pinned (or nothing on PATH): the pinned prefixes.
  if [ "$MODE" = auto ] && on_path; then
    return 0
  fi
  local dirs=() component
  for component in p4c bmv2-fast; do
    built "$component" && dirs+=("$(prefix_of "$component")/bin")
  done
  local IFS=:
  echo "${dirs[*]}"
}

# Links to the pinned tools in BIN_DIR, so that a shell finds simple_switch, simple_switch_CLI and
# p4c-bm2-ss by name. Only where nothing is, or a link to an older pinned build: never over a
# user's own install. ackwise itself does not need them (it finds the prefixes).
cmd_link() {
  local bin_dir=${ACKWISE_TOOLCHAIN_BIN:-/usr/local/bin} tool component target link
  for tool in simple_switch:bmv2-fast simple_switch_CLI:bmv2-fast p4c-bm2-ss:p4c; do
    component=${tool#*:}
    tool=${tool%%:*}
    target="$(prefix_of "$component")/bin/$tool"
    link="$bin_dir/$tool"
    [ -x "$target" ] || continue
    if [ -e "$link" ] || [ -L "$link" ]; then
      case "$(readlink -m "$link")" in
        "$(readlink -m "$ROOT")"/*) ;;
        *)
          echo "toolchain: $link is not ours; left as it is (ACKWISE_TOOLCHAIN=pinned makes ackwise use the pinned build)"
          continue
          ;;
      esac
    fi
    mkdir -p "$bin_dir" && ln -sfn "$target" "$link" || echo "toolchain: could not link $link (not root?)"
  done
}

cmd_status() {
  local component
  for component in "${COMPONENTS[@]}"; do
    if built "$component"; then
      echo "  $component: $(prefix_of "$component")"
    else
      echo "  $component: not built ($(prefix_of "$component"))"
    fi
  done
  if on_path; then
    echo "  your own on PATH: $(user_tool simple_switch), $(user_tool p4c-bm2-ss) (ACKWISE_TOOLCHAIN=$MODE)"
  fi
}

command=${1:-status}
shift || true
case "$command" in
  build) cmd_build "$@" ;;
  prefix)
    [ $# -eq 1 ] || die "usage: $0 prefix COMPONENT"
    prefix_of "$1"
    ;;
  path) cmd_path ;;
  link) cmd_link ;;
  user-toolchain) if on_path; then user_tool simple_switch; user_tool p4c-bm2-ss; fi ;;
  status) cmd_status ;;
  *) die "unknown command '$command' (build, prefix, path, link, user-toolchain, status)" ;;
esac
