package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// buildRalphGate builds the ralph-gate binary once into the test's directory.
func buildRalphGate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ralph-gate")
	build := exec.Command(goTool(t), "build", "-o", bin, "./cmd/ralph-gate")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ralph-gate: %v\n%s", err, out)
	}
	return bin
}

// clusterLine is one line a replica wrote to stderr, with the moment the test read it.
type clusterLine struct {
	at   time.Time
	text string
}

// clusterLog is a replica's stderr: written to a file as it comes, and kept line by line with
// the time each line arrived (the logs' own timestamps are whole seconds).
type clusterLog struct {
	mu    sync.Mutex
	file  *os.File
	part  []byte
	lines []clusterLine
}

func newClusterLog(t *testing.T, file string) *clusterLog {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &clusterLog{file: f}
}

func (l *clusterLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, clusterLine{at: now, text: string(l.part[:i])})
		l.part = l.part[i+1:]
	}
	return l.file.Write(p)
}

// Lines returns every complete line so far.
func (l *clusterLog) Lines() []clusterLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// Tail returns the last n lines, for failure messages.
func (l *clusterLog) Tail(n int) string {
	lines := l.Lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, ln := range lines {
		b.WriteString(ln.text + "\n")
	}
	return b.String()
}

// clusterNode is one `ralph-gate serve` process of the cluster.
type clusterNode struct {
	n      int // 1, 2, 3 …
	url    string
	cmd    *exec.Cmd
	log    *clusterLog
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, once exited is closed
}

func (nd *clusterNode) running() bool {
	select {
	case <-nd.exited:
		return false
	default:
		return true
	}
}

func (nd *clusterNode) get(route string) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(nd.url + route)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// kill ends the process with SIGKILL, by its pid, and waits for it to exit.
func (nd *clusterNode) kill(t *testing.T) {
	t.Helper()
	if nd.cmd.Process == nil || !nd.running() {
		return
	}
	if err := syscall.Kill(nd.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill replica %d (pid %d): %v", nd.n, nd.cmd.Process.Pid, err)
	}
	select {
	case <-nd.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("replica %d (pid %d) did not exit on SIGKILL", nd.n, nd.cmd.Process.Pid)
	}
}

// cluster is n serve processes on one database behind a round-robin reverse proxy, as a
// Kubernetes Service spreads requests over a Deployment's pods.
type cluster struct {
	nodes []*clusterNode
	proxy *httptest.Server
	fwd   []*httputil.ReverseProxy

	mu        sync.Mutex
	rotation  []int // indexes of the nodes requests go to
	next      int
	toolCalls map[int]int // node index → MCP tools/call requests it was given
}

// startCluster starts n `serve` processes at the same moment, each with its own copy of the
// configuration file (edit applied) on its own port, logging to dir/replica-N.log, and waits
// until every one is ready; then it starts the proxy in front of them. Every process is killed
// (SIGKILL, by pid) when the test ends.
func startCluster(t *testing.T, bin, configFile, dir string, n int, edit func(map[string]any)) *cluster {
	t.Helper()
	c := &cluster{toolCalls: map[int]int{}}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		data, err := os.ReadFile(configFile)
		if err != nil {
			t.Fatal(err)
		}
		own := filepath.Join(dir, fmt.Sprintf("config-%d.yml", i+1))
		if err := os.WriteFile(own, data, 0o600); err != nil {
			t.Fatal(err)
		}
		editConfig(t, own, func(cfg map[string]any) {
			edit(cfg)
			cfg["server"] = map[string]any{"address": "127.0.0.1", "port": port}
		})
		nd := &clusterNode{n: i + 1, url: fmt.Sprintf("http://127.0.0.1:%d", port), exited: make(chan struct{}),
			log: newClusterLog(t, filepath.Join(dir, fmt.Sprintf("replica-%d.log", i+1)))}
		nd.cmd = exec.Command(bin, "serve", "--config", own)
		nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.kill(t)
		}
	})

	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		startErr = make([]error, n)
	)
	for i, nd := range c.nodes {
		wg.Go(func() {
			<-start
			if startErr[i] = nd.cmd.Start(); startErr[i] != nil {
				close(nd.exited)
				return
			}
			go func() {
				nd.err = nd.cmd.Wait()
				close(nd.exited)
			}()
		})
	}
	close(start)
	wg.Wait()
	for i, err := range startErr {
		if err != nil {
			t.Fatalf("start replica %d: %v", i+1, err)
		}
	}

	deadline := time.Now().Add(45 * time.Second)
	ready := make([]bool, n)
	for left := n; left > 0; {
		if time.Now().After(deadline) {
			for i, nd := range c.nodes {
				if !ready[i] {
					code, body, err := nd.get("/readyz")
					t.Errorf("replica %d not ready after 45 s: /readyz %d %q (%v)\n%s", nd.n, code, body, err, nd.log.Tail(40))
				}
			}
			t.FailNow()
		}
		for i, nd := range c.nodes {
			if ready[i] {
				continue
			}
			if !nd.running() {
				t.Fatalf("replica %d exited (%v) before it was ready:\n%s", nd.n, nd.err, nd.log.Tail(40))
			}
			if code, body, err := nd.get("/readyz"); err == nil && code == http.StatusOK && strings.Contains(body, "ready") {
				ready[i] = true
				left--
			}
		}
		time.Sleep(100 * time.Millisecond)
	}

	for i, nd := range c.nodes {
		u, err := url.Parse(nd.url)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, fmt.Sprintf("replica %d: %v", nd.n, err), http.StatusBadGateway)
		}
		c.fwd = append(c.fwd, p)
		c.rotation = append(c.rotation, i)
	}
	c.proxy = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.proxy.Close)
	return c
}

