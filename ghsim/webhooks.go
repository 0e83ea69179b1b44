package ghsim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Delivery is one recorded webhook delivery attempt, as the deliveries API reports it.
type Delivery struct {
	ID             int64     `json:"id"`
	GUID           string    `json:"guid"`
	DeliveredAt    time.Time `json:"delivered_at"`
	Redelivery     bool      `json:"redelivery"`
	Duration       float64   `json:"duration"`
	Status         string    `json:"status"`
	StatusCode     int       `json:"status_code"`
	Event          string    `json:"event"`
	Action         string    `json:"action"`
	InstallationID int64     `json:"installation_id"`
	RepositoryID   *int64    `json:"repository_id"`
	URL            string    `json:"url"`
	// Dropped marks a delivery a fault kept from the receiver; Duplicate a fault's second copy.
	Dropped   bool `json:"dropped,omitempty"`
	Duplicate bool `json:"duplicate,omitempty"`
	// EventSeq is the order the simulator created the event in (1, 2, …): the true order of
	// the changes, which GitHub does not publish, for the suites' oracles.
	EventSeq uint64 `json:"-"`

	headers     map[string]string
	body        []byte
	respHeaders map[string]string
	respBody    string
}

// Success reports a 2xx answer, GitHub's definition of a successful delivery.
func (d Delivery) Success() bool { return d.StatusCode >= 200 && d.StatusCode < 300 }

type outgoing struct {
	seq                 uint64
	event, action, guid string
	body                []byte
	installationID      int64
	repositoryID        *int64
	redelivery          bool
	duplicate           bool
}

const webhookTimeout = 10 * time.Second

// dispatcher delivers webhooks from one goroutine, in order (unless a reorder fault is set),
// signing each with the webhook secret and recording the outcome.
type dispatcher struct {
	secret string
	hookID int64
	appID  int64
	seed   uint64
	now    func() time.Time
	faults *faultState
	client *http.Client

	mu         sync.Mutex
	url        string
	queue      []outgoing
	inFlight   bool
	nextGUID   uint64
	nextID     int64
	deliveries []Delivery
	wake       chan struct{}
	idle       chan struct{} // closed and replaced whenever the queue drains
	ctx        context.Context
	cancel     context.CancelFunc
	done       chan struct{}
}

func newDispatcher(url, secret string, appID int64, seed uint64, now func() time.Time, faults *faultState) *dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dispatcher{
		secret: secret, hookID: 400_000_000 + appID, appID: appID, seed: seed, now: now,
		faults: faults, client: &http.Client{Timeout: webhookTimeout}, url: url, nextID: idBases["delivery"],
		wake: make(chan struct{}, 1), idle: make(chan struct{}), ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	close(d.idle)
	go d.loop()
	return d
}

func (d *dispatcher) setURL(u string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.url = u
}

func (d *dispatcher) getURL() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.url
}

// enqueue queues new events in order, each with a fresh delivery GUID.
func (d *dispatcher) enqueue(evs []event) {
	if len(evs) == 0 {
		return
	}
	d.mu.Lock()
	for _, e := range evs {
		d.nextGUID++
		d.queue = append(d.queue, outgoing{seq: d.nextGUID, event: e.name, action: e.action, guid: deterministicUUID(d.seed, d.nextGUID), body: e.body,
			installationID: e.installationID, repositoryID: e.repositoryID})
	}
	d.markBusyLocked()
	d.mu.Unlock()
	d.signal()
}

// redeliver queues a recorded delivery again with its GUID, flagged as a redelivery.
func (d *dispatcher) redeliver(id int64) (Delivery, bool) {
	d.mu.Lock()
	var found *Delivery
	for i := range d.deliveries {
		if d.deliveries[i].ID == id {
			found = &d.deliveries[i]
		}
	}
	if found == nil {
		d.mu.Unlock()
		return Delivery{}, false
	}
	orig := *found
	d.queue = append(d.queue, outgoing{seq: orig.EventSeq, event: orig.Event, action: orig.Action, guid: orig.GUID, body: orig.body,
		installationID: orig.InstallationID, repositoryID: orig.RepositoryID, redelivery: true})
	d.markBusyLocked()
	d.mu.Unlock()
	d.signal()
	return orig, true
}

