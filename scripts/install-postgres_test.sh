#!/usr/bin/env bash
# Tests scripts/install-postgres.sh without touching the machine: in a private mount
# namespace, /usr/lib/postgresql and /etc/postgresql are empty tmpfs mounts, and apt-get,
# pg_lsclusters and pg_ctlcluster are fakes on $PATH. Checks that the script installs when
# the binaries are missing, stops and disables only the cluster the install created, leaves
# an earlier running cluster alone, and does nothing on a second run.
#
# Needs root (unshare -m). Usage: sudo scripts/install-postgres_test.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [[ "${1:-}" != --inside ]]; then
	exec unshare -m "$0" --inside
fi

mount -t tmpfs none /usr/lib/postgresql 2>/dev/null || { mkdir -p /usr/lib/postgresql && mount -t tmpfs none /usr/lib/postgresql; }
mount -t tmpfs none /etc/postgresql 2>/dev/null || { mkdir -p /etc/postgresql && mount -t tmpfs none /etc/postgresql; }
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
state=$fake/state
mkdir -p "$fake/bin" "$state"
touch "$state/old-online" # a cluster that was running before: must be left alone

cat >"$fake/bin/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >>"$state/calls"
case "\$*" in *install*postgresql*)
	mkdir -p /usr/lib/postgresql/16/bin /etc/postgresql/16/main
	printf '#!/bin/sh\necho "postgres (PostgreSQL) 16.0 (fake)"\n' >/usr/lib/postgresql/16/bin/postgres
	printf '#!/bin/sh\n' >/usr/lib/postgresql/16/bin/initdb
	chmod +x /usr/lib/postgresql/16/bin/*
	echo auto >/etc/postgresql/16/main/start.conf
	touch "$state/main-online" ;;
esac
EOF
cat >"$fake/bin/pg_lsclusters" <<EOF
#!/bin/sh
st() { if [ -e "$state/\$1-online" ]; then echo online; else echo down; fi; }
echo "15 old 5433 \$(st old) postgres /var/lib/postgresql/15/old /dev/null"
if [ -d /etc/postgresql/16/main ]; then
	echo "16 main 5432 \$(st main) postgres /var/lib/postgresql/16/main /dev/null"
fi
EOF
cat >"$fake/bin/pg_ctlcluster" <<EOF
#!/bin/sh
echo "pg_ctlcluster \$*" >>"$state/calls"
[ "\$3" = stop ] && rm -f "$state/\$2-online"
EOF
chmod +x "$fake/bin/"*

fail() { echo "FAIL: $*"; echo "--- calls:"; cat "$state/calls" 2>/dev/null; exit 1; }

out=$(env -u DPSQL_PG_BIN PATH="$fake/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$here/install-postgres.sh" 2>&1) || fail "first run exited $?: $out"
echo "$out"
grep -q "apt-get install -y -q --no-install-recommends postgresql" "$state/calls" || fail "apt-get install not run"
grep -q "installed: /usr/lib/postgresql/16/bin" <<<"$out" || fail "no 'installed' line"
grep -qx "pg_ctlcluster 16 main stop" "$state/calls" || fail "the new cluster was not stopped"
[[ ! -e "$state/main-online" ]] || fail "the new cluster still runs"
[[ $(cat /etc/postgresql/16/main/start.conf) == manual ]] || fail "start.conf not set to manual"
grep -q "pg_ctlcluster 15 old" "$state/calls" && fail "the earlier cluster was touched"
[[ -e "$state/old-online" ]] || fail "the earlier cluster was stopped"

: >"$state/calls"
out=$(env -u DPSQL_PG_BIN PATH="$fake/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$here/install-postgres.sh" 2>&1) || fail "second run exited $?: $out"
echo "$out"
grep -q "nothing to do" <<<"$out" || fail "second run did something"
[[ ! -s "$state/calls" ]] || fail "second run called: $(cat "$state/calls")"
echo "PASS: install-postgres.sh"
