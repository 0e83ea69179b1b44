package config

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MinWebhookSecretLength is the shortest webhook secret serve accepts. Every webhook's
// HMAC-SHA256 signature is only as strong as the secret: GitHub asks for a random string with
// high entropy, and 16 random characters are the floor (`openssl rand -hex 32` gives 64).
const MinWebhookSecretLength = 16

// webhookSecretProblems checks github.app.webhook_secret (after the environment is applied).
// An empty secret is a problem only when required (serving); a short one always is. The
// secret is never echoed, nor its length.
func webhookSecretProblems(secret string, required bool) Problems {
	const path = "github.app.webhook_secret"
	s := strings.TrimSpace(secret)
	switch {
	case s == "" && required:
		return Problems{{Path: path, Message: "is required: ralph-gate refuses unsigned webhooks (or set " + EnvWebhookSecret + ")"}}
	case s == "":
		return nil
	case utf8.RuneCountInString(s) < MinWebhookSecretLength:
		return Problems{{Path: path, Message: fmt.Sprintf("is too short: use a random string of at least %d characters (e.g. `openssl rand -hex 32`), the same in the App's settings (or set %s)",
			MinWebhookSecretLength, EnvWebhookSecret)}}
	}
	return nil
}

// appendNew appends the problems of more that problems does not hold already (the same check
// run by Validate and ValidateServe is reported once).
func appendNew(problems Problems, more ...Problem) Problems {
	for _, p := range more {
		seen := false
		for _, q := range problems {
			if q == p {
				seen = true
				break
			}
		}
		if !seen {
			problems = append(problems, p)
		}
	}
	return problems
}

// dsnScheme matches a URL's scheme; schemeSlashes is "//" when the scheme is followed by it.
var dsnScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):(//)?`)

// keyValueStart matches the first setting of libpq's key=value form (host=db user=ralph …).
var keyValueStart = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\s*=`)

// keyValueKey matches every key of libpq's key=value form.
var keyValueKey = regexp.MustCompile(`(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)\s*=`)

// libpqKeys are libpq's (and pgx's) connection keywords: a DSN naming one of them in key=value
// form is a PostgreSQL connection string, not an SQLite file name.
var libpqKeys = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "sslmode": true, "sslcert": true, "sslkey": true, "sslrootcert": true,
	"sslpassword": true, "connect_timeout": true, "application_name": true, "options": true,
	"service": true, "target_session_attrs": true, "pool_max_conns": true, "search_path": true,
}

// urlSchemeOf returns the lower-case scheme of a DSN that looks like a URL: "scheme://…", or
// "postgres:…"/"postgresql:…" even without the slashes. "" otherwise (a path, a drive letter).
func urlSchemeOf(dsn string) string {
	m := dsnScheme.FindStringSubmatch(dsn)
	if m == nil {
		return ""
	}
	scheme := strings.ToLower(m[1])
	if m[2] == "" && scheme != "postgres" && scheme != "postgresql" {
		return ""
	}
	return scheme
}

// libpqKeysOf returns the libpq keywords a key=value DSN sets, in order; nil when dsn is not
// in key=value form. Only keys are returned: values may be secrets.
func libpqKeysOf(dsn string) []string {
	if !keyValueStart.MatchString(dsn) {
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

// redactDSN shows a URL DSN without its user information (everything up to the last '@' of
// the authority, where a password sits) and without its query (which may carry password=).
func redactDSN(dsn string) string {
	scheme := urlSchemeOf(dsn)
	rest := dsn[len(scheme)+1:]
	sep := ":"
	if strings.HasPrefix(rest, "//") {
		rest, sep = rest[2:], "://"
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = "xxxxx@" + rest[i+1:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i] + "?…"
	}
	return dsn[:len(scheme)] + sep + rest
}

// storeDSNProblems checks that store.dsn suits store.driver: an SQLite DSN must be a file
// path or a file: URI (a postgres:// URL given to SQLite would become a file named after it,
// password included), and a Postgres DSN a postgres:// URL or key=value settings. The DSN is
// echoed only redacted.
func storeDSNProblems(driver, dsn string) Problems {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return nil // required with postgres, defaulted with sqlite: checked elsewhere
	}
	const path = "store.dsn"
	scheme := urlSchemeOf(dsn)
	switch driver {
	case "sqlite":
		switch {
		case scheme == "postgres" || scheme == "postgresql":
			return Problems{{Path: path, Message: fmt.Sprintf("is a PostgreSQL URL (%s) but store.driver is sqlite (the default), which would create a file named after it: set store.driver: postgres, or give store.dsn a file path",
				redactDSN(dsn))}}
		case scheme != "" && scheme != "file":
			return Problems{{Path: path, Message: fmt.Sprintf("is a %s: URL (%s) but store.driver is sqlite, which takes a file path or a file: URI",
				scheme, redactDSN(dsn))}}
		case scheme == "" && !strings.HasPrefix(strings.ToLower(dsn), "file:"):
			if keys := libpqKeysOf(dsn); len(keys) > 0 {
				return Problems{{Path: path, Message: fmt.Sprintf("is PostgreSQL key=value settings (%s) but store.driver is sqlite (the default), which would create a file named after them: set store.driver: postgres, or give store.dsn a file path",
					strings.Join(keys, "=…, ")+"=…")}}
			}
		}
	case "postgres":
		switch {
		case scheme == "postgres" || scheme == "postgresql":
			if !strings.HasPrefix(dsn[len(scheme):], "://") {
				return Problems{{Path: path, Message: fmt.Sprintf("must start with %s:// (got %s)", scheme, redactDSN(dsn))}}
			}
		case scheme != "":
			return Problems{{Path: path, Message: fmt.Sprintf("is a %s: URL (%s) but store.driver is postgres, which takes a postgres:// URL or key=value settings",
				scheme, redactDSN(dsn))}}
		case !keyValueStart.MatchString(dsn):
			// Not echoed: a mangled connection string may hold a password.
			return Problems{{Path: path, Message: "looks like a file path but store.driver is postgres, which takes a postgres://USER:PASSWORD@HOST:5432/DB URL or key=value settings (host=… dbname=…): fix store.dsn, or set store.driver: sqlite"}}
		}
	}
	return nil
}
