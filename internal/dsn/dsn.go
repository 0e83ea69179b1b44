// Package dsn reads just enough of a database DSN to tell a file path from a PostgreSQL
// connection string, and shows one without its secrets. Configuration validation (app/config)
// and the store's last line of defence (store.Open) share it. Standard library only.
package dsn

import (
	"regexp"
	"strings"
)

var (
	// scheme matches a URL's scheme, and the "//" after it when there is one.
	scheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):(//)?`)
	// keyValueStart matches the first setting of libpq's key=value form.
	keyValueStart = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\s*=`)
	// keyValueKey matches every key of libpq's key=value form.
	keyValueKey = regexp.MustCompile(`(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)\s*=`)
	// libpqKeys are libpq's (and pgx's) connection keywords.
	libpqKeys = map[string]bool{
		"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
		"passfile": true, "sslmode": true, "sslcert": true, "sslkey": true, "sslrootcert": true,
		"sslpassword": true, "connect_timeout": true, "application_name": true, "options": true,
		"service": true, "target_session_attrs": true, "pool_max_conns": true, "search_path": true,
	}
)

// Scheme returns the lower-case scheme of a DSN that looks like a URL ("scheme://…", or
// "postgres:…"/"postgresql:…" even without the slashes), "" otherwise (a path, a Windows drive
// letter).
func Scheme(dsn string) string {
	m := scheme.FindStringSubmatch(dsn)
	if m == nil {
		return ""
	}
	s := strings.ToLower(m[1])
	if m[2] == "" && s != "postgres" && s != "postgresql" {
		return ""
	}
	return s
}

// IsKeyValue reports whether dsn starts like libpq's key=value form.
func IsKeyValue(dsn string) bool { return keyValueStart.MatchString(dsn) }

// LibpqKeys returns the libpq keywords a key=value DSN sets, in order (keys only: values may
// be secrets); nil when dsn is not in that form.
func LibpqKeys(dsn string) []string {
	if !IsKeyValue(dsn) {
		return nil
	}
	var keys []string
	for _, m := range keyValueKey.FindAllStringSubmatch(dsn, -1) {
		if k := strings.ToLower(m[1]); libpqKeys[k] {
			keys = append(keys, k)
		}
	}
	return keys
}

// RedactURL shows a URL DSN without its user information (everything up to the last '@',
// where a password sits, even one with unescaped '/' or '@') and without its query (which may
// carry password=).
func RedactURL(dsn string) string {
	s := Scheme(dsn)
	rest, sep := dsn[len(s)+1:], ":"
	if strings.HasPrefix(rest, "//") {
		rest, sep = rest[2:], "://"
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = "xxxxx@" + rest[i+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i] + "?…"
	}
	return dsn[:len(s)] + sep + rest
}
