#!/usr/bin/env bash
# Start a Docker daemon for the docker provider and its tests. Idempotent:
#   - installs docker.io (apt-get) when dockerd is missing,
#   - starts dockerd in the background unless a daemon already answers,
#   - waits for `docker info` (timeout: DOCKERD_TIMEOUT seconds, default 60).
# Honours DOCKER_HOST: when it points at a remote/other daemon that answers, nothing is started.
# Exit status 0 when a daemon answers, 1 otherwise (with the reason on stderr).
set -euo pipefail

TIMEOUT="${DOCKERD_TIMEOUT:-60}"
LOG="${DOCKERD_LOG:-/var/log/holo-bench-dockerd.log}"

say() { echo "start-dockerd: $*" >&2; }

docker_cli() {
    if command -v docker >/dev/null 2>&1; then docker "$@"; else return 127; fi
}

if docker_cli info >/dev/null 2>&1; then
    say "a Docker daemon already answers (${DOCKER_HOST:-unix:///var/run/docker.sock})"
    exit 0
fi

if [[ -n "${DOCKER_HOST:-}" && "${DOCKER_HOST}" != unix:///var/run/docker.sock ]]; then
    say "DOCKER_HOST=${DOCKER_HOST} does not answer; not starting a local daemon for it"
    say "unset DOCKER_HOST to use a local dockerd started by this script"
    exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
    if [[ $(id -u) -ne 0 ]]; then
        say "dockerd is not installed and this is not root: install docker.io (apt-get) first"
        exit 1
    fi
    say "installing docker.io"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends docker.io >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends docker.io >/dev/null; }
fi

if [[ $(id -u) -ne 0 ]]; then
    say "no daemon answers and starting dockerd needs root (or use rootless docker and set DOCKER_HOST)"
    exit 1
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
    say "starting dockerd (log: ${LOG})"
    # setsid: the daemon outlives this script and the shell that ran it, on purpose.
    setsid nohup dockerd >>"${LOG}" 2>&1 </dev/null &
fi

deadline=$(( $(date +%s) + TIMEOUT ))
until docker_cli info >/dev/null 2>&1; do
    if (( $(date +%s) >= deadline )); then
        say "dockerd did not answer 'docker info' within ${TIMEOUT}s; last log lines:"
        tail -n 20 "${LOG}" >&2 || true
        exit 1
    fi
    sleep 0.5
done
say "dockerd ready ($(docker_cli version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
