package ghsim

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// One RSA key per test binary: generating one per test would be slow.
var testKeyPEM = sync.OnceValue(func() string {
	b, err := generateKeyPEM()
	if err != nil {
		panic(err)
	}
	return string(b)
})

func testSeed(t testing.TB) Seed {
	t.Helper()
	b, err := os.ReadFile("testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSeed(b)
	if err != nil {
		t.Fatal(err)
	}
	s.App.PrivateKeyFile = ""
	s.App.PrivateKeyPEM = testKeyPEM()
	s.App.WebhookURL = ""
	return s
}

type sim struct {
	*Server
	t   testing.TB
	url string
}

func startSim(t testing.TB, seed Seed, opts Options) *sim {
	t.Helper()
	s, err := New(seed, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = s.Close()
	})
	return &sim{Server: s, t: t, url: url}
}

func signJWT(t testing.TB, keyPEM []byte, appID int64, iat, exp time.Time) string {
	t.Helper()
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]string{"alg": "RS256", "typ": "JWT"})
	body := enc(map[string]any{"iss": fmt.Sprint(appID), "iat": iat.Unix(), "exp": exp.Unix()})
	digest := sha256.Sum256([]byte(head + "." + body))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + body + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func (s *sim) appJWT() string {
	now := time.Now()
	return signJWT(s.t, s.PrivateKeyPEM(), s.seed.App.ID, now.Add(-30*time.Second), now.Add(9*time.Minute))
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (s *sim) do(method, path, auth string, body any) resp {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func (s *sim) installationToken() string {
	s.t.Helper()
	r := s.do("POST", "/api/v3/app/installations/2002/access_tokens", "Bearer "+s.appJWT(), nil)
	if r.status != 201 {
		s.t.Fatalf("access token: %d %s", r.status, r.body)
	}
	var out struct {
		Token string `json:"token"`
	}
	r.json(s.t, &out)
	return out.Token
}

type gqlResult struct {
	Data   map[string]any   `json:"data"`
	Errors []map[string]any `json:"errors"`
	raw    resp
}

func (s *sim) gql(token, query string, vars map[string]any) gqlResult {
	s.t.Helper()
	r := s.do("POST", "/api/graphql", "bearer "+token, map[string]any{"query": query, "variables": vars})
	var out gqlResult
	if r.status == 200 {
		r.json(s.t, &out)
	}
	out.raw = r
	return out
}

// gqlOK runs a document and fails on any error.
func (s *sim) gqlOK(token, query string, vars map[string]any) map[string]any {
	s.t.Helper()
	out := s.gql(token, query, vars)
	if out.raw.status != 200 || len(out.Errors) > 0 {
		s.t.Fatalf("graphql: %d %s", out.raw.status, out.raw.body)
	}
	return out.Data
}

// dig walks nested maps and lists: dig(v, "a", "b", 0, "c").
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// receiver records webhooks it is sent.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status int
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{status: 202}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: b})
		st := rc.status
		rc.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received{}, rc.got...)
}

func (rc *receiver) setStatus(code int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status = code
}

func (s *sim) waitIdle() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		s.t.Fatal(err)
	}
}

// ids looks up the node ids a test needs through the API itself.
type boardIDs struct {
	project string
	field   string
	options map[string]string
	items   map[int]string // issue number -> item id
}

const boardQuery = `query($org: String!, $n: Int!) { organization(login: $org) { projectV2(number: $n) {
  id field(name: "Workflow State") { ... on ProjectV2SingleSelectField { id options { id name } } }
  items(first: 100) { nodes { id content { ... on Issue { number } } } } } } }`

func (s *sim) board(token string) boardIDs {
	s.t.Helper()
	d := s.gqlOK(token, boardQuery, map[string]any{"org": "acme", "n": 1})
	p := dig(d, "organization", "projectV2")
	b := boardIDs{project: dig(p, "id").(string), field: dig(p, "field", "id").(string), options: map[string]string{}, items: map[int]string{}}
	for _, o := range dig(p, "field", "options").([]any) {
		b.options[dig(o, "name").(string)] = dig(o, "id").(string)
	}
	for _, n := range dig(p, "items", "nodes").([]any) {
		if num, ok := dig(n, "content", "number").(float64); ok {
			b.items[int(num)] = dig(n, "id").(string)
		}
	}
	return b
}

const setStateMutation = `mutation($p: ID!, $i: ID!, $f: ID!, $o: String!) {
  updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i, fieldId: $f, value: {singleSelectOptionId: $o}}) {
    projectV2Item { id fieldValueByName(name: "Workflow State") { ... on ProjectV2ItemFieldSingleSelectValue { name optionId } } } } }`

func (s *sim) setState(token string, b boardIDs, number int, state string) {
	s.t.Helper()
	s.gqlOK(token, setStateMutation, map[string]any{"p": b.project, "i": b.items[number], "f": b.field, "o": b.options[state]})
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
