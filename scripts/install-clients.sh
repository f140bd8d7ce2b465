#!/usr/bin/env bash
# Make sure the PostgreSQL clients the dpsql serve tests drive are present: psycopg 3 for
# Debian's python3 (python3-psycopg) and pgjdbc with a Java runtime (libpostgresql-jdbc-java,
# openjdk-17-jre-headless). psql comes with scripts/install-postgres.sh.
#
# Idempotent: installs only what is missing, with apt-get. Needs root (or sudo). CI runs it as
# root before the tests (scripts/test). Prints what it did.
set -euo pipefail

log() { printf 'install-clients: %s\n' "$*"; }

missing=()
/usr/bin/python3 -c 'import psycopg' >/dev/null 2>&1 || missing+=(python3-psycopg)
[[ -f /usr/share/java/postgresql.jar ]] || missing+=(libpostgresql-jdbc-java)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)

if [[ ${#missing[@]} -eq 0 ]]; then
	log "psycopg, pgjdbc and java are present"
	exit 0
fi
sudo=()
if [[ "$(id -u)" != 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { log "need root to install ${missing[*]}"; exit 1; }
	sudo=(sudo)
fi
log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
	{ "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
log "installed ${missing[*]}"
