package sluicepb

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"

	"github.com/pocketbase/pocketbase/core"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// The paths the API and the dashboard are served at.
const (
	// APIPath is the root of the HTTP API: POST /api/jobs/enqueue,
	// GET /api/jobs, GET /api/jobs/{id}, POST /api/jobs/{id}/requeue ...
	APIPath = "/api/jobs"
	// DashboardPath is where the sluice dashboard is served, with the
	// whole sluiceweb API under it (DashboardPath + "api/..."), as the
	// Jobs panel of the admin UI shows it.
	DashboardPath = "/api/jobs/dashboard/"
	// PanelPath is the standalone Jobs page: it opens the dashboard with
	// the superuser session of the admin UI (/_/), for PocketBase builds
	// without UI extensions.
	PanelPath = "/api/jobs/panel"
	// TokenCookie is the cookie the Jobs panel sets with the superuser's
	// auth token, so that the dashboard's requests and its event stream
	// (which cannot send an Authorization header) are authenticated. It
	// is SameSite=Strict and scoped to APIPath.
	TokenCookie = "sluicepb_token"
)

// aliases maps the paths under APIPath that name sluiceweb endpoints
// outside api/jobs to theirs.
var aliases = map[string]string{
	"/api/jobs/events":    "/api/events",
	"/api/jobs/queues":    "/api/queues",
	"/api/jobs/clients":   "/api/clients",
	"/api/jobs/schedules": "/api/schedules",
	"/api/jobs/limits":    "/api/limits",
	"/api/jobs/metrics":   "/api/metrics",
	"/api/jobs/settings":  "/api/settings",
	"/api/jobs/workflows": "/api/workflows",
	"/api/jobs/batches":   "/api/batches",
}

// requestEventKey is the context key under which a request handed to
// sluiceweb carries its PocketBase request event.
type requestEventKey struct{}

// mount serves the API, the dashboard and the Jobs panel on e's router.
func (j *Jobs) mount(e *core.ServeEvent, c *sluice.Client[*sql.Tx]) error {
	web, err := sluiceweb.New(c, &sluiceweb.Options{
		Authorize:     j.authorize,
		AllowedTopics: j.cfg.AllowedTopics,
		Logger:        e.App.Logger(),
	})
	if err != nil {
		return err
	}
	if j.web != nil {
		j.web.Close()
	}
	j.web = web
	serve := func(re *core.RequestEvent) error { return j.serveWeb(re, web) }
	e.Router.Any(APIPath, serve)
	e.Router.Any(APIPath+"/{path...}", serve)
	e.Router.GET(PanelPath, servePanel)
	e.UIExtensions = append(e.UIExtensions, uiExtension())
	return nil
}

// serveWeb hands re's request to sluiceweb, on the path sluiceweb knows it
// by.
func (j *Jobs) serveWeb(re *core.RequestEvent, web *sluiceweb.Handler) error {
	p := re.Request.URL.Path
	switch {
	case p == strings.TrimSuffix(DashboardPath, "/"):
		return re.Redirect(http.StatusMovedPermanently, DashboardPath)
	case strings.HasPrefix(p, DashboardPath):
		p = "/" + strings.TrimPrefix(p, DashboardPath)
	default:
		for from, to := range aliases {
			if p == from || strings.HasPrefix(p, from+"/") {
				p = to + strings.TrimPrefix(p, from)
				break
			}
		}
	}
	if re.Auth == nil {
		j.authFromCookie(re)
	}
	// The body is sluiceweb's to read, once: the rules see what it
	// decoded (sluiceweb.Action's Body and Payload), never a parse of
	// their own that could read it otherwise.
	r := re.Request.WithContext(context.WithValue(re.Request.Context(), requestEventKey{}, re))
	u := *r.URL
	u.Path, u.RawPath = p, ""
	r.URL = &u
	web.ServeHTTP(re.Response, r)
	return nil
}

// authFromCookie sets re.Auth from the Jobs panel's cookie, if it holds a
// valid auth token.
func (j *Jobs) authFromCookie(re *core.RequestEvent) {
	ck, err := re.Request.Cookie(TokenCookie)
	if err != nil || ck.Value == "" {
		return
	}
	if rec, err := re.App.FindAuthRecordByToken(ck.Value, core.TokenTypeAuth); err == nil {
		re.Auth = rec
	}
}

// authorize is sluiceweb's Authorize: superusers may do everything, others
// what the enqueue or manage rule allows them.
func (j *Jobs) authorize(r *http.Request, a sluiceweb.Action) error {
	re, _ := r.Context().Value(requestEventKey{}).(*core.RequestEvent)
	if re == nil {
		return errors.New("sluicepb: request did not come through PocketBase")
	}
	if re.HasSuperuserAuth() {
		return nil
	}
	rule, name := j.cfg.ManageRule, "manage"
	if a.Kind == sluiceweb.ActionEnqueue {
		rule, name = j.cfg.EnqueueRule, "enqueue"
	}
	subjects, err := j.ruleSubjects(r.Context(), a, rule)
	if err != nil {
		return err
	}
	info, err := ruleInfo(re, a)
	if err != nil {
		return err
	}
	ok := len(subjects) > 0
	for _, subject := range subjects {
		allowed, err := evalRule(re, info, rule, subject)
		if err != nil {
			re.App.Logger().Error("sluicepb: "+name+" rule", "error", err, "rule", rule)
			return errors.New("the " + name + " rule could not be evaluated")
		}
		ok = ok && allowed
	}
	switch {
	case !ok && len(subjects) == 0 && re.Auth != nil:
		return errors.New("the " + name + " rule names topics: name the topics of the jobs this request concerns")
	case ok:
		return nil
	case re.Auth == nil:
		return &sluiceweb.UnauthorizedError{}
	default:
		return errors.New("the " + name + " rule does not allow this request")
	}
}
