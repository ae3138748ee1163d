package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sluiceweb"
)

func uiCommands() []command {
	return []command{{name: "ui", args: "[--listen ADDR] [--token T]", summary: "serve the dashboard and its JSON API", run: runUI}}
}

func runUI(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("ui", "[--listen ADDR]")
	listen := fs.String("listen", "127.0.0.1:8080", "the address to serve on")
	token := fs.String("token", "", "require this token: Authorization: Bearer TOKEN, or HTTP Basic with it as password (default $SLUICE_UI_TOKEN)")
	allowRemote := fs.Bool("allow-remote", false, "serve on an address other than loopback (needs a token)")
	readOnly := fs.Bool("read-only", false, "refuse to enqueue or change jobs and schedules")
	var queues listValue
	fs.Var(&queues, "queue", "a queue the dashboard may enqueue into, besides those the database has jobs in")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("ui takes no arguments, only flags (got %q)", pos[0])
	}
	if *token == "" {
		*token = c.getenv("SLUICE_UI_TOKEN")
	}
	loopback, err := isLoopback(*listen)
	if err != nil {
		return err
	}
	if !loopback && (!*allowRemote || *token == "") {
		return usageErrorf("--listen %s is not a loopback address: serving it needs --allow-remote and a token (--token or SLUICE_UI_TOKEN)", *listen)
	}
	h, done, err := c.uiHandler(ctx, queues, *readOnly)
	if err != nil {
		return err
	}
	defer done()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: guard(h, *token), ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(h.Close)
	fmt.Fprintf(c.out(), "serving the sluice dashboard at http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// uiHandler opens the database and the dashboard's handler over an
// insert-only client that may enqueue into the default queue, the queues
// the database has jobs in and queues.
func (c *cli) uiHandler(ctx context.Context, queues []string, readOnly bool) (*sluiceweb.Handler, func(), error) {
	jc, done, err := c.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := jc.Stats(ctx, nil)
	if err != nil {
		done()
		return nil, nil, err
	}
	done()
	all := append(slices.Collect(maps.Keys(st.ByQueue)), queues...)
	if jc, done, err = c.client(ctx, all...); err != nil {
		return nil, nil, err
	}
	h, err := jc.handler(&sluiceweb.Options{Authorize: sluiceweb.AllowAll, ReadOnly: readOnly})
	if err != nil {
		done()
		return nil, nil, err
	}
	return h, done, nil
}

// isLoopback reports whether the listen address addr names a loopback
// host: localhost or a loopback IP. An empty host (every interface) is not.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, usageErrorf("--listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// guard wraps h: with a token, every request must carry it, as a bearer
// token or as the password of HTTP Basic authentication (which browsers
// ask for); without one (on loopback only), requests must name a loopback
// host, so that a web page cannot reach the dashboard by rebinding its own
// domain name to 127.0.0.1.
func guard(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			if ok, _ := isLoopback(hostPort(r.Host)); !ok {
				http.Error(w, "sluice ui: only loopback host names are served without a token", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		given := ""
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			given = bearer
		} else if _, pass, ok := r.BasicAuth(); ok {
			given = pass
		}
		if subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
			http.Error(w, "sluice ui: a token is required (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostPort returns a request's Host with a port, as isLoopback takes it.
func hostPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}