func (d *dispatcher) markBusyLocked() {
	select {
	case <-d.idle:
		d.idle = make(chan struct{})
	default:
	}
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// waitIdle blocks until every queued delivery has been attempted.
func (d *dispatcher) waitIdle(ctx context.Context) error {
	for {
		d.mu.Lock()
		idle := d.idle
		busy := len(d.queue) > 0 || d.inFlight
		d.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (d *dispatcher) close() {
	d.cancel()
	<-d.done
}

func (d *dispatcher) loop() {
	defer close(d.done)
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.wake:
		}
		for {
			batch := d.take()
			if batch == nil {
				break
			}
			for _, o := range batch {
				d.attempt(o)
			}
			d.mu.Lock()
			d.inFlight = false
			if len(d.queue) == 0 {
				close(d.idle)
			}
			d.mu.Unlock()
			if d.ctx.Err() != nil {
				return
			}
		}
	}
}

// take removes the next delivery, or with a reorder fault the deliveries queued within the
// gathering window (at most maxReorderBatch), newest first.
func (d *dispatcher) take() []outgoing {
	wf := d.faults.get().Webhook
	if wf.Reorder {
		window := max(time.Duration(wf.DelayMS)*time.Millisecond, 50*time.Millisecond)
		select {
		case <-time.After(window):
		case <-d.ctx.Done():
			return nil
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queue) == 0 {
		return nil
	}
	d.inFlight = true
	if !wf.Reorder {
		o := d.queue[0]
		d.queue = d.queue[1:]
		return []outgoing{o}
	}
	// Neighbours only: a backlog is not turned around whole (GitHub reorders deliveries made
	// close together; it does not hold the oldest back behind everything queued after it).
	n := min(len(d.queue), maxReorderBatch)
	batch := slices.Clone(d.queue[:n])
	d.queue = d.queue[n:]
	slices.Reverse(batch)
	return batch
}

// maxReorderBatch is how many neighbouring deliveries a reorder fault turns around at once.
const maxReorderBatch = 8

func (d *dispatcher) attempt(o outgoing) {
	wf, drop, dup := d.faults.webhookDraw()
	if wf.DelayMS > 0 && !wf.Reorder {
		select {
		case <-time.After(time.Duration(wf.DelayMS) * time.Millisecond):
		case <-d.ctx.Done():
			return
		}
	}
	d.send(o, drop)
	if dup {
		o.duplicate = true
		d.send(o, false)
	}
}

func sign(secret string, body []byte) (sha256Sig, sha1Sig string) {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	m1 := hmac.New(sha1.New, []byte(secret))
	m1.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil)), "sha1=" + hex.EncodeToString(m1.Sum(nil))
}

func (d *dispatcher) send(o outgoing, drop bool) {
	sig256, sig1 := sign(d.secret, o.body)
	headers := map[string]string{
		"Accept":                                 "*/*",
		"Content-Type":                           "application/json",
		"User-Agent":                             "GitHub-Hookshot/ghsim",
		"X-GitHub-Event":                         o.event,
		"X-GitHub-Delivery":                      o.guid,
		"X-GitHub-Hook-ID":                       strconv.FormatInt(d.hookID, 10),
		"X-GitHub-Hook-Installation-Target-Type": "integration",
		"X-GitHub-Hook-Installation-Target-ID":   strconv.FormatInt(d.appID, 10),
		"X-Hub-Signature":                        sig1,
		"X-Hub-Signature-256":                    sig256,
	}
	url := d.getURL()
	rec := Delivery{GUID: o.guid, DeliveredAt: d.now().UTC().Truncate(time.Second), Redelivery: o.redelivery,
		Event: o.event, Action: o.action, InstallationID: o.installationID, RepositoryID: o.repositoryID, URL: url, Dropped: drop, Duplicate: o.duplicate, EventSeq: o.seq,
		headers: headers, body: o.body}
	start := time.Now()
	switch {
	case drop:
		rec.Status = "ghsim: dropped by an injected fault"
	case url == "":
		rec.Status = "ghsim: no webhook URL configured"
	default:
		rec.StatusCode, rec.Status, rec.respHeaders, rec.respBody = d.post(url, headers, o.body)
	}
	rec.Duration = time.Since(start).Seconds()
	if drop && d.faults.get().Webhook.Unrecorded {
		return
	}
	d.mu.Lock()
	d.nextID++
	rec.ID = d.nextID - 1
	d.deliveries = append(d.deliveries, rec)
	d.mu.Unlock()
}

func (d *dispatcher) post(url string, headers map[string]string, body []byte) (int, string, map[string]string, string) {
	ctx, cancel := context.WithTimeout(d.ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "Invalid URL: " + err.Error(), nil, ""
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "timed out", nil, ""
		}
		return 0, "Connection refused", nil, ""
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	rh := map[string]string{}
	for k := range resp.Header {
		rh[k] = resp.Header.Get(k)
	}
	status := "OK"
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		status = fmt.Sprintf("Invalid HTTP Response: %d", resp.StatusCode)
	}
	return resp.StatusCode, status, rh, string(rb)
}

func (d *dispatcher) list() []Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.deliveries)
}

func (d *dispatcher) get(id int64) (Delivery, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, x := range d.deliveries {
		if x.ID == id {
			return x, true
		}
	}
	return Delivery{}, false
}

func (d *dispatcher) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deliveries = nil
}

// Payload returns the delivered JSON body.
func (d Delivery) Payload() json.RawMessage { return json.RawMessage(d.body) }

// Headers returns the request headers of the delivery.
func (d Delivery) Headers() map[string]string { return d.headers }
