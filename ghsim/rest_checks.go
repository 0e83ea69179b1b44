package ghsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check runs, as GitHub's REST "Check runs" API documents them: an App's installation creates
// and updates them on a commit of a repository (permission checks: write), anyone who may read
// the repository lists them. ghsim sends no check_run or check_suite webhooks (a seed
// subscribing to them is refused) and models no actions or images.

// checkRun is one check run; output's fields are kept as given (annotations accumulate).
type checkRun struct {
	id          int64
	nodeID      string
	repo        *repo
	headSHA     string
	name        string
	status      string
	conclusion  string
	startedAt   *time.Time
	completedAt *time.Time
	externalID  string
	detailsURL  string
	title       string
	summary     string
	text        string
	annotations []Annotation
	suiteID     int64
	createdAt   time.Time
}

// Annotation is one annotation of a check run's output.
type Annotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	StartColumn     *int   `json:"start_column,omitempty"`
	EndColumn       *int   `json:"end_column,omitempty"`
	AnnotationLevel string `json:"annotation_level"`
	Message         string `json:"message"`
	Title           string `json:"title,omitempty"`
	RawDetails      string `json:"raw_details,omitempty"`
}

// The values GitHub documents; "waiting", "requested" and "pending" are set by GitHub Actions
// only, and "stale" by GitHub only.
var (
	checkStatuses    = []string{"queued", "in_progress", "completed"}
	checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
	annotationLevels = []string{"notice", "warning", "failure"}
)

// maxAnnotations is how many annotations one request may add (GitHub: "limited to 50").
const maxAnnotations = 50

// checkRunInput is the body of POST and PATCH; unknown keys are refused.
type checkRunInput struct {
	Name        *string          `json:"name"`
	HeadSHA     *string          `json:"head_sha"`
	DetailsURL  *string          `json:"details_url"`
	ExternalID  *string          `json:"external_id"`
	Status      *string          `json:"status"`
	Conclusion  *string          `json:"conclusion"`
	StartedAt   *string          `json:"started_at"`
	CompletedAt *string          `json:"completed_at"`
	Output      *checkOutputJSON `json:"output"`
	Actions     json.RawMessage  `json:"actions"`
}

type checkOutputJSON struct {
	Title       *string         `json:"title"`
	Summary     *string         `json:"summary"`
	Text        *string         `json:"text"`
	Annotations []annotationIn  `json:"annotations"`
	Images      json.RawMessage `json:"images"`
	// Read-only fields a client may echo back (go-github's CheckRunOutput has them): ignored.
	AnnotationsCount *int    `json:"annotations_count"`
	AnnotationsURL   *string `json:"annotations_url"`
}

type annotationIn struct {
	Path            *string `json:"path"`
	StartLine       *int    `json:"start_line"`
	EndLine         *int    `json:"end_line"`
	StartColumn     *int    `json:"start_column"`
	EndColumn       *int    `json:"end_column"`
	AnnotationLevel *string `json:"annotation_level"`
	Message         *string `json:"message"`
	Title           *string `json:"title"`
	RawDetails      *string `json:"raw_details"`
}

// invalidRequest answers 422 in the shape of GitHub's request validation.
func invalidRequest(w http.ResponseWriter, format string, a ...any) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Invalid request.\n\n" + fmt.Sprintf(format, a...),
		"documentation_url": "https://docs.github.com/rest/checks/runs", "status": "422"})
}

func missing(name string) string { return fmt.Sprintf("%q wasn't supplied.", name) }

func notMember(prop, v string, allowed []string) string {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("For 'properties/%s', %q is not a member of [%s].", prop, v, strings.Join(q, ", "))
}

// checkWriter authorizes a write of check runs: only an installation (an App) with checks:
// write, on a repository it sees. Callers hold the world's lock; nil means answered.
func (s *Server) checkWriter(w http.ResponseWriter, r *http.Request) *repo {
	p := principalFrom(r.Context())
	rp := s.repoFrom(r)
	switch {
	case rp == nil:
		writeError(w, http.StatusNotFound, "Not Found")
	case p.kind != installationToken:
		writeError(w, http.StatusForbidden, "You must authenticate via a GitHub App.")
	case !p.inst.can("checks", "write"):
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
	default:
		return rp
	}
	return nil
}

