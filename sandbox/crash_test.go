package sandbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// TestCrashLosesNothing builds the real binaries, runs `ghsim serve` and `ralph-gate serve`
// (SQLite) as child processes, and makes 500 mixed legal and illegal moves while ralph-gate is
// killed with SIGKILL twice and restarted. At the end no illegal value remains, every illegal
// move is explained exactly once (one marker line per refused move, coalesced into at most one
// comment per issue and actor), every legal move stands, and no delivery was decided twice: each refused
// move was reverted by exactly one write.
func TestCrashLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and kills one twice: skipped with -short")
	}
	t.Parallel() // mostly waiting on child processes
	const items, movesPerItem, drivers = 50, 10, 10
	dir := t.TempDir()
	bins := buildBinaries(t, dir)

	simPort, appPort := freePort(t), freePort(t)
	simURL := fmt.Sprintf("http://127.0.0.1:%d", simPort)
	keyFile := filepath.Join(dir, "app.pem")
	seed := strings.Replace(string(flatSeed(t, items, func(int) string { return "Backlog" })),
		"webhook_secret: demo-webhook-secret}", "webhook_secret: demo-webhook-secret, private_key_file: "+keyFile+"}", 1)
	if !strings.Contains(seed, keyFile) {
		t.Fatal("could not point the seed at the key file")
	}
	writeFile(t, filepath.Join(dir, "seed.yaml"), seed)
	sim := startChild(t, dir, "ghsim", bins["ghsim"], nil, "serve", "--seed", filepath.Join(dir, "seed.yaml"),
		"--listen", fmt.Sprintf("127.0.0.1:%d", simPort), "--webhook-url", fmt.Sprintf("http://127.0.0.1:%d/api/github/hook", appPort))
	defer sim.stop()
	waitHTTP(t, simURL+"/_sim/state", 30*time.Second)
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "ralph-gate.db")
	writeFile(t, filepath.Join(dir, "config.yml"), fmt.Sprintf(`server: {address: 127.0.0.1, port: %d}
github:
  web_url: %[2]s
  v3_api_url: %[2]s/api/v3/
  v4_api_url: %[2]s/api/graphql
  app: {integration_id: 1001, webhook_secret: demo-webhook-secret}
store: {driver: sqlite, dsn: %s}
projects: [{owner: acme, number: 1}]
enforcement: {reorder_window: 1s}
reconcile: {interval: 5s, settle: 60s}
redelivery: {interval: 5s}
logging: {level: info}
`, appPort, simURL, dbPath))
	env := []string{"GITHUB_APP_PRIVATE_KEY=" + string(key)}
	appURL := fmt.Sprintf("http://127.0.0.1:%d", appPort)
	serve := func() *child {
		c := startChild(t, dir, "ralph-gate", bins["ralph-gate"], env, "serve", "--config", filepath.Join(dir, "config.yml"))
		waitHTTP(t, appURL+"/readyz", 60*time.Second)
		return c
	}
	var mu sync.Mutex // guards app
	app := serve()
	defer func() { mu.Lock(); app.stop(); mu.Unlock() }()

	sb := &Sandbox{SimURL: simURL}
	sb.seed, err = ghsim.ParseSeed([]byte(seed))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	sb.Config = cfg
	md := newModel(t, cfg, items, "Backlog")
	itemIDs := map[int]string{}
	alice, err := sb.UserBoard("alice")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= items; i++ {
		its, err := alice.IssueItems(context.Background(), "acme", "app", i)
		if err != nil || len(its) != 1 {
			t.Fatalf("item of #%d: %v", i, err)
		}
		itemIDs[i] = its[0].ID
	}
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lastLegal := func(itemID string) string {
		var s string
		if err := db.QueryRow(`SELECT last_legal_state FROM items WHERE item_id = ?`, itemID).Scan(&s); err != nil {
			return "?"
		}
		return s
	}

	// The killer: SIGKILL at 150 and 350 moves, restart after a second.
	var made atomic.Int64
	killAt := []int64{150, 350}
	kills := make(chan struct{})
	go func() {
		defer close(kills)
		for _, at := range killAt {
			for made.Load() < at {
				time.Sleep(5 * time.Millisecond)
			}
			mu.Lock()
			app.kill()
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			app = serve()
			mu.Unlock()
		}
	}()

	var mdMu sync.Mutex
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, drivers)
	for d := 0; d < drivers; d++ {
		wg.Add(1)
		go func(d int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(d), 99))
			for m := 0; m < movesPerItem; m++ {
				for i := d + 1; i <= items; i += drivers {
					mdMu.Lock()
					actor, to := md.pick(rng, i)
					mdMu.Unlock()
					if err := userMove(ctx, sb, actor, i, to); err != nil {
						errs <- err
						return
					}
					mdMu.Lock()
					legal := md.apply(i, actor, to)
					want := md.legal[i]
					mdMu.Unlock()
					made.Add(1)
					// Wait for ralph-gate to have dealt with this move: a legal one recorded
					// as the last legal state, an illegal one set back on the board.
					deadline := time.Now().Add(120 * time.Second)
					for {
						done := false
						if legal {
							done = lastLegal(itemIDs[i]) == want
						} else {
							st, err := simState(simURL)
							done = err == nil && issueField(st, i) == want
						}
						if done {
							break
						}
						if time.Now().After(deadline) {
							errs <- fmt.Errorf("#%d: move %s → %q by %s (legal=%v) not handled within 2m", i, md.legal[i], to, actor, legal)
							return
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
			}
		}(d)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	<-kills

	// Every explanation lands (a job interrupted between revert and comment finishes it).
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := simState(simURL)
		if err == nil && md.matches(st, "ralph-gate[bot]") {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	st, err := simState(simURL)
	if err != nil {
		t.Fatal(err)
	}
	md.check(t, st, "ralph-gate[bot]")
	md.checkLocks(t, func(i int) string {
		var holder string
		if err := db.QueryRow(`SELECT lock_holder FROM items WHERE issue_number = ?`, i).Scan(&holder); err != nil {
			t.Errorf("#%d: %v", i, err)
		}
		return holder
	})

	// Nothing processed twice: one decision per delivery, one revert write per refused move.
	rows, err := db.Query(`SELECT delivery_id, COUNT(*) FROM audit_log WHERE delivery_id <> '' AND verdict IN ('allowed', 'reverted') GROUP BY delivery_id HAVING COUNT(*) > 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var n int
		rows.Scan(&id, &n)
		t.Errorf("delivery %s decided %d times", id, n)
	}
	rows.Close()
	var log struct {
		Entries []ghsim.RequestEntry `json:"entries"`
	}
	getJSON(t, simURL+"/_sim/requests?limit=-1", &log)
	writes, comments := 0, 0
	for _, r := range log.Entries {
		if r.TokenKind != "installation" || r.Status != http.StatusOK {
			continue
		}
		for _, op := range r.Operations {
			switch op {
			case "graphql:updateProjectV2ItemFieldValue", "graphql:clearProjectV2ItemFieldValue":
				writes++
			case "graphql:addComment":
				comments++
			}
		}
	}
	illegal := countIllegal(md)
	if writes != illegal {
		t.Errorf("ralph-gate wrote %d values for %d refused moves: each must be reverted exactly once", writes, illegal)
	}
	mu.Lock()
	app.stop()
	mu.Unlock()
	logs, _ := os.ReadFile(filepath.Join(dir, "ralph-gate.log"))
	checkNoSecrets(t, string(logs), string(key), "demo-webhook-secret")
	var recovered []string
	for _, m := range regexp.MustCompile(`"jobs":(\d+)[^\n]*recovered jobs`).FindAllStringSubmatch(string(logs), -1) {
		recovered = append(recovered, m[1])
	}
	if os.Getenv("RALPH_GATE_CRASH_DEBUG") != "" {
		for _, l := range strings.Split(string(logs), "\n") {
			if strings.Contains(l, "periodic") || strings.Contains(l, "reconcil") || strings.Contains(l, "sweep") {
				t.Log(l)
			}
		}
	}
	redelivered := strings.Count(string(logs), "redelivered a failed webhook")
	passes := strings.Count(string(logs), `"message":"reconciliation"`)
	t.Logf("%d moves (%d illegal), 2 SIGKILLs; %d revert writes, %d comments created; jobs recovered at the restarts: %v; %d failed deliveries redelivered by the sweeper; %d reconciliation passes; %d log bytes checked for secrets",
		md.moves, illegal, writes, comments, recovered, redelivered, passes, len(logs))
}

// matches is check without reporting.
func (md *model) matches(st ghsim.State, appLogin string) bool {
	ok := true
	byNumber := map[int]ghsim.IssueState{}
	for _, is := range st.Issues {
		byNumber[is.Number] = is
	}
	for i, want := range md.legal {
		is := byNumber[i]
		if is.Fields["Workflow State"] != want {
			ok = false
		}
		n := 0
		for _, c := range is.Comments {
			if c.Author == appLogin {
				n += strings.Count(c.Body, "<!-- ralph-transition:")
			}
		}
		if n != len(md.illegal[i]) {
			ok = false
		}
	}
	return ok
}

func checkNoSecrets(t *testing.T, logs, pem, secret string) {
	t.Helper()
	for _, line := range strings.Split(pem, "\n") {
		if len(line) >= 40 && strings.Contains(logs, line) {
			t.Error("the private key is in the logs")
			return
		}
	}
	if strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, secret) {
		t.Error("a PEM header or the webhook secret is in the logs")
	}
	if m := regexp.MustCompile(`ghs_[0-9a-f]{20,}|eyJ[A-Za-z0-9_-]{10,}\.`).FindString(logs); m != "" {
		t.Errorf("a token is in the logs: %q", m)
	}
}

func simState(simURL string) (ghsim.State, error) {
	resp, err := http.Get(simURL + "/_sim/state")
	if err != nil {
		return ghsim.State{}, err
	}
	defer resp.Body.Close()
	var st ghsim.State
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func issueField(st ghsim.State, number int) string {
	for _, is := range st.Issues {
		if is.Number == number {
			return is.Fields["Workflow State"]
		}
	}
	return "?"
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// buildBinaries builds ralph-gate and ghsim into dir/bin.
func buildBinaries(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"ralph-gate", "ghsim"} {
		bin := filepath.Join(dir, "bin", name)
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
		cmd.Dir = ".."
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, b)
		}
		out[name] = bin
	}
	return out
}

type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startChild runs a binary with its output appended to dir/NAME.log.
func startChild(t *testing.T, dir, name, bin string, env []string, args ...string) *child {
	t.Helper()
	logFile, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logFile.Close(); close(c.done) }()
	t.Cleanup(c.stop) // a child never outlives its test, whatever ended it (one was found serving an hour later)
	return c
}

// kill is a crash: SIGKILL, no chance to clean up.
func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// stop asks for a graceful shutdown, then kills after 30 s.
func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.kill()
	}
}

func waitHTTP(t *testing.T, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within %s", url, within)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
