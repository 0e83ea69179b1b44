package ghsim

import (
	"encoding/json"
	"slices"
	"time"
)

// Mutations change the world as GitHub would and queue the webhooks GitHub would send. Callers
// hold w.mu for writing.

// emit queues a webhook of an organization's installation with the organization and the
// installation added to its payload; nothing when the App is not installed there or does not
// subscribe to the event.
func (w *world) emit(o *organization, name, action string, payload map[string]any) {
	if o.inst == nil || !o.inst.installed || !w.subscribed(name) {
		return
	}
	payload["action"] = action
	payload["organization"] = w.orgJSON(o)
	payload["installation"] = map[string]any{"id": o.inst.id, "node_id": installationNodeID(o.inst.id)}
	var repoID *int64
	if r, ok := payload["repository"].(map[string]any); ok {
		if id, ok := r["id"].(int64); ok {
			repoID = &id
		}
	}
	w.queue(event{name: name, action: action, installationID: o.inst.id, repositoryID: repoID}, payload)
}

// queue renders a webhook's payload and queues it.
func (w *world) queue(ev event, payload map[string]any) {
	b, err := json.Marshal(payload)
	if err != nil {
		panic("ghsim: marshal webhook: " + err.Error())
	}
	ev.body = b
	w.pending = append(w.pending, ev)
}

// takePending hands the queued webhooks over, in the order the changes happened.
func (w *world) takePending() []event {
	p := w.pending
	w.pending = nil
	return p
}

func (w *world) lookupItem(projectID, itemID string) (*project, *item, error) {
	p, ok := w.nodes[projectID].(*project)
	if !ok {
		return nil, nil, errNotFound("Could not resolve to a node with the global id of '%s'", projectID)
	}
	it, ok := w.nodes[itemID].(*item)
	if !ok || it.project != p {
		return nil, nil, errNotFound("Could not resolve to a node with the global id of '%s'", itemID)
	}
	return p, it, nil
}

func (w *world) lookupField(p *project, fieldID string) (*field, error) {
	f, ok := w.nodes[fieldID].(*field)
	if !ok || f.project != p {
		return nil, errNotFound("Could not resolve to a node with the global id of '%s'", fieldID)
	}
	return f, nil
}

// fieldInput is the value a mutation writes (ProjectV2FieldValue): an option id for a
// single-select field, text for a text field, a number for a number field.
type fieldInput struct {
	optionID string
	text     *string
	number   *float64
}

// setFieldValue sets an item's value of a field; the input must be of the field's type.
// Writing the current value changes nothing and sends nothing, as on GitHub.
func (w *world) setFieldValue(by *actor, projectID, itemID, fieldID string, in fieldInput) (*item, error) {
	p, it, err := w.lookupItem(projectID, itemID)
	if err != nil {
		return nil, err
	}
	f, err := w.lookupField(p, fieldID)
	if err != nil {
		return nil, err
	}
	nv := &fieldValue{nodeID: fieldValueNodeID(it, f), item: it, field: f, creator: by}
	switch f.dataType {
	case FieldText:
		if in.text == nil || in.number != nil || in.optionID != "" {
			return nil, errInvalid("The field %s is a text field: provide value.text", f.name)
		}
		nv.text = *in.text
	case FieldNumber:
		if in.number == nil || in.text != nil || in.optionID != "" {
			return nil, errInvalid("The field %s is a number field: provide value.number", f.name)
		}
		nv.number = *in.number
	default:
		if in.text != nil || in.number != nil {
			return nil, errInvalid("The field %s is a single select field: provide value.singleSelectOptionId", f.name)
		}
		if in.optionID == "" {
			return nil, errInvalid("A value must be provided: singleSelectOptionId")
		}
		if nv.opt = f.option(in.optionID); nv.opt == nil {
			return nil, errInvalid("The single select option Id does not belong to the field")
		}
	}
	old := it.values[f]
	if old != nil && old.same(nv) {
		return it, nil
	}
	t := w.clock()
	nv.createdAt, nv.updatedAt = t, t
	if old != nil {
		nv.nodeID, nv.createdAt, nv.creator = old.nodeID, old.createdAt, old.creator
	}
	it.values[f] = nv
	it.updatedAt = t
	p.updatedAt = t
	w.emitFieldChange(it, f, old, nv, by)
	return it, nil
}

func (w *world) clearFieldValue(by *actor, projectID, itemID, fieldID string) (*item, error) {
	p, it, err := w.lookupItem(projectID, itemID)
	if err != nil {
		return nil, err
	}
	f, err := w.lookupField(p, fieldID)
	if err != nil {
		return nil, err
	}
	old := it.values[f]
	if old == nil {
		return it, nil
	}
	delete(it.values, f)
	it.updatedAt = w.clock()
	w.emitFieldChange(it, f, old, nil, by)
	return it, nil
}

