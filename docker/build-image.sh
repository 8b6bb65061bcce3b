#!/usr/bin/env bash
# Build the project's guest-server desktop image locally, without any container registry:
#   1. base image from `debootstrap --variant=minbase bookworm` + `docker import`
#      (skipped when the base image exists, unless --force),
#   2. docker/Dockerfile on top: Xvfb, openbox, apps, python deps (wheels fetched by the host's
#      pip, installed offline inside) and the guest's part of the computer_env package (what
#      computer_env.desktop.providers.local.bwrap.guest_code allows: no task solutions, oracles,
#      synthesized examples or verifiers).
# Usage: docker/build-image.sh [--force] [--tag TAG] [--base-tag TAG] [--mirror URL]
#        docker/build-image.sh --code-only DIR   (only copy the guest's code into DIR/computer_env)
# Needs: root (debootstrap), a running dockerd (scripts/start-dockerd.sh), the Debian mirror.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/.." && pwd)"
TAG="${HOLO_DESKTOP_IMAGE:-holo-bench/desktop:latest}"
BASE_TAG="holo-bench/debian-base:bookworm"
# The Debian mirror this host's apt already uses (first main archive URI), unless DEBIAN_MIRROR.
host_mirror() {
    { grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
      grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}'; } \
        | grep -v -e security -e snapshot | head -n 1 || true
}
MIRROR="${DEBIAN_MIRROR:-$(host_mirror)}"
[[ -n "${MIRROR}" ]] || { echo "build-image: no Debian mirror in /etc/apt; set DEBIAN_MIRROR" >&2; exit 1; }
FORCE=0
CODE_ONLY=""
PIP="${PIP:-${ROOT}/.venv/bin/pip}"
[[ -x "${PIP}" ]] || PIP="pip3"
PY="${ROOT}/.venv/bin/python"
[[ -x "${PY}" ]] || PY="python3"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --force) FORCE=1 ;;
        --tag) TAG="$2"; shift ;;
        --base-tag) BASE_TAG="$2"; shift ;;
        --mirror) MIRROR="$2"; shift ;;
        --code-only) CODE_ONLY="$2"; shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "build-image: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

say() { echo "build-image: $*" >&2; }
t0=$(date +%s)

# The guest's part of computer_env (the same allow-list as the local sandbox's) into $1.
copy_guest_code() {
    local names
    names=$(cd "${ROOT}" && PYTHONPATH="${ROOT}" "${PY}" -c 'from computer_env.desktop.providers.local.bwrap import guest_code; print("\n".join(guest_code()))') \
        || { say "could not list the guest code (computer_env importable with ${PY}?)"; return 1; }
    [[ -n "${names}" ]] || { say "empty guest code list"; return 1; }
    mkdir -p "$1/computer_env"
    (cd "${ROOT}/computer_env" && tar --exclude='__pycache__' --exclude='*.pyc' -c ${names}) \
        | tar -C "$1/computer_env" -x
}

if [[ -n "${CODE_ONLY}" ]]; then
    copy_guest_code "${CODE_ONLY}"
    exit $?
fi

docker info >/dev/null 2>&1 || { say "no Docker daemon answers; run scripts/start-dockerd.sh"; exit 1; }

WORK="$(mktemp -d /tmp/holo-build.XXXXXX)"
cleanup() { rm -rf "${WORK}"; }
trap cleanup EXIT

# 1. Base image.
if [[ ${FORCE} -eq 0 ]] && docker image inspect "${BASE_TAG}" >/dev/null 2>&1; then
    say "base ${BASE_TAG} exists (use --force to rebuild)"
else
    command -v debootstrap >/dev/null 2>&1 || {
        say "installing debootstrap"; apt-get install -y --no-install-recommends debootstrap >/dev/null; }
    say "debootstrap minbase bookworm from ${MIRROR}"
    tb=$(date +%s)
    debootstrap --variant=minbase bookworm "${WORK}/rootfs" "${MIRROR}" >"${WORK}/debootstrap.log" 2>&1 \
        || { tail -n 30 "${WORK}/debootstrap.log" >&2; exit 1; }
    # Keep apt lean inside the image.
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
        >"${WORK}/rootfs/etc/apt/apt.conf.d/90holo-no-recommends"
    rm -rf "${WORK}/rootfs/var/cache/apt/archives/"*.deb "${WORK}/rootfs/var/lib/apt/lists/"*
    tar -C "${WORK}/rootfs" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' - "${BASE_TAG}" >/dev/null
    rm -rf "${WORK}/rootfs"
    say "base ${BASE_TAG} imported in $(( $(date +%s) - tb ))s"
fi

# 2. Build context: Dockerfile, entrypoint, CA bundle, wheels, computer_env (no caches).
CTX="${WORK}/ctx"
mkdir -p "${CTX}/wheels"
cp "${HERE}/Dockerfile" "${HERE}/entrypoint.sh" "${HERE}/requirements.txt" "${CTX}/"
cp /etc/ssl/certs/ca-certificates.crt "${CTX}/ca-certificates.crt"
WHEEL_CACHE="${HOLO_WHEEL_CACHE:-${HOME}/.cache/holo-bench/wheels}"
mkdir -p "${WHEEL_CACHE}"
say "building wheels with ${PIP} (cache ${WHEEL_CACHE})"
# `pip wheel` (not download): some deps (pyautogui & co.) ship only sdists. The host and the image
# are both Debian bookworm / CPython 3.11, so the host-built wheels fit.
"${PIP}" wheel --quiet --wheel-dir "${WHEEL_CACHE}" -r "${HERE}/requirements.txt" 2>"${WORK}/pip.log" \
    || { tail -n 20 "${WORK}/pip.log" >&2; say "pip wheel failed (no package index reachable?)"; exit 1; }
cp "${WHEEL_CACHE}"/* "${CTX}/wheels/"
copy_guest_code "${CTX}"

say "docker build ${TAG}"
tb=$(date +%s)
build_args=(--build-arg "BASE_IMAGE=${BASE_TAG}" --network host -t "${TAG}")
[[ ${FORCE} -eq 1 ]] && build_args+=(--no-cache)
DOCKER_BUILDKIT=0 docker build "${build_args[@]}" "${CTX}" >"${WORK}/build.log" 2>&1 \
    || { tail -n 40 "${WORK}/build.log" >&2; exit 1; }
size=$(docker image inspect "${TAG}" --format '{{.Size}}')
say "built ${TAG} in $(( $(date +%s) - tb ))s (total $(( $(date +%s) - t0 ))s), size $(( size / 1024 / 1024 )) MiB"
