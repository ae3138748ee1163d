package pgxdriver_test

import (
	"os"
	"strconv"
	"testing"
)

func BenchmarkTmpTune(b *testing.B) {
	w, _ := strconv.Atoi(os.Getenv("W"))
	n, _ := strconv.Atoi(os.Getenv("N"))
	burnDown(b, n, 0, w)
}
