// The README's sluicetest fragment, built by TestREADMEGoBuilds inside a
// test helper that gives it what it names.
package readme

import (
	"context"
	"database/sql"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetest"
)

type WelcomeArgs struct {
	Email string `json:"email"`
}

func (WelcomeArgs) Topic() string { return "welcome_email" }

// signUp stands for the application's code under test.
func signUp(context.Context, *sluice.Client[*sql.Tx], string) {}

func testSignUp(ctx context.Context, t *testing.T, workers *sluice.Workers, clock *sluicetest.Clock) {
	// README
	_, _ = job, row
}