// checkReader authorizes a read: a user, or an installation with checks: read.
func (s *Server) checkReader(w http.ResponseWriter, r *http.Request) *repo {
	p := principalFrom(r.Context())
	rp := s.repoFrom(r)
	switch {
	case rp == nil:
		writeError(w, http.StatusNotFound, "Not Found")
	case p.kind == installationToken && !p.inst.can("checks", "read"):
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
	default:
		return rp
	}
	return nil
}

func decodeCheckRun(w http.ResponseWriter, r *http.Request) (checkRunInput, bool) {
	var in checkRunInput
	body, err := readBody(r)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(&in)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON: " + err.Error(), "documentation_url": docsURL, "status": "400"})
		return in, false
	}
	switch {
	case len(in.Actions) > 0 && string(in.Actions) != "null":
		invalidRequest(w, "ghsim does not model check run actions")
		return in, false
	case in.Output != nil && len(in.Output.Images) > 0 && string(in.Output.Images) != "null":
		invalidRequest(w, "ghsim does not model check run output images")
		return in, false
	}
	return in, true
}

// apply validates in and applies it to cr (a new run when create); "" when it was valid, else
// the validation message (cr may then be partly changed: callers apply to a copy).
func (in checkRunInput) apply(cr *checkRun, create bool, now time.Time) string {
	if in.Name != nil && *in.Name != "" {
		cr.name = *in.Name
	}
	if cr.name == "" {
		return missing("name")
	}
	str := func(p *string, dst *string) {
		if p != nil {
			*dst = *p
		}
	}
	str(in.DetailsURL, &cr.detailsURL)
	str(in.ExternalID, &cr.externalID)
	if in.Status != nil {
		if !slices.Contains(checkStatuses, *in.Status) {
			return notMember("status", *in.Status, checkStatuses)
		}
		cr.status = *in.Status
	}
	parseTime := func(prop string, v *string, dst **time.Time) string {
		if v == nil {
			return ""
		}
		t, err := time.Parse(time.RFC3339Nano, *v)
		if err != nil {
			return fmt.Sprintf("For 'properties/%s', %q is not a date-time (ISO 8601: YYYY-MM-DDTHH:MM:SSZ).", prop, *v)
		}
		t = t.UTC().Truncate(time.Second)
		*dst = &t
		return ""
	}
	if msg := parseTime("started_at", in.StartedAt, &cr.startedAt); msg != "" {
		return msg
	}
	if msg := parseTime("completed_at", in.CompletedAt, &cr.completedAt); msg != "" {
		return msg
	}
	if in.Conclusion != nil {
		if !slices.Contains(checkConclusions, *in.Conclusion) {
			return notMember("conclusion", *in.Conclusion, checkConclusions)
		}
		// "Providing conclusion will automatically set the status parameter to completed."
		cr.conclusion, cr.status = *in.Conclusion, "completed"
	}
	if (cr.status == "completed" || in.CompletedAt != nil) && cr.conclusion == "" {
		return missing("conclusion")
	}
	if cr.status == "completed" && cr.completedAt == nil {
		t := now
		cr.completedAt = &t
	}
	if cr.startedAt == nil && create {
		t := now
		cr.startedAt = &t
	}
	if o := in.Output; o != nil {
		switch {
		case o.Title == nil:
			return missing("output.title")
		case o.Summary == nil:
			return missing("output.summary")
		case len(*o.Summary) > 65535:
			return "For 'properties/output/summary', the summary is longer than 65535 characters."
		case o.Text != nil && len(*o.Text) > 65535:
			return "For 'properties/output/text', the text is longer than 65535 characters."
		case len(o.Annotations) > maxAnnotations:
			return fmt.Sprintf("For 'properties/output/annotations', %d annotations were given: at most %d per request.", len(o.Annotations), maxAnnotations)
		}
		cr.title, cr.summary = *o.Title, *o.Summary
		if o.Text != nil {
			cr.text = *o.Text
		}
		for i, a := range o.Annotations {
			where := fmt.Sprintf("output.annotations[%d].", i)
			switch {
			case a.Path == nil:
				return missing(where + "path")
			case a.StartLine == nil:
				return missing(where + "start_line")
			case a.EndLine == nil:
				return missing(where + "end_line")
			case a.AnnotationLevel == nil:
				return missing(where + "annotation_level")
			case a.Message == nil:
				return missing(where + "message")
			case !slices.Contains(annotationLevels, *a.AnnotationLevel):
				return notMember("output/annotations/annotation_level", *a.AnnotationLevel, annotationLevels)
			case *a.StartLine < 1 || *a.EndLine < *a.StartLine:
				return fmt.Sprintf("%sstart_line and end_line must be positive with start_line <= end_line.", where)
			case (a.StartColumn != nil || a.EndColumn != nil) && *a.StartLine != *a.EndLine:
				return fmt.Sprintf("%sstart_column and end_column are only valid when start_line equals end_line.", where)
			}
			an := Annotation{Path: *a.Path, StartLine: *a.StartLine, EndLine: *a.EndLine, StartColumn: a.StartColumn, EndColumn: a.EndColumn,
				AnnotationLevel: *a.AnnotationLevel, Message: *a.Message}
			str(a.Title, &an.Title)
			str(a.RawDetails, &an.RawDetails)
			// "Annotations are appended to the list of annotations that already exist."
			cr.annotations = append(cr.annotations, an)
		}
	}
	return ""
}

