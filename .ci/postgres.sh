#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for tests, as an unprivileged user.
#
#   eval "$(bash .ci/postgres.sh start)"   # prints: export RALPH_GATE_TEST_POSTGRES_DSN=postgres://…
#   bash .ci/postgres.sh status            # exit 0 when running, prints the export line
#   bash .ci/postgres.sh stop              # stops the server this script started
#   bash .ci/postgres.sh stop --clean      # … and removes its data directory
#
# The server listens on 127.0.0.1 only (trust auth on loopback), on
# $RALPH_PG_PORT (default 55432, or the next free port), with its data and
# socket under $RALPH_PG_DIR (default ${TMPDIR:-/tmp}/ralph-gate-pg). Its
# superuser and database are both named "ralph". PostgreSQL refuses to run as
# root: as root the server runs as the "postgres" user when it exists, else as
# a system user "ralphpg" created for the purpose. Binaries come from
# $PG_BINDIR, `pg_config --bindir` or /usr/lib/postgresql/*/bin (15
# preferred); as root, `apt-get install postgresql` is the last resort.
#
# Only stdout carries the export line; all diagnostics go to stderr.
set -euo pipefail

cmd="${1:-start}"
clean="${2:-}"
dir="${RALPH_PG_DIR:-${TMPDIR:-/tmp}/ralph-gate-pg}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
data="$dir/data"
sock="$dir/sock"
log="$dir/postgres.log"
portfile="$dir/port"
userfile="$dir/user"
dbname="ralph"
dbuser="ralph"

say() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() {
	say "ERROR: $*"
	exit 1
}

find_bindir() {
	local d
	if [ -n "${PG_BINDIR:-}" ]; then
		[ -x "$PG_BINDIR/initdb" ] || die "PG_BINDIR=$PG_BINDIR has no initdb"
		echo "$PG_BINDIR"
		return
	fi
	if command -v pg_config >/dev/null 2>&1; then
		d="$(pg_config --bindir 2>/dev/null || true)"
		if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return
		fi
	fi
	for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) /usr/pgsql-15/bin; do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return
		fi
	done
	return 1
}

bindir="$(find_bindir || true)"
if [ -z "$bindir" ] && [ "$cmd" = start ]; then
	[ "$(id -u)" -eq 0 ] || die "PostgreSQL server binaries (initdb, pg_ctl) not found; install PostgreSQL 15 or set PG_BINDIR"
	command -v apt-get >/dev/null 2>&1 || die "PostgreSQL server binaries not found and apt-get is unavailable"
	say "installing postgresql with apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || die "apt-get install postgresql failed"
	bindir="$(find_bindir || true)"
	[ -n "$bindir" ] || die "PostgreSQL installed but initdb/pg_ctl still not found"
fi

# The user the server runs as, and a way to run commands as that user.
run_user=""
if [ "$(id -u)" -eq 0 ]; then
	if [ -f "$userfile" ]; then
		run_user="$(cat "$userfile")"
	elif id postgres >/dev/null 2>&1; then
		run_user="postgres"
	else
		run_user="ralphpg"
	fi
fi
as_user() {
	if [ -z "$run_user" ]; then
		"$@"
	elif command -v runuser >/dev/null 2>&1; then
		# From /: the caller's working directory may be private to root.
		(cd / && runuser -u "$run_user" -- "$@")
	else
		(cd / && su -s /bin/sh "$run_user" -c "$(printf '%q ' "$@")")
	fi
}

dsn() {
	printf 'postgres://%s@127.0.0.1:%s/%s?sslmode=disable' "$dbuser" "$(cat "$portfile")" "$dbname"
}
print_export() { printf 'export RALPH_GATE_TEST_POSTGRES_DSN=%q\n' "$(dsn)"; }

running() {
	[ -n "$bindir" ] && [ -f "$data/postmaster.pid" ] && as_user "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1
}

port_busy() {
	if command -v ss >/dev/null 2>&1; then
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}

start() {
	[ -n "$bindir" ] || die "PostgreSQL server binaries not found"
	if running; then
		say "already running ($(dsn))"
		print_export
		return
	fi

	if [ -n "$run_user" ] && ! id "$run_user" >/dev/null 2>&1; then
		say "creating system user $run_user"
		useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$run_user" || die "useradd $run_user failed"
	fi

	mkdir -p "$dir"
	chmod 0700 "$dir"
	if [ -n "$run_user" ]; then
		echo "$run_user" >"$userfile"
		chown -R "$run_user" "$dir"
		as_user test -w "$dir" || die "$run_user cannot write $dir (is a parent directory private?); set RALPH_PG_DIR"
	fi
	as_user mkdir -p "$sock"

	if [ ! -s "$data/PG_VERSION" ]; then
		rm -rf "$data"
		say "initdb in $data (as ${run_user:-$(id -un)}, $("$bindir/postgres" --version))"
		as_user "$bindir/initdb" -D "$data" -U "$dbuser" --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
			{
				cat "$dir/initdb.log" >&2
				die "initdb failed"
			}
	fi

	local port="${RALPH_PG_PORT:-}"
	if [ -z "$port" ] && [ -s "$portfile" ]; then
		port="$(cat "$portfile")"
	fi
	port="${port:-55432}"
	local tries=0
	while port_busy "$port"; do
		[ -z "${RALPH_PG_PORT:-}" ] || die "port $port is in use (RALPH_PG_PORT)"
		tries=$((tries + 1))
		[ "$tries" -lt 100 ] || die "no free port found from 55432"
		port=$((port + 1))
	done
	echo "$port" >"$portfile"
	[ -z "$run_user" ] || chown "$run_user" "$portfile"

	say "starting on 127.0.0.1:$port (log $log)"
	if ! as_user "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 60 start \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $sock -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >&2; then
		tail -n 50 "$log" >&2 || true
		die "pg_ctl start failed"
	fi

	if ! "$bindir/psql" -h 127.0.0.1 -p "$port" -U "$dbuser" -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = '$dbname'" | grep -q 1; then
		"$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$dbuser" "$dbname" || die "createdb $dbname failed"
	fi
	"$bindir/psql" -h 127.0.0.1 -p "$port" -U "$dbuser" -d "$dbname" -tAc "SELECT 1" >/dev/null ||
		die "cannot connect to $dbname on 127.0.0.1:$port"
	say "ready: $(dsn)"
	print_export
}

stop() {
	if ! running; then
		say "not running (data dir $data)"
	else
		say "stopping server in $data"
		as_user "$bindir/pg_ctl" -D "$data" -m fast -w -t 60 stop >&2 || die "pg_ctl stop failed"
	fi
	if [ "$clean" = "--clean" ]; then
		say "removing $dir"
		rm -rf "$dir"
	fi
}

case "$cmd" in
start) start ;;
stop) stop ;;
status)
	if running; then
		print_export
	else
		say "not running"
		exit 1
	fi
	;;
*) die "usage: $0 start | stop [--clean] | status" ;;
esac
