package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	seed, err := os.ReadFile("../../ghsim/testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--seed", path, "--listen", "127.0.0.1:0", "--webhook-url", "http://127.0.0.1:1/hook"}, &stdout, &stderr)
	}()

	re := regexp.MustCompile(`^ghsim listening on (http://127\.0\.0\.1:\d+)\n$`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready line; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := http.Get(url + "/_sim/config")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), "http://127.0.0.1:1/hook") {
		t.Fatalf("webhook url override not applied: %s", body)
	}
	if _, err := os.Stat(filepath.Join(dir, "app.pem")); err != nil {
		t.Fatalf("app key not created beside the seed: %v", err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no shutdown")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"serve"}, {"serve", "--nope"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--seed", "missing.yaml"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "missing.yaml") {
		t.Errorf("missing seed: exit %d %q", code, errOut.String())
	}
	dir := t.TempDir()
	seed, _ := os.ReadFile("../../ghsim/testdata/seed.yaml")
	path := filepath.Join(dir, "seed.yaml")
	_ = os.WriteFile(path, seed, 0o600)
	if code := run(context.Background(), []string{"serve", "--seed", path, "--listen", "0.0.0.0:0"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "loopback") {
		t.Errorf("non-loopback listen: exit %d %q", code, errOut.String())
	}
}
