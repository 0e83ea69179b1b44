package ghsim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// The /_sim/ API: inspection and control for tests, the demo and benchmarks. It is not GitHub's
// and needs no credentials (ghsim listens on loopback only).
func (s *Server) simRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /_sim/state", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.State()) })
	mux.HandleFunc("GET /_sim/requests", s.simRequests)
	mux.HandleFunc("GET /_sim/deliveries", s.simDeliveries)
	mux.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.GetFaults()) })
	mux.HandleFunc("POST /_sim/faults", s.simSetFaults)
	mux.HandleFunc("POST /_sim/merge", s.simMerge)
	mux.HandleFunc("POST /_sim/push", s.simPush)
	mux.HandleFunc("POST /_sim/install", s.simInstall)
	mux.HandleFunc("POST /_sim/reset", s.simReset)
	mux.HandleFunc("GET /_sim/config", s.simGetConfig)
	mux.HandleFunc("POST /_sim/config", s.simSetConfig)
	s.secondaryRoutes(mux)
}

func simDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad JSON: " + err.Error()})
		return false
	}
	return true
}

// simRequests answers the request log; ?limit=N keeps the N most recent entries (default 1000,
// -1 for all retained).
func (s *Server) simRequests(w http.ResponseWriter, r *http.Request) {
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "limit must be an integer"})
			return
		}
		limit = n
	}
	writeJSON(w, http.StatusOK, s.log.snapshot(limit))
}

type simDelivery struct {
	Delivery
	Success bool              `json:"success"`
	Headers map[string]string `json:"headers"`
	Payload json.RawMessage   `json:"payload"`
}

func (s *Server) simDeliveries(w http.ResponseWriter, _ *http.Request) {
	out := []simDelivery{}
	for _, d := range s.Deliveries() {
		p := d.Payload()
		if len(p) == 0 {
			p = json.RawMessage("null")
		}
		out = append(out, simDelivery{Delivery: d, Success: d.Success(), Headers: d.headers, Payload: p})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) simSetFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	if !simDecode(w, r, &f) {
		return
	}
	if err := s.SetFaults(f); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, s.GetFaults())
}

func (s *Server) simMerge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Org    string `json:"org"`
		Repo   string `json:"repo"`
		Number int    `json:"number"`
		By     string `json:"by"`
	}
	if !simDecode(w, r, &in) {
		return
	}
	repoName := in.Repo
	if in.Org != "" {
		repoName = in.Org + "/" + in.Repo
	}
	if err := s.Merge(repoName, in.Number, in.By); err != nil {
		simError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"merged": true})
}

// simError answers a refusal of the world: 404 for what does not exist, else 422.
func simError(w http.ResponseWriter, err error) {
	status := http.StatusUnprocessableEntity
	var nf notFoundError
	if errors.As(err, &nf) {
		status = http.StatusNotFound
	}
	writeJSON(w, status, map[string]any{"error": err.Error()})
}

// simPush is POST /_sim/push: {"org"?, "repo", "files": {path: text or null}, "by"?,
// "message"?} makes a commit on the repository's default branch and sends the push webhook;
// it answers {"sha", "before"}.
func (s *Server) simPush(w http.ResponseWriter, r *http.Request) {
	var in Push
	if !simDecode(w, r, &in) {
		return
	}
	res, err := s.Push(in)
	if err != nil {
		simError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) simReset(w http.ResponseWriter, _ *http.Request) {
	if err := s.Reset(); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reset": true})
}

func (s *Server) simGetConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"webhook_url": s.hooks.getURL()})
}

func (s *Server) simSetConfig(w http.ResponseWriter, r *http.Request) {
	var in struct {
		WebhookURL *string `json:"webhook_url"`
	}
	if !simDecode(w, r, &in) {
		return
	}
	if in.WebhookURL != nil {
		s.SetWebhookURL(*in.WebhookURL)
	}
	s.simGetConfig(w, r)
}

// simInstall is POST /_sim/install: {"org", "action": "created"|"deleted"|"added"|"removed",
// "by"?, "installation_id"?, "repositories"?} installs the App on an organization, uninstalls it,
// or adds or removes repositories of its installation, and sends the installation or
// installation_repositories webhook; it answers the installation ({"id", "installed",
// "repository_selection", "repositories"}).
func (s *Server) simInstall(w http.ResponseWriter, r *http.Request) {
	var in Install
	if !simDecode(w, r, &in) {
		return
	}
	res, err := s.Install(in)
	if err != nil {
		simError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
