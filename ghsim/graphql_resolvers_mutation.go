package ghsim

import (
	"encoding/json"
	"strings"
)

func mutationResolvers(rs resolverSet) {
	fieldsOf(rs, "Mutation", map[string]func(*execCtx, root, args) (any, error){
		"updateProjectV2ItemFieldValue": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			val, _ := in["value"].(map[string]any)
			for _, k := range []string{"date", "iterationId"} {
				if val[k] != nil {
					return nil, errInvalid("ghsim models single-select, text and number fields only; value.%s is not supported", k)
				}
			}
			var fv fieldInput
			fv.optionID, _ = val["singleSelectOptionId"].(string)
			if t, ok := val["text"].(string); ok {
				fv.text = &t
			}
			switch n := val["number"].(type) {
			case float64:
				fv.number = &n
			case int64:
				f := float64(n)
				fv.number = &f
			case int:
				f := float64(n)
				fv.number = &f
			case json.Number:
				f, err := n.Float64()
				if err != nil {
					return nil, errInvalid("value.number: %v", err)
				}
				fv.number = &f
			}
			if err := ec.forbidden(strArg(in, "projectId"), strArg(in, "itemId")); err != nil {
				return nil, err
			}
			it, err := ec.w.setFieldValue(ec.who.actor, strArg(in, "projectId"), strArg(in, "itemId"), strArg(in, "fieldId"), fv)
			if err != nil {
				return nil, err
			}
			return payload(in, "projectV2Item", it), nil
		},
		"clearProjectV2ItemFieldValue": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			if err := ec.forbidden(strArg(in, "projectId"), strArg(in, "itemId")); err != nil {
				return nil, err
			}
			it, err := ec.w.clearFieldValue(ec.who.actor, strArg(in, "projectId"), strArg(in, "itemId"), strArg(in, "fieldId"))
			if err != nil {
				return nil, err
			}
			return payload(in, "projectV2Item", it), nil
		},
		"addProjectV2ItemById": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			if err := ec.forbidden(strArg(in, "projectId"), strArg(in, "contentId")); err != nil {
				return nil, err
			}
			it, err := ec.w.addItem(ec.who.actor, strArg(in, "projectId"), strArg(in, "contentId"))
			if err != nil {
				return nil, err
			}
			return payload(in, "item", it), nil
		},
		"archiveProjectV2Item": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			if err := ec.forbidden(strArg(in, "projectId"), strArg(in, "itemId")); err != nil {
				return nil, err
			}
			it, err := ec.w.setArchived(ec.who.actor, strArg(in, "projectId"), strArg(in, "itemId"), true)
			if err != nil {
				return nil, err
			}
			return payload(in, "item", it), nil
		},
		"unarchiveProjectV2Item": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			if err := ec.forbidden(strArg(in, "projectId"), strArg(in, "itemId")); err != nil {
				return nil, err
			}
			it, err := ec.w.setArchived(ec.who.actor, strArg(in, "projectId"), strArg(in, "itemId"), false)
			if err != nil {
				return nil, err
			}
			return payload(in, "item", it), nil
		},
		"deleteProjectV2Item": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			if err := ec.forbidden(strArg(in, "projectId"), strArg(in, "itemId")); err != nil {
				return nil, err
			}
			it, err := ec.w.deleteItem(ec.who.actor, strArg(in, "projectId"), strArg(in, "itemId"))
			if err != nil {
				return nil, err
			}
			return payload(in, "deletedItemId", it.nodeID), nil
		},
		"addComment": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			is, err := ec.issueByID(strArg(in, "subjectId"))
			if err != nil {
				return nil, err
			}
			c, err := ec.w.addComment(ec.who.actor, is, strArg(in, "body"))
			if err != nil {
				return nil, err
			}
			p := payload(in, "subject", is)
			p["commentEdge"] = &edge{cursor: encodeCursor(len(is.comments) - 1), node: c}
			return p, nil
		},
		"updateIssueComment": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			c, ok := ec.w.nodes[strArg(in, "id")].(*comment)
			if !ok {
				return nil, errNotFound("Could not resolve to a node with the global id of '%s'", strArg(in, "id"))
			}
			if ec.hidden(c) {
				return nil, errForbidden()
			}
			if _, err := ec.w.updateComment(ec.who.actor, c, strArg(in, "body")); err != nil {
				return nil, err
			}
			return payload(in, "issueComment", c), nil
		},
		"closeIssue": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			for _, k := range []string{"duplicateIssueId", "isSuggestion"} {
				if in[k] != nil && in[k] != false {
					return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: "ghsim does not implement argument CloseIssueInput." + k}
				}
			}
			is, err := ec.issueByID(strArg(in, "issueId"))
			if err != nil {
				return nil, err
			}
			if err := ec.w.closeIssue(ec.who.actor, is, strings.ToLower(strArg(in, "stateReason"))); err != nil {
				return nil, err
			}
			return payload(in, "issue", is), nil
		},
		"reopenIssue": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			is, err := ec.issueByID(strArg(in, "issueId"))
			if err != nil {
				return nil, err
			}
			if err := ec.w.reopenIssue(ec.who.actor, is); err != nil {
				return nil, err
			}
			return payload(in, "issue", is), nil
		},
		"addSubIssue": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			if in["subIssueUrl"] != nil {
				return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: "ghsim does not implement argument AddSubIssueInput.subIssueUrl"}
			}
			parent, child, err := ec.issuePair(in, "issueId", "subIssueId")
			if err != nil {
				return nil, err
			}
			replace, _ := in["replaceParent"].(bool)
			if err := ec.w.addSubIssue(parent, child, replace); err != nil {
				return nil, err
			}
			p := payload(in, "issue", parent)
			p["subIssue"] = child
			return p, nil
		},
		"removeSubIssue": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			parent, child, err := ec.issuePair(in, "issueId", "subIssueId")
			if err != nil {
				return nil, err
			}
			ec.w.removeSubIssue(parent, child)
			p := payload(in, "issue", parent)
			p["subIssue"] = child
			return p, nil
		},
		"addBlockedBy": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			is, blocker, err := ec.issuePair(in, "issueId", "blockingIssueId")
			if err != nil {
				return nil, err
			}
			if err := ec.w.addBlockedBy(is, blocker); err != nil {
				return nil, err
			}
			p := payload(in, "issue", is)
			p["blockingIssue"] = blocker
			return p, nil
		},
		"removeBlockedBy": func(ec *execCtx, _ root, a args) (any, error) {
			in := input(a)
			is, blocker, err := ec.issuePair(in, "issueId", "blockingIssueId")
			if err != nil {
				return nil, err
			}
			ec.w.removeBlockedBy(is, blocker)
			p := payload(in, "issue", is)
			p["blockingIssue"] = blocker
			return p, nil
		},
	})
}

// payload is a mutation payload object: clientMutationId echoed plus one named result.
func payload(in map[string]any, key string, v any) valueObject {
	return valueObject{"clientMutationId": in["clientMutationId"], key: v}
}

func (ec *execCtx) issueByID(id string) (*issue, error) {
	is, ok := ec.w.nodes[id].(*issue)
	if !ok {
		return nil, errNotFound("Could not resolve to a node with the global id of '%s'", id)
	}
	if ec.hidden(is) {
		return nil, errForbidden()
	}
	return is, nil
}

func (ec *execCtx) issuePair(in map[string]any, a, b string) (*issue, *issue, error) {
	x, err := ec.issueByID(strArg(in, a))
	if err != nil {
		return nil, nil, err
	}
	y, err := ec.issueByID(strArg(in, b))
	if err != nil {
		return nil, nil, err
	}
	return x, y, nil
}
