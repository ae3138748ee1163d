package sluicepb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/inflector"
	"github.com/pocketbase/pocketbase/tools/search"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// ruleSubject is what a rule's own fields (topic, payload.*) refer to.
type ruleSubject struct {
	topic   string
	payload string // JSON; empty when there is none
}

// ruleCollection is the name of the virtual collection rules are
// evaluated on: a one-row table of the subject's fields.
const ruleCollection = "sluicepb_rule_subject"

// ruleSubject returns the job a request concerns: the one enqueued, with
// its payload as it will be stored, the one acted on, or, for a request on
// many jobs, the one topic it filters by.
func (j *Jobs) ruleSubject(ctx context.Context, a sluiceweb.Action) (ruleSubject, error) {
	var s ruleSubject
	if len(a.Topics) == 1 {
		s.topic = a.Topics[0]
	}
	switch {
	case a.Payload != nil:
		s.payload = string(a.Payload)
	case a.JobID != "":
		c, err := j.getClient()
		if err != nil {
			return s, err
		}
		row, err := c.Get(ctx, a.JobID)
		switch {
		case errors.Is(err, sluice.ErrNotFound):
		case err != nil:
			return s, err
		default:
			s.topic, s.payload = row.Topic, string(row.Payload)
		}
	}
	return s, nil
}

// ruleSubjects returns what rule is evaluated on for a request, every
// subject to pass: the job enqueued or acted on; for a workflow or batch
// enqueued (or jobs added to a batch) each of its jobs and callbacks, as
// stored; for a request on many jobs, or on a workflow or batch, each
// topic it names. A request on the jobs of every topic gets no subject
// (refused) when the rule names topic, which it could not judge.
func (j *Jobs) ruleSubjects(ctx context.Context, a sluiceweb.Action, rule string) ([]ruleSubject, error) {
	if len(a.Jobs) > 0 {
		return jobSubjects(a.Jobs, rule), nil
	}
	// A workflow or batch that does not exist names no topic, and is
	// judged as a job that does not exist is: on no topic.
	if a.Kind == sluiceweb.ActionEnqueue || a.JobID != "" || len(a.Topics) == 1 || (a.Group != "" && len(a.Topics) == 0) {
		s, err := j.ruleSubject(ctx, a)
		if err != nil {
			return nil, err
		}
		return []ruleSubject{s}, nil
	}
	if len(a.Topics) == 0 {
		if ruleNamesTopic(rule) {
			return nil, nil
		}
		return []ruleSubject{{}}, nil
	}
	subjects := make([]ruleSubject, len(a.Topics))
	for i, t := range a.Topics {
		subjects[i] = ruleSubject{topic: t, payload: string(a.Payload)}
	}
	return subjects, nil
}

// jobSubjects returns the subjects of the jobs of a workflow or batch:
// each distinct one, the payloads left out when the rule does not read
// them, so that a workflow of many like tasks costs few evaluations.
func jobSubjects(jobs []sluiceweb.ActionJob, rule string) []ruleSubject {
	payloads := rulePart(rule, "payload")
	seen := make(map[ruleSubject]bool, len(jobs))
	var out []ruleSubject
	for _, job := range jobs {
		s := ruleSubject{topic: job.Topic}
		if payloads {
			s.payload = string(job.Payload)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// rulePart reports whether rule refers to the field name (or might: any
// mention of the word counts).
func rulePart(rule, name string) bool {
	return rule != RuleSuperusers && rule != RulePublic && strings.Contains(rule, name)
}

// ruleNamesTopic reports whether rule refers to the topic field (or might:
// any mention of the word counts).
func ruleNamesTopic(rule string) bool { return rulePart(rule, "topic") }

// ruleInfo returns what a rule's @request.* fields read of re's request:
// what PocketBase's RequestInfo holds, but with the body sluiceweb decoded
// (the action's), not one parsed again.
func ruleInfo(re *core.RequestEvent, a sluiceweb.Action) (*core.RequestInfo, error) {
	info := &core.RequestInfo{
		Context: core.RequestInfoContextDefault,
		Method:  re.Request.Method,
		Query:   map[string]string{},
		Headers: map[string]string{},
		Body:    map[string]any{},
		Auth:    re.Auth,
	}
	if c, _ := re.Get(core.RequestEventKeyInfoContext).(string); c != "" {
		info.Context = c
	}
	for k, v := range re.Request.URL.Query() {
		if len(v) > 0 {
			info.Query[k] = v[0]
		}
	}
	for k, v := range re.Request.Header {
		if len(v) > 0 {
			info.Headers[inflector.Snakecase(k)] = v[0]
		}
	}
	if len(a.Body) > 0 {
		// sluiceweb decoded this body as one JSON object with no member
		// twice: read as a map, it holds exactly those members.
		if err := json.Unmarshal(a.Body, &info.Body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
	return info, nil
}

// evalRule reports whether rule allows the request of info on s. It does
// not consider superusers: the caller lets them through first.
func evalRule(re *core.RequestEvent, info *core.RequestInfo, rule string, s ruleSubject) (bool, error) {
	switch rule {
	case RuleSuperusers:
		return false, nil
	case RulePublic:
		return true, nil
	}
	coll := core.NewBaseCollection(ruleCollection)
	coll.Fields.Add(&core.TextField{Name: "topic"}, &core.JSONField{Name: "payload"})
	resolver := core.NewRecordFieldResolver(re.App, coll, info, true)
	expr, err := search.FilterData(rule).BuildExpr(resolver)
	if err != nil {
		return false, fmt.Errorf("build: %w", err)
	}
	var payload any
	if s.payload != "" {
		payload = s.payload
	}
	q := re.App.ConcurrentDB().Select("(1)").
		PreFragment("WITH {{" + ruleCollection + "}} AS (SELECT {:sluicepb_topic} AS [[topic]], {:sluicepb_payload} AS [[payload]], '' AS [[id]])").
		From(ruleCollection).
		AndBind(dbx.Params{"sluicepb_topic": s.topic, "sluicepb_payload": payload}).
		AndWhere(expr)
	if err := resolver.UpdateQuery(q); err != nil {
		return false, fmt.Errorf("update query: %w", err)
	}
	var one int
	switch err := q.Limit(1).Row(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("query: %w", err)
	}
	return one == 1, nil
}
