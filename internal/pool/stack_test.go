//go:build !race

package pool

import (
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestWaitingGoroutinesKeepTheirStacks runs a job that grows its
// goroutine's stack to 8 KiB, runs garbage collections while the goroutine
// waits, and hands it a second job: the second finds the stack as the
// first left it, so its own deep calls do not grow (move) it again.
// Without the reserve a waiting goroutine holds, each collection halved
// the stack of every waiting goroutine, and with many workers each job
// grew its stack again (see stackReserve).
//
// The race detector's runtime keeps twice as much of a stack free, so
// that it never halves an 8 KiB stack with a goroutine waiting, reserve
// or not: this file is built without it, and CI runs it so.
func TestWaitingGoroutinesKeepTheirStacks(t *testing.T) {
	t.Parallel()
	moved := make(chan bool)
	p := New(time.Minute, func(int) bool {
		var x byte
		before := uintptr(unsafe.Pointer(&x))
		deepStack(9)
		moved <- uintptr(unsafe.Pointer(&x)) != before
		return true
	})
	defer p.Close()
	p.Go(1)
	require.True(t, <-moved, "the first job did not grow its stack: the test shows nothing")
	require.Eventually(t, func() bool { return p.waiting.Load() == 1 }, 5*time.Second, time.Millisecond)
	runtime.GC()
	runtime.GC()
	p.handoff <- 2 // to the waiting goroutine, never a new one
	require.False(t, <-moved, "the waiting goroutine's stack was shrunk, and the next job grew it again")
	require.EqualValues(t, 1, p.started.Load())
}

// deepStack uses about n*512 bytes of stack.
//
//go:noinline
func deepStack(n int) byte {
	var buf [512]byte
	buf[n] = byte(n)
	if n == 0 {
		return buf[0]
	}
	return deepStack(n-1) + buf[n]
}
