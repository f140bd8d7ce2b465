#!/usr/bin/env bash
# Make sure the PostgreSQL server binaries (initdb, postgres) that the tests need are present.
#
# The tests (internal/pgtest) start their own throwaway clusters from these binaries; they
# need no running server. So this script installs Debian's postgresql package when no
# binaries are found, and then stops any cluster that the package installation created and
# started, so that no system server is left running. Clusters that existed before are left
# alone.
#
# Idempotent: when the binaries exist it only says where they are. Needs root (or sudo) to
# install. CI runs it as root before the tests. Prints what it did.
set -euo pipefail

log() { printf 'install-postgres: %s\n' "$*"; }

# find_bin prints a directory holding initdb and postgres, searched as internal/pgtest
# searches: $DPSQL_PG_BIN, then initdb on $PATH, then /usr/lib/postgresql/<version>/bin,
# newest version first.
find_bin() {
	local d
	if [[ -n "${DPSQL_PG_BIN:-}" ]]; then
		[[ -x "$DPSQL_PG_BIN/initdb" && -x "$DPSQL_PG_BIN/postgres" ]] && { echo "$DPSQL_PG_BIN"; return 0; }
		return 1
	fi
	if d=$(command -v initdb 2>/dev/null); then
		d=$(dirname "$(readlink -f "$d")")
		[[ -x "$d/postgres" ]] && { echo "$d"; return 0; }
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -V -r); do
		[[ -x "$d/initdb" && -x "$d/postgres" ]] && { echo "$d"; return 0; }
	done
	return 1
}

# online_clusters lists "version name" of the Debian clusters that are running.
online_clusters() {
	command -v pg_lsclusters >/dev/null 2>&1 || return 0
	pg_lsclusters --no-header 2>/dev/null | awk '$4 == "online" { print $1, $2 }'
}

# all_clusters lists "version name" of every Debian cluster.
all_clusters() {
	command -v pg_lsclusters >/dev/null 2>&1 || return 0
	pg_lsclusters --no-header 2>/dev/null | awk '{ print $1, $2 }'
}

if bin=$(find_bin); then
	log "PostgreSQL binaries present in $bin ($("$bin/postgres" --version)); nothing to do"
	exit 0
fi

if [[ -n "${DPSQL_PG_BIN:-}" ]]; then
	log "DPSQL_PG_BIN=$DPSQL_PG_BIN has no initdb and postgres; unset it to use the system's"
	exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
	log "no PostgreSQL binaries and no apt-get: install PostgreSQL's server package, or set DPSQL_PG_BIN to its bin directory"
	exit 1
fi

SUDO=
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		log "installing needs root; run as root or install sudo"
		exit 1
	fi
fi

before=$(all_clusters)
export DEBIAN_FRONTEND=noninteractive
log "no PostgreSQL binaries found; running apt-get update && apt-get install -y postgresql"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql

# The package may have created a "main" cluster and started it (where a service manager or
# invoke-rc.d allows). The tests do not use it: stop it, and keep it from starting at boot.
while read -r ver name; do
	[[ -z "$ver" ]] && continue
	if grep -qx "$ver $name" <<<"$before"; then
		continue # not ours
	fi
	if online_clusters | grep -qx "$ver $name"; then
		log "stopping the cluster $ver/$name that the package started"
		$SUDO pg_ctlcluster "$ver" "$name" stop || log "could not stop $ver/$name"
	fi
	conf=/etc/postgresql/$ver/$name/start.conf
	if [[ -f $conf ]]; then
		log "setting $ver/$name to start manually ($conf)"
		echo manual | $SUDO tee "$conf" >/dev/null
	fi
done <<<"$(all_clusters)"

if bin=$(find_bin); then
	log "installed: $bin ($("$bin/postgres" --version))"
else
	log "apt-get install postgresql finished but no initdb/postgres was found"
	exit 1
fi