// createCheckRun is POST /repos/{owner}/{repo}/check-runs.
func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeCheckRun(w, r)
	if !ok {
		return
	}
	s.w.mu.Lock()
	defer s.flushLocked()
	rp := s.checkWriter(w, r)
	if rp == nil {
		return
	}
	if in.Name == nil || *in.Name == "" {
		invalidRequest(w, "%s", missing("name"))
		return
	}
	if in.HeadSHA == nil || *in.HeadSHA == "" {
		invalidRequest(w, "%s", missing("head_sha"))
		return
	}
	if rp.commitBySHA(*in.HeadSHA) == nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "No commit found for SHA: " + *in.HeadSHA,
			"documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run", "status": "422"})
		return
	}
	now := s.w.clock()
	cr := &checkRun{repo: rp, headSHA: *in.HeadSHA, status: "queued", createdAt: now}
	if msg := in.apply(cr, true, now); msg != "" {
		invalidRequest(w, "%s", msg)
		return
	}
	cr.id = s.w.ids.take("check_run")
	cr.nodeID = nodeID("CR", cr.id)
	suite := rp.fullName() + "@" + cr.headSHA
	if s.w.suites[suite] == 0 {
		s.w.suites[suite] = s.w.ids.take("check_suite")
	}
	cr.suiteID = s.w.suites[suite]
	rp.checkRuns = append(rp.checkRuns, cr)
	s.w.checkRuns[cr.id] = cr
	w.Header().Set("Location", s.w.apiURL("/repos/%s/check-runs/%d", rp.fullName(), cr.id))
	writeJSON(w, http.StatusCreated, s.w.checkRunJSON(cr))
}

// checkRunFrom finds {check_run_id} in the path's repository (callers hold the lock).
func (s *Server) checkRunFrom(r *http.Request, rp *repo) *checkRun {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if cr := s.w.checkRuns[id]; err == nil && cr != nil && cr.repo == rp {
		return cr
	}
	return nil
}

// updateCheckRun is PATCH /repos/{owner}/{repo}/check-runs/{id}. An empty or absent name keeps
// the run's name (go-github always sends name).
func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeCheckRun(w, r)
	if !ok {
		return
	}
	s.w.mu.Lock()
	defer s.flushLocked()
	rp := s.checkWriter(w, r)
	if rp == nil {
		return
	}
	cr := s.checkRunFrom(r, rp)
	if cr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if in.HeadSHA != nil {
		invalidRequest(w, "head_sha cannot be changed.")
		return
	}
	next := *cr
	next.annotations = slices.Clone(cr.annotations)
	if msg := in.apply(&next, false, s.w.clock()); msg != "" {
		invalidRequest(w, "%s", msg)
		return
	}
	*cr = next
	writeJSON(w, http.StatusOK, s.w.checkRunJSON(cr))
}

// getCheckRun is GET /repos/{owner}/{repo}/check-runs/{id}.
func (s *Server) getCheckRun(w http.ResponseWriter, r *http.Request) {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.checkReader(w, r)
	if rp == nil {
		return
	}
	cr := s.checkRunFrom(r, rp)
	if cr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.w.checkRunJSON(cr))
}