// emitFieldChange sends projects_v2_item.edited with the change's field_value as GitHub's
// published schema describes it: the field's node id, type, name and project number, and
// from/to as the field's type holds them — a single-select option {id, name, color,
// description}, a text field's string, a number field's number — or null for no value.
func (w *world) emitFieldChange(it *item, f *field, from, to *fieldValue, by *actor) {
	w.emit(it.project.owner, "projects_v2_item", "edited", map[string]any{
		"projects_v2_item": w.itemJSON(it),
		"changes": map[string]any{"field_value": map[string]any{
			"field_node_id":  f.nodeID,
			"field_type":     f.dataType,
			"field_name":     f.name,
			"project_number": it.project.number,
			"from":           valueJSON(from),
			"to":             valueJSON(to),
		}},
		"sender": w.userJSON(by),
	})
}

// valueJSON is a field value as a projects_v2_item payload's from/to carries it.
func valueJSON(v *fieldValue) any {
	switch {
	case v == nil:
		return nil
	case v.field.dataType == FieldText:
		return v.text
	case v.field.dataType == FieldNumber:
		return v.number
	}
	return optionJSON(v.opt)
}

func (w *world) addItem(by *actor, projectID, contentID string) (*item, error) {
	p, ok := w.nodes[projectID].(*project)
	if !ok {
		return nil, errNotFound("Could not resolve to a node with the global id of '%s'", projectID)
	}
	var existing []*item
	switch c := w.nodes[contentID].(type) {
	case *issue:
		existing = c.items
	case *pullRequest:
		existing = c.items
	default:
		return nil, errNotFound("Could not resolve to a node with the global id of '%s'", contentID)
	}
	for _, it := range existing {
		if it.project == p {
			return it, nil
		}
	}
	it := w.newItem(p, w.nodes[contentID], by, w.clock())
	w.emit(p.owner, "projects_v2_item", "created", map[string]any{"projects_v2_item": w.itemJSON(it), "sender": w.userJSON(by)})
	return it, nil
}

func (w *world) setArchived(by *actor, projectID, itemID string, archived bool) (*item, error) {
	_, it, err := w.lookupItem(projectID, itemID)
	if err != nil {
		return nil, err
	}
	if it.archived == archived {
		return it, nil
	}
	t := w.clock()
	it.archived, it.updatedAt = archived, t
	action := "restored"
	changes := map[string]any{"archived_at": map[string]any{"from": formatTime(it.archivedAt), "to": nil}}
	if archived {
		it.archivedAt = &t
		action = "archived"
		changes = map[string]any{"archived_at": map[string]any{"from": nil, "to": formatTime(&t)}}
	} else {
		it.archivedAt = nil
	}
	w.emit(it.project.owner, "projects_v2_item", action, map[string]any{"projects_v2_item": w.itemJSON(it), "changes": changes, "sender": w.userJSON(by)})
	return it, nil
}

// deleteItem removes an item from its project (its issue or pull request stays) and sends
// projects_v2_item.deleted, as GitHub does.
func (w *world) deleteItem(by *actor, projectID, itemID string) (*item, error) {
	p, it, err := w.lookupItem(projectID, itemID)
	if err != nil {
		return nil, err
	}
	p.items = slices.DeleteFunc(p.items, func(x *item) bool { return x == it })
	switch c := it.content.(type) {
	case *issue:
		c.items = slices.DeleteFunc(c.items, func(x *item) bool { return x == it })
	case *pullRequest:
		c.items = slices.DeleteFunc(c.items, func(x *item) bool { return x == it })
	case *draft:
		c.items = slices.DeleteFunc(c.items, func(x *item) bool { return x == it })
	}
	delete(w.nodes, it.nodeID)
	p.updatedAt = w.clock()
	w.emit(p.owner, "projects_v2_item", "deleted", map[string]any{"projects_v2_item": w.itemJSON(it), "sender": w.userJSON(by)})
	return it, nil
}

func (w *world) addComment(by *actor, is *issue, body string) (*comment, error) {
	if body == "" {
		return nil, errInvalid("Body cannot be blank")
	}
	t := w.clock()
	c := w.newComment(is, by, body, t)
	is.updatedAt = t
	return c, nil
}

func (w *world) updateComment(by *actor, c *comment, body string) (*comment, error) {
	if body == "" {
		return nil, errInvalid("Body cannot be blank")
	}
	if c.body != body {
		c.body = body
		c.updatedAt = w.clock()
	}
	return c, nil
}

