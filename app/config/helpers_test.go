package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var testKey = sync.OnceValues(func() (string, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})), nil
})

// testKeyPEM is an RSA private key in PEM, as GitHub generates an App's.
func testKeyPEM(t testing.TB) string {
	t.Helper()
	k, err := testKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// clearKeyEnv unsets the App's variables for the test, so a developer's own do not leak in.
func clearKeyEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{EnvIntegrationID, EnvWebhookSecret, EnvPrivateKey, EnvPrivateKeyFile, EnvStoreDSN} {
		if _, ok := os.LookupEnv(k); ok {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// writeFile writes text to a configuration file in a new temporary directory.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
