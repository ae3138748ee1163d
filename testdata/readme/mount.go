// The README's sluiceweb fragment, built by TestREADMEGoBuilds inside a
// function that gives it what it names.
package readme

import (
	"database/sql"
	"net/http"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

func mount(client *sluice.Client[*sql.Tx], mux *http.ServeMux, srv *http.Server, authorize func(*http.Request, sluiceweb.Action) error) error {
	// README
	return err
}
