// Package sluicetest helps applications test their own use of sluice: that
// their code enqueued the jobs it should (RequireEnqueued and its kin),
// that their workers do what they should (Work), at times the test chooses
// (Clock), on a database that costs nothing to make (NewMemoryDriver).
//
// A test builds its client as the application does, with the application's
// workers, over a database of its own:
//
//	clock := sluicetest.NewClock(time.Time{})
//	client, err := sluice.NewClient(sluicetest.NewMemoryDriver(t), &sluice.Config{
//		Workers: workers, Clock: clock.Now,
//	})
//
// The checks fail the test (testing.TB's Fatalf) with a message that says
// what was found instead; they return what they checked or worked, for
// further assertions.
package sluicetest
