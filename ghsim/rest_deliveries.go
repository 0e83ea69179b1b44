package ghsim

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// The app's hook deliveries API: newest first, cursor pagination through the Link header.

func deliveryJSON(d Delivery) map[string]any {
	return map[string]any{
		"id": d.ID, "guid": d.GUID, "delivered_at": ts(d.DeliveredAt), "redelivery": d.Redelivery,
		"duration": d.Duration, "status": d.Status, "status_code": d.StatusCode, "event": d.Event,
		"action": d.Action, "installation_id": d.InstallationID, "repository_id": d.RepositoryID, "throttled_at": nil,
	}
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	per := 30
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusUnprocessableEntity, "per_page must be a positive integer")
			return
		}
		per = min(n, 100)
	}
	status := q.Get("status")
	if status != "" && status != "success" && status != "failure" {
		writeError(w, http.StatusUnprocessableEntity, "status must be success or failure")
		return
	}
	all := s.hooks.list()
	var list []Delivery
	for i := len(all) - 1; i >= 0; i-- {
		if status == "" || (status == "success") == all[i].Success() {
			list = append(list, all[i])
		}
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		id, err2 := strconv.ParseInt(string(b), 10, 64)
		if err != nil || err2 != nil {
			writeError(w, http.StatusBadRequest, "Invalid cursor")
			return
		}
		for start < len(list) && list[start].ID > id {
			start++
		}
	}
	end := min(start+per, len(list))
	if end < len(list) {
		next := url.Values{}
		next.Set("per_page", strconv.Itoa(per))
		next.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(list[end].ID, 10))))
		if status != "" {
			next.Set("status", status)
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, s.publicURL(), r.URL.Path, next.Encode()))
	}
	out := make([]any, 0, end-start)
	for _, d := range list[start:end] {
		out = append(out, deliveryJSON(d))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	d, ok := s.hooks.get(id)
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	out := deliveryJSON(d)
	out["url"] = d.URL
	out["request"] = map[string]any{"headers": d.headers, "payload": d.Payload()}
	var respHeaders any = d.respHeaders
	if d.respHeaders == nil {
		respHeaders = map[string]string{}
	}
	out["response"] = map[string]any{"headers": respHeaders, "payload": d.respBody}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if _, ok := s.hooks.redeliver(id); !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{})
}