// serve forwards a request to the next node of the rotation.
func (c *cluster) serve(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	c.mu.Lock()
	if len(c.rotation) == 0 {
		c.mu.Unlock()
		http.Error(w, "no replica in the rotation", http.StatusServiceUnavailable)
		return
	}
	i := c.rotation[c.next%len(c.rotation)]
	c.next++
	if r.URL.Path == "/mcp" && bytes.Contains(body, []byte(`"tools/call"`)) {
		c.toolCalls[i]++
	}
	c.mu.Unlock()
	c.fwd[i].ServeHTTP(w, r)
}

// remove takes a node out of the rotation (as a Service drops a pod that stopped answering).
func (c *cluster) remove(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rotation = slices.DeleteFunc(c.rotation, func(k int) bool { return k == i })
}

// toolCallsByNode returns how many MCP tool calls each node was given.
func (c *cluster) toolCallsByNode() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int{}
	for i, n := range c.toolCalls {
		out[c.nodes[i].n] = n
	}
	return out
}

// boardMover makes Workflow State moves as seeded users, through the simulator's GraphQL API,
// as GitHub's web interface or an agent's own client would.
type boardMover struct {
	boards map[string]*ghboard.Board // by login
	items  map[int]enforce.Item      // by issue number
}

func newBoardMover(ctx context.Context, t *testing.T, simURL, org, repo string, tokens map[string]string, numbers []int) *boardMover {
	t.Helper()
	m := &boardMover{boards: map[string]*ghboard.Board{}, items: map[int]enforce.Item{}}
	for login, token := range tokens {
		m.boards[login] = ghboard.New(ghboard.NewClient(sandbox.UserClient(token, nil), simURL+"/api/graphql", ghboard.Unpaced()),
			"Workflow State", ghboard.NewFieldCache())
	}
	var first *ghboard.Board
	for _, b := range m.boards {
		first = b
		break
	}
	for _, num := range numbers {
		items, err := first.IssueItems(ctx, org, repo, num)
		if err != nil || len(items) == 0 {
			t.Fatalf("issue %s#%d: items %v, %v", repo, num, items, err)
		}
		m.items[num] = items[0]
	}
	return m
}

// move sets issue number's Workflow State as login.
func (m *boardMover) move(ctx context.Context, login string, number int, state string) error {
	b, ok := m.boards[login]
	if !ok {
		return fmt.Errorf("no board for %s", login)
	}
	if err := b.SetState(ctx, m.items[number], state); err != nil {
		return fmt.Errorf("%s moves #%d to %s: %w", login, number, state, err)
	}
	return nil
}

// clusterBearer authenticates an MCP agent with its token.
type clusterBearer struct{ token string }

func (b clusterBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectClusterAgent connects an MCP client to endpoint with an agent's token.
func connectClusterAgent(ctx context.Context, endpoint, token string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-test", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: clusterBearer{token: token}, Timeout: 30 * time.Second},
	}, nil)
}