// closeIssue closes an issue with a reason (completed by default) and sends issues.closed.
func (w *world) closeIssue(by *actor, is *issue, reason string) error {
	switch reason {
	case "":
		reason = "completed"
	case "completed", "not_planned", "duplicate":
	default:
		return errInvalid("state_reason %q is not valid for closing", reason)
	}
	if is.state == "closed" {
		if is.stateReason == reason {
			return nil
		}
		is.stateReason = reason
		is.updatedAt = w.clock()
		return nil
	}
	t := w.clock()
	is.state, is.stateReason, is.closedAt, is.updatedAt = "closed", reason, &t, t
	w.addIssueEvent(is, "CLOSED_EVENT", by, t, reason)
	w.emit(is.repo.owner, "issues", "closed", map[string]any{"issue": w.issueJSON(is), "repository": w.repoJSON(is.repo), "sender": w.userJSON(by)})
	return nil
}

// addIssueEvent adds a close or reopen to the issue's timeline.
func (w *world) addIssueEvent(is *issue, kind string, by *actor, at time.Time, reason string) {
	prefix := map[bool]string{true: "CE", false: "REE"}[kind == "CLOSED_EVENT"]
	is.timeline = append(is.timeline, &issueEvent{nodeID: nodeID(prefix, w.ids.take("event")), kind: kind, actor: by, createdAt: at, reason: reason})
}

func (w *world) reopenIssue(by *actor, is *issue) error {
	if is.state == "open" {
		return nil
	}
	t := w.clock()
	is.state, is.stateReason, is.closedAt, is.updatedAt = "open", "reopened", nil, t
	w.addIssueEvent(is, "REOPENED_EVENT", by, t, "reopened")
	w.emit(is.repo.owner, "issues", "reopened", map[string]any{"issue": w.issueJSON(is), "repository": w.repoJSON(is.repo), "sender": w.userJSON(by)})
	return nil
}

func (w *world) editIssue(by *actor, is *issue, title, body *string) error {
	changes := map[string]any{}
	if title != nil && *title != is.title {
		if *title == "" {
			return errInvalid("title cannot be blank")
		}
		changes["title"] = map[string]any{"from": is.title}
		is.title = *title
	}
	if body != nil && *body != is.body {
		changes["body"] = map[string]any{"from": is.body}
		is.body = *body
	}
	if len(changes) == 0 {
		return nil
	}
	is.updatedAt = w.clock()
	w.emit(is.repo.owner, "issues", "edited", map[string]any{"issue": w.issueJSON(is), "changes": changes, "repository": w.repoJSON(is.repo), "sender": w.userJSON(by)})
	return nil
}

// mergePR merges a pull request: pull_request.closed (merged) first, then, like GitHub, its
// closing issues are closed as completed, each with its own issues.closed.
func (w *world) mergePR(by *actor, pr *pullRequest) error {
	if pr.merged {
		return errInvalid("Pull Request is not mergeable: already merged")
	}
	if pr.state == "closed" {
		return errInvalid("Pull Request is not mergeable: closed")
	}
	t := w.clock()
	pr.merged, pr.mergedAt, pr.mergedBy, pr.state, pr.closedAt, pr.updatedAt = true, &t, by, "closed", &t, t
	w.emit(pr.repo.owner, "pull_request", "closed", map[string]any{"number": pr.number, "pull_request": w.prJSON(pr),
		"repository": w.repoJSON(pr.repo), "sender": w.userJSON(by)})
	for _, is := range pr.closes {
		if err := w.closeIssue(by, is, "completed"); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) addSubIssue(parent, child *issue, replace bool) error {
	if parent == child {
		return errInvalid("An issue cannot be a sub-issue of itself")
	}
	for p := parent; p != nil; p = p.parent {
		if p == child {
			return errInvalid("Sub-issue would create a cycle")
		}
	}
	if child.parent == parent {
		return nil
	}
	if child.parent != nil {
		if !replace {
			return errInvalid("Issue may not contain duplicate sub-issues and Sub issue may only have one parent")
		}
		w.removeSubIssue(child.parent, child)
	}
	child.parent = parent
	parent.subIssues = append(parent.subIssues, child)
	parent.updatedAt = w.clock()
	return nil
}

func (w *world) removeSubIssue(parent, child *issue) {
	if child.parent != parent {
		return
	}
	child.parent = nil
	parent.subIssues = slices.DeleteFunc(parent.subIssues, func(x *issue) bool { return x == child })
}

func (w *world) addBlockedBy(is, blocker *issue) error {
	if is == blocker {
		return errInvalid("An issue cannot block itself")
	}
	if slices.Contains(is.blockedBy, blocker) {
		return nil
	}
	is.blockedBy = append(is.blockedBy, blocker)
	blocker.blocking = append(blocker.blocking, is)
	return nil
}

func (w *world) removeBlockedBy(is, blocker *issue) {
	is.blockedBy = slices.DeleteFunc(is.blockedBy, func(x *issue) bool { return x == blocker })
	blocker.blocking = slices.DeleteFunc(blocker.blocking, func(x *issue) bool { return x == is })
}
