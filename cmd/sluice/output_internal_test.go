package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProgress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &progress{w: &buf, enabled: true, verb: "cancel", total: 2500}
	p.update(1000)
	p.update(2500)
	p.end()
	require.Equal(t, "\rcancel: 1000 of 2500 jobs (40%)\rcancel: 2500 of 2500 jobs (100%)\n", buf.String())

	buf.Reset()
	p = &progress{w: &buf, enabled: false, verb: "cancel", total: 2500}
	p.update(1000)
	p.end()
	require.Empty(t, buf.String(), "no progress unless stdout is a terminal")
}
