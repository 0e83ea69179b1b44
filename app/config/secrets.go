package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	dsninfo "github.com/ralph-gate/ralph-gate/internal/dsn"
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
	scheme := dsninfo.Scheme(dsn)
	switch driver {
	case "sqlite":
		switch {
		case scheme == "postgres" || scheme == "postgresql":
			return Problems{{Path: path, Message: fmt.Sprintf("is a PostgreSQL URL (%s) but store.driver is sqlite (the default), which would create a file named after it: set store.driver: postgres, or give store.dsn a file path",
				dsninfo.RedactURL(dsn))}}
		case scheme != "" && scheme != "file":
			return Problems{{Path: path, Message: fmt.Sprintf("is a %s: URL (%s) but store.driver is sqlite, which takes a file path or a file: URI",
				scheme, dsninfo.RedactURL(dsn))}}
		case scheme == "" && !strings.HasPrefix(strings.ToLower(dsn), "file:"):
			if keys := dsninfo.LibpqKeys(dsn); len(keys) > 0 {
				return Problems{{Path: path, Message: fmt.Sprintf("is PostgreSQL key=value settings (%s) but store.driver is sqlite (the default), which would create a file named after them: set store.driver: postgres, or give store.dsn a file path",
					strings.Join(keys, "=…, ")+"=…")}}
			}
		}
	case "postgres":
		switch {
		case scheme == "postgres" || scheme == "postgresql":
			if !strings.HasPrefix(dsn[len(scheme):], "://") {
				return Problems{{Path: path, Message: fmt.Sprintf("must start with %s:// (got %s)", scheme, dsninfo.RedactURL(dsn))}}
			}
		case scheme != "":
			return Problems{{Path: path, Message: fmt.Sprintf("is a %s: URL (%s) but store.driver is postgres, which takes a postgres:// URL or key=value settings",
				scheme, dsninfo.RedactURL(dsn))}}
		case !dsninfo.IsKeyValue(dsn):
			// Not echoed: a mangled connection string may hold a password.
			return Problems{{Path: path, Message: "looks like a file path but store.driver is postgres, which takes a postgres://USER:PASSWORD@HOST:5432/DB URL or key=value settings (host=… dbname=…): fix store.dsn, or set store.driver: sqlite"}}
		}
	}
	return nil
}

// privateKeyProblems checks that the App's private key is a PEM RSA private key, as GitHub
// generates it; github.app.private_key is never echoed, nor any part of it.
func privateKeyProblems(pemText string) Problems {
	if msg := privateKeyProblem(pemText); msg != "" {
		return Problems{{Path: "github.app.private_key", Message: msg + " (or set " + EnvPrivateKeyFile + " to the .pem file GitHub generated)"}}
	}
	return nil
}

// privateKeyProblem says what is wrong with a PEM private key ("" when nothing is), without
// quoting it.
func privateKeyProblem(pemText string) string {
	block, _ := pem.Decode([]byte(strings.TrimSpace(pemText)))
	switch {
	case block == nil && strings.Contains(pemText, `\n`):
		return `is not PEM text: it holds "\n" escapes where the file has line breaks`
	case block == nil:
		return "is not PEM text (-----BEGIN RSA PRIVATE KEY----- … -----END RSA PRIVATE KEY-----)"
	case !strings.HasSuffix(block.Type, "PRIVATE KEY"):
		return fmt.Sprintf("holds a PEM %q block, not the App's private key", block.Type)
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return ""
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return "is not a valid PEM private key (the PEM block does not decode)"
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return "is not an RSA private key (GitHub Apps sign with RSA)"
	}
	return ""
}

// readPrivateKeyFile reads the App's private key from the file GITHUB_APP_PRIVATE_KEY_FILE
// names. A problem names the variable and the path, never the content.
func readPrivateKeyFile(path string) (string, *Problem) {
	at := "env " + EnvPrivateKeyFile
	data, err := os.ReadFile(path)
	if err != nil {
		reason := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return "", &Problem{Path: at, Message: fmt.Sprintf("cannot read the private key file %s: %s", path, reason)}
	}
	if msg := privateKeyProblem(string(data)); msg != "" {
		return "", &Problem{Path: at, Message: fmt.Sprintf("the file %s %s", path, msg)}
	}
	return string(data), nil
}
