#!/usr/bin/env bash
# Deploys the current build to the staging hosts.
set -euo pipefail

readonly HOSTS=(stage-1 stage-2)

# Prints a message with a timestamp to stderr.
log() {
    printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2
}

# Copies the build to one host and restarts the service there.
# Fails when the service does not come back.
deploy_host() {
    local host="$1"
    log "deploying to ${host}"
    rsync -az --delete build/ "deploy@${host}:/srv/app/"

    if ! ssh "deploy@${host}" systemctl restart app; then
        log "restart failed on ${host}"
        return 1
    fi
}

main() {
    log "deploying $(git rev-parse --short HEAD)"

    for host in "${HOSTS[@]}"; do
        deploy_host "$host"
    done
}

main "$@"