// listCheckRunAnnotations is GET /repos/{owner}/{repo}/check-runs/{id}/annotations.
func (s *Server) listCheckRunAnnotations(w http.ResponseWriter, r *http.Request) {
	base := s.publicURL()
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.checkReader(w, r)
	if rp == nil {
		return
	}
	cr := s.checkRunFrom(r, rp)
	if cr == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	lo, hi, ok := page(w, r, base, len(cr.annotations))
	if !ok {
		return
	}
	out := []any{}
	for _, a := range cr.annotations[lo:hi] {
		m := map[string]any{"path": a.Path, "start_line": a.StartLine, "end_line": a.EndLine, "start_column": a.StartColumn,
			"end_column": a.EndColumn, "annotation_level": a.AnnotationLevel, "message": a.Message, "title": a.Title,
			"raw_details": a.RawDetails, "blob_href": s.w.htmlURL("/%s/blob/%s/%s", rp.fullName(), cr.headSHA, a.Path)}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, out)
}

// listCheckRunsForRef is GET /repos/{owner}/{repo}/commits/{ref}/check-runs: check_name,
// status, filter (latest, the default: the newest run of each name; or all), app_id, per_page
// and page. Newest first.
func (s *Server) listCheckRunsForRef(w http.ResponseWriter, r *http.Request) {
	base := s.publicURL()
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	rp := s.checkReader(w, r)
	if rp == nil {
		return
	}
	c := rp.commitByRef(r.PathValue("ref"))
	if c == nil {
		writeError(w, http.StatusNotFound, "No commit found for the ref "+r.PathValue("ref"))
		return
	}
	q := r.URL.Query()
	filter := q.Get("filter")
	if filter == "" {
		filter = "latest"
	}
	if filter != "latest" && filter != "all" {
		invalidRequest(w, "%s", notMember("filter", filter, []string{"latest", "all"}))
		return
	}
	if st := q.Get("status"); st != "" && !slices.Contains(checkStatuses, st) {
		invalidRequest(w, "%s", notMember("status", st, checkStatuses))
		return
	}
	var runs []*checkRun
	seen := map[string]bool{}
	for i := len(rp.checkRuns) - 1; i >= 0; i-- {
		cr := rp.checkRuns[i]
		switch {
		case cr.headSHA != c.sha,
			q.Get("check_name") != "" && cr.name != q.Get("check_name"),
			q.Get("status") != "" && cr.status != q.Get("status"),
			q.Get("app_id") != "" && q.Get("app_id") != strconv.FormatInt(s.w.app.id, 10),
			filter == "latest" && seen[cr.name]:
			continue
		}
		seen[cr.name] = true
		runs = append(runs, cr)
	}
	lo, hi, ok := page(w, r, base, len(runs))
	if !ok {
		return
	}
	out := []any{}
	for _, cr := range runs[lo:hi] {
		out = append(out, s.w.checkRunJSON(cr))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out})
}

// checkRunJSON is a check run as the checks API answers it.
func (w *world) checkRunJSON(cr *checkRun) map[string]any {
	full := cr.repo.fullName()
	api := w.apiURL("/repos/%s/check-runs/%d", full, cr.id)
	var conclusion, externalID, detailsURL, title, summary, text any
	if cr.conclusion != "" {
		conclusion = cr.conclusion
	}
	externalID, detailsURL = cr.externalID, cr.detailsURL
	if cr.detailsURL == "" {
		detailsURL = w.htmlURL("/%s/runs/%d", full, cr.id)
	}
	if cr.title != "" || cr.summary != "" {
		title, summary = cr.title, cr.summary
	}
	if cr.text != "" {
		text = cr.text
	}
	return map[string]any{
		"id": cr.id, "node_id": cr.nodeID, "head_sha": cr.headSHA, "external_id": externalID, "url": api,
		"html_url": w.htmlURL("/%s/runs/%d", full, cr.id), "details_url": detailsURL,
		"status": cr.status, "conclusion": conclusion, "started_at": formatTime(cr.startedAt), "completed_at": formatTime(cr.completedAt),
		"output": map[string]any{"title": title, "summary": summary, "text": text, "annotations_count": len(cr.annotations),
			"annotations_url": api + "/annotations"},
		"name":        cr.name,
		"check_suite": map[string]any{"id": cr.suiteID},
		"app": map[string]any{"id": w.app.id, "slug": w.app.slug, "node_id": nodeID("A", w.app.id), "name": w.app.name,
			"owner": w.orgAsOwnerJSON(w.org), "html_url": w.htmlURL("/apps/%s", w.app.slug),
			"created_at": ts(seedEpoch), "updated_at": ts(seedEpoch), "permissions": w.app.permissions, "events": w.app.events},
		"pull_requests": []any{},
	}
}
