package sluice_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeBlock is one ```go block of README.md.
type readmeBlock struct {
	line    int    // the line of its first line of code
	text    string // as written
	wrapper string // the file it is built inside, for a fragment; "" for a whole file
}

// wrapperComment names, on the line before a fragment's fence, the file
// of testdata/readme the fragment is built inside.
var wrapperComment = regexp.MustCompile(`^<!-- built by TestREADMEGoBuilds inside (testdata/readme/[a-z_]+\.go) -->$`)

// readmeGoBlocks returns the ```go blocks of the markdown text.
func readmeGoBlocks(t *testing.T, text string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	var cur *readmeBlock
	prev := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == "```go":
			cur = &readmeBlock{line: n + 1}
			if m := wrapperComment.FindStringSubmatch(prev); m != nil {
				cur.wrapper = m[1]
			}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		prev = line
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "README.md: a ```go block is not closed")
	return blocks
}

// source returns the Go file b is built as: a whole file as written, a
// fragment put in its wrapper in place of the line "// README".
func (b readmeBlock) source(t *testing.T) string {
	t.Helper()
	if b.wrapper == "" {
		require.True(t, strings.HasPrefix(b.text, "package "),
			"README.md:%d: a Go block is a whole file (package ...), or the comment before it names the file it is built inside", b.line)
		formatted, err := format.Source([]byte(b.text))
		require.NoError(t, err, "README.md:%d", b.line)
		require.Equal(t, string(formatted), b.text, "README.md:%d: the program is not gofmt'ed", b.line)
		return b.text
	}
	wrapper, err := os.ReadFile(b.wrapper)
	require.NoError(t, err, "README.md:%d", b.line)
	lines := strings.SplitAfter(string(wrapper), "\n")
	at := -1
	for i, line := range lines {
		if strings.TrimSpace(line) == "// README" {
			require.Equal(t, -1, at, "%s: more than one // README line", b.wrapper)
			at = i
		}
	}
	require.NotEqual(t, -1, at, "%s: no // README line to put the fragment in", b.wrapper)
	return strings.Join(lines[:at], "") + b.text + strings.Join(lines[at+1:], "")
}

// TestREADMEGoBuilds builds every Go block of README.md as written: the
// whole programs alone, each fragment inside the file of testdata/readme
// that the comment before it names. Each is built as a package of this
// module that exists only in an overlay, so it uses this checkout.
func TestREADMEGoBuilds(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := readmeGoBlocks(t, string(readme))
	require.NotEmpty(t, blocks)
	root, err := os.Getwd()
	require.NoError(t, err)
	tmp := t.TempDir()
	overlay := map[string]string{}
	var pkgs []string
	used := map[string]bool{}
	for _, b := range blocks {
		file := filepath.Join(tmp, fmt.Sprintf("line%d.go", b.line))
		require.NoError(t, os.WriteFile(file, []byte(b.source(t)), 0o644))
		pkg := fmt.Sprintf("testdata/readme/readme_md_line_%d", b.line)
		overlay[filepath.Join(root, pkg, "main.go")] = file
		pkgs = append(pkgs, "./"+pkg)
		used[b.wrapper] = true
	}
	wrappers, err := filepath.Glob("testdata/readme/*.go")
	require.NoError(t, err)
	for _, w := range wrappers {
		require.True(t, used[w], "%s wraps no fragment of README.md", w)
	}

	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	require.NoError(t, err)
	ovFile := filepath.Join(tmp, "overlay.json")
	require.NoError(t, os.WriteFile(ovFile, ov, 0o644))
	// Several packages: built, and the results dropped.
	args := []string{"build", "-overlay", ovFile}
	if raceBuild() {
		args = append(args, "-race") // shares the test's compiled packages
	}
	cmd := exec.CommandContext(t.Context(), "go", append(args, pkgs...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "README.md's Go blocks do not build (testdata/readme/readme_md_line_N is the block at line N):\n%s", out)
}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
