package ghsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

const docsURL = "https://docs.github.com/rest"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in GitHub's REST error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "documentation_url": docsURL, "status": strconv.Itoa(status)})
}

// writeWorldError maps the world's refusals to REST statuses.
func writeWorldError(w http.ResponseWriter, err error) {
	var nf notFoundError
	var inv invalidError
	switch {
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, "Not Found")
	case errors.As(err, &inv):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]any{"code": "invalid", "message": inv.msg}}, "documentation_url": docsURL, "status": "422"})
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// readBody reads a request body of at most 1 MiB.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("Problems parsing JSON")
	}
	return nil
}

// page applies GitHub's per_page (default 30, max 100) and page parameters, setting the Link
// header, and returns the slice bounds.
func page(w http.ResponseWriter, r *http.Request, publicURL string, n int) (lo, hi int, ok bool) {
	q := r.URL.Query()
	per := 30
	if s := q.Get("per_page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			writeError(w, http.StatusUnprocessableEntity, "per_page must be a positive integer")
			return 0, 0, false
		}
		per = min(v, 100)
	}
	p := 1
	if s := q.Get("page"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			writeError(w, http.StatusUnprocessableEntity, "page must be a positive integer")
			return 0, 0, false
		}
		p = v
	}
	lastPage := max(1, (n+per-1)/per)
	link := func(pg int, rel string) string {
		u := url.URL{Path: r.URL.Path}
		v := r.URL.Query()
		v.Set("per_page", strconv.Itoa(per))
		v.Set("page", strconv.Itoa(pg))
		u.RawQuery = v.Encode()
		return fmt.Sprintf(`<%s%s>; rel="%s"`, publicURL, u.String(), rel)
	}
	var links []string
	if p < lastPage {
		links = append(links, link(p+1, "next"), link(lastPage, "last"))
	}
	if p > 1 {
		links = append(links, link(1, "first"), link(min(p-1, lastPage), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((p-1)*per, n)
	hi = min(lo+per, n)
	return lo, hi, true
}
