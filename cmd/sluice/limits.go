package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluiceweb"
)

// limitFlags are the flags of the verbs that set limits: limit (a queue's
// or a topic's whole) and key-limit (each key's), and the --limit of
// queue keys. Which a verb takes is checked by only.
type limitFlags struct {
	fs         *flag.FlagSet
	maxRunning int
	rate       int
	per        time.Duration
	sequence   string
	fair       bool
	keys       keySpecs
	reset      bool
	limit      int
}

// addLimitFlags registers the limit flags on fs; fair adds --fair, which
// only a queue's key limits take.
func addLimitFlags(fs *flag.FlagSet, fair bool) *limitFlags {
	lf := &limitFlags{fs: fs}
	fs.IntVar(&lf.maxRunning, "max-running", 0, "limit, key-limit: how many jobs (of each key, for key-limit) may run at once, across every process; 0 removes the limit")
	fs.IntVar(&lf.rate, "rate", 0, "limit, key-limit: how many jobs (of each key) may start per --per, across every process; 0 removes the limit")
	fs.DurationVar(&lf.per, "per", 0, "limit, key-limit: the period of --rate, e.g. 1s or 1m")
	fs.StringVar(&lf.sequence, "sequence", "", "key-limit: hold or continue puts jobs enqueued with a key (and no sequence of their own) in the sequence of their key; none removes it")
	if fair {
		fs.BoolVar(&lf.fair, "fair", false, "key-limit: share the queue's claims between its keys, round-robin (--fair=false stops)")
	}
	fs.Var(&lf.keys, "key", "key-limit: one key's limits instead of the defaults, KEY=MAX_RUNNING[:RATE/PERIOD][:WEIGHT], e.g. acme=5:100/1m:2 (repeat for more keys; KEY=0 removes them)")
	fs.BoolVar(&lf.reset, "reset", false, "key-limit: start from no key limits rather than those stored")
	fs.IntVar(&lf.limit, "limit", 0, fmt.Sprintf("keys: the most keys to show, those with the most jobs first (default 100, at most %d)", sluice.MaxListLimit))
	return lf
}

// given returns the flags the command line gave.
func (lf *limitFlags) given() map[string]bool {
	set := map[string]bool{}
	lf.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// only returns a usage error if a limit flag that verb does not take was
// given.
func (lf *limitFlags) only(verb string, takes ...string) error {
	given := lf.given()
	for _, name := range []string{"max-running", "rate", "per", "sequence", "fair", "key", "reset", "limit"} {
		if given[name] && !slices.Contains(takes, name) {
			return usageErrorf("--%s does not go with %s", name, verb)
		}
	}
	return nil
}

// rateGiven returns the rate that --rate and --per give, and whether
// --rate was given; a usage error for one without the other.
func (lf *limitFlags) rateGiven() (int, time.Duration, bool, error) {
	given := lf.given()
	switch {
	case given["rate"] && lf.rate > 0 && lf.per <= 0:
		return 0, 0, false, usageErrorf("--rate wants --per, a positive duration")
	case given["per"] && (!given["rate"] || lf.rate <= 0):
		return 0, 0, false, usageErrorf("--per goes with --rate")
	}
	return lf.rate, lf.per, given["rate"], nil
}

// keyLimits returns the key limits the flags give: those of stored (nil
// for none, or with --reset) changed by the flags given. It returns a
// usage error when no flag sets anything.
func (lf *limitFlags) keyLimits(verb string, stored *sluice.Limits) (sluice.KeyLimits, error) {
	given := lf.given()
	if !given["max-running"] && !given["rate"] && !given["sequence"] && !given["fair"] && len(lf.keys) == 0 && !lf.reset {
		return sluice.KeyLimits{}, usageErrorf("%s wants --max-running, --rate with --per, --sequence, --fair, --key or --reset", verb)
	}
	rate, per, rateGiven, err := lf.rateGiven()
	if err != nil {
		return sluice.KeyLimits{}, err
	}
	var l sluice.KeyLimits
	if stored != nil && !lf.reset {
		l = sluice.KeyLimits{MaxRunning: stored.KeyMaxRunning, RateLimit: stored.KeyRateLimit, RatePeriod: stored.KeyRatePeriod,
			Sequence: stored.Sequence, Fair: stored.Fair, Keys: map[string]sluice.KeyLimit{}}
		for _, k := range stored.Keys {
			l.Keys[k.Key] = sluice.KeyLimit{MaxRunning: k.MaxRunning, RateLimit: k.RateLimit, RatePeriod: k.RatePeriod, Weight: k.Weight}
		}
	}
	if given["max-running"] {
		l.MaxRunning = lf.maxRunning
	}
	if rateGiven {
		l.RateLimit, l.RatePeriod = rate, per
	}
	if given["sequence"] {
		l.Sequence = sluice.SequencePolicy(lf.sequence)
		if lf.sequence == "none" {
			l.Sequence = ""
		}
	}
	if given["fair"] {
		l.Fair = lf.fair
	}
	for _, k := range lf.keys {
		if l.Keys == nil {
			l.Keys = map[string]sluice.KeyLimit{}
		}
		if k.limit == (sluice.KeyLimit{}) {
			delete(l.Keys, k.key) // no override: the defaults
			continue
		}
		l.Keys[k.key] = k.limit
	}
	return l, nil
}

// keySpec is one --key of key-limit.
type keySpec struct {
	key   string
	limit sluice.KeyLimit
}

// keySpecs is the flag --key KEY=MAX_RUNNING[:RATE/PERIOD][:WEIGHT], given
// once per key. Within the limits, a part with a slash is the rate, the
// first part without one the key's MaxRunning and another its weight; an
// empty or 0 part leaves the default.
type keySpecs []keySpec

func (k *keySpecs) String() string {
	names := make([]string, len(*k))
	for i, s := range *k {
		names[i] = s.key
	}
	return strings.Join(names, ",")
}

func (k *keySpecs) Set(s string) error {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 {
		return fmt.Errorf("%q: want KEY=MAX_RUNNING[:RATE/PERIOD][:WEIGHT], e.g. acme=5:100/1m:2", s)
	}
	spec := keySpec{key: s[:i]}
	for n, part := range strings.Split(s[i+1:], ":") {
		var err error
		if rate, per, ok := strings.Cut(part, "/"); ok {
			if spec.limit.RateLimit, err = strconv.Atoi(rate); err == nil {
				spec.limit.RatePeriod, err = time.ParseDuration(per)
			}
		} else if n == 0 && part != "" {
			spec.limit.MaxRunning, err = strconv.Atoi(part)
		} else if part != "" {
			spec.limit.Weight, err = strconv.Atoi(part)
		}
		if err != nil {
			return fmt.Errorf("%q: %q is not a number, nor a rate such as 100/1m", s, part)
		}
	}
	*k = append(*k, spec)
	return nil
}

// storedLimits returns the stored limits of scope, nil when it has none.
func storedLimits(ctx context.Context, jc *jobClient, scope sluice.Scope) (*sluice.Limits, error) {
	all, err := jc.StoredLimits(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range all {
		if l.Scope == scope {
			return l, nil
		}
	}
	return nil, nil
}

// setKeyLimits runs key-limit on scope: the key limits stored, changed by
// the flags, stored and printed.
func (c *cli) setKeyLimits(ctx context.Context, lf *limitFlags, verb string, scope sluice.Scope) error {
	if _, err := lf.keyLimits(verb, nil); err != nil {
		return err // bad usage, before the database is opened
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	stored, err := storedLimits(ctx, jc, scope)
	if err != nil {
		return err
	}
	l, err := lf.keyLimits(verb, stored)
	if err != nil {
		return err
	}
	if stored, err = jc.SetKeyLimits(ctx, scope, l); err != nil {
		return err
	}
	return c.printLimits(stored)
}

// printLimits prints a scope's limits in a line, or as the API answers
// them with --json.
func (c *cli) printLimits(l *sluice.Limits) error {
	if c.json {
		return writeJSON(c.out(), sluiceweb.NewLimitsResponse(l))
	}
	what := []string{}
	if s := rateWords(l.MaxRunning, l.RateLimit, l.RatePeriod); s != "" {
		what = append(what, s)
	}
	if s := describeKeyLimits(l, true); s != "" {
		what = append(what, s)
	}
	if len(what) == 0 {
		what = append(what, "no limits")
	}
	fmt.Fprintf(c.out(), "%s %s: %s\n", l.Scope.Kind, l.Scope.Name, strings.Join(what, "; "))
	return nil
}

// rateWords says a concurrency and a rate limit in a few words, "" when
// both are 0.
func rateWords(maxRunning, rate int, per time.Duration) string {
	var parts []string
	if maxRunning > 0 {
		parts = append(parts, fmt.Sprintf("at most %d running at once", maxRunning))
	}
	if rate > 0 {
		parts = append(parts, fmt.Sprintf("at most %d started per %s", rate, sluiceweb.DurationText(per)))
	}
	return strings.Join(parts, ", ")
}

// describeKeyLimits says l's limits of each key in a few words, "" when it
// has none; each key's own limits in full, or how many keys have their
// own.
func describeKeyLimits(l *sluice.Limits, full bool) string {
	var parts []string
	if s := rateWords(l.KeyMaxRunning, l.KeyRateLimit, l.KeyRatePeriod); s != "" {
		parts = append(parts, "each key "+s)
	}
	if l.Sequence != "" {
		parts = append(parts, "keyed jobs in sequence ("+string(l.Sequence)+")")
	}
	if l.Fair {
		parts = append(parts, "fair between keys")
	}
	if !full && len(l.Keys) > 0 {
		parts = append(parts, count(len(l.Keys), "key")+" with limits of their own")
	}
	for _, k := range l.Keys {
		if full {
			s := rateWords(k.MaxRunning, k.RateLimit, k.RatePeriod)
			if k.Weight > 0 {
				s = strings.TrimPrefix(s+fmt.Sprintf(", weight %d", k.Weight), ", ")
			}
			parts = append(parts, fmt.Sprintf("key %q %s", k.Key, s))
		}
	}
	return strings.Join(parts, "; ")
}

func topicCommands() []command {
	return []command{{name: "topic", args: "list | VERB TOPIC",
		summary: "list limited topics; limit or key-limit one, in whatever queue (across every process)", run: runTopic}}
}

func runTopic(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("topic", "list | limit TOPIC [--max-running N] [--rate N --per DURATION] | key-limit TOPIC [flags]")
	lf := addLimitFlags(fs, false)
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("topic wants one of list, limit or key-limit")
	}
	verb, rest := pos[0], pos[1:]
	switch {
	case verb == "list" && len(rest) > 0:
		return usageErrorf("topic list takes no arguments")
	case verb == "list":
		if err := lf.only("topic list"); err != nil {
			return err
		}
		return c.topicList(ctx)
	case verb != "limit" && verb != "key-limit":
		return usageErrorf("unknown topic verb %q: want list, limit or key-limit", verb)
	case len(rest) != 1 || rest[0] == "":
		return usageErrorf("topic %s wants one topic", verb)
	case verb == "key-limit":
		if err := lf.only("topic key-limit", "max-running", "rate", "per", "sequence", "key", "reset"); err != nil {
			return err
		}
		return c.setKeyLimits(ctx, lf, "topic key-limit", sluice.TopicScope(rest[0]))
	}
	if err := lf.only("topic limit", "max-running", "rate", "per"); err != nil {
		return err
	}
	return c.topicLimit(ctx, lf, rest[0])
}

// topicLimit runs topic limit: the topic's own limits, those not given
// kept as stored.
func (c *cli) topicLimit(ctx context.Context, lf *limitFlags, topic string) error {
	rate, per, rateGiven, err := lf.rateGiven()
	if err != nil {
		return err
	}
	maxGiven := lf.given()["max-running"]
	if !maxGiven && !rateGiven {
		return usageErrorf("topic limit wants --max-running, or --rate with --per, or both")
	}
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	var l sluice.TopicLimits
	if stored, err := storedLimits(ctx, jc, sluice.TopicScope(topic)); err != nil {
		return err
	} else if stored != nil {
		l = sluice.TopicLimits{MaxRunning: stored.MaxRunning, RateLimit: stored.RateLimit, RatePeriod: stored.RatePeriod}
	}
	if maxGiven {
		l.MaxRunning = lf.maxRunning
	}
	if rateGiven {
		l.RateLimit, l.RatePeriod = rate, per
	}
	stored, err := jc.SetTopicLimits(ctx, topic, l)
	if err != nil {
		return err
	}
	return c.printLimits(stored)
}

// topicList prints the stored limits of every topic that has any.
func (c *cli) topicList(ctx context.Context) error {
	jc, done, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	all, err := jc.StoredLimits(ctx)
	if err != nil {
		return err
	}
	items := []sluiceweb.LimitsResponse{}
	for _, l := range all {
		if l.Scope.Kind == sluice.ScopeTopic {
			items = append(items, sluiceweb.NewLimitsResponse(l))
		}
	}
	if c.json {
		return writeJSON(c.out(), map[string]any{"items": items})
	}
	if len(items) == 0 {
		fmt.Fprintln(c.out(), "no topic is limited")
		return nil
	}
	for _, l := range all {
		if l.Scope.Kind == sluice.ScopeTopic {
			if err := c.printLimits(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyOrder returns the keys of counts, in their order, then the keys of
// limits without jobs, sorted.
func keyOrder(counts []*sluice.KeyCount, l *sluice.Limits) []string {
	seen := map[string]bool{}
	var keys []string
	for _, kc := range counts {
		seen[kc.Key] = true
		keys = append(keys, kc.Key)
	}
	var rest []string
	if l != nil {
		for _, k := range l.Keys {
			if !seen[k.Key] {
				rest = append(rest, k.Key)
			}
		}
	}
	return append(keys, slices.Sorted(slices.Values(rest))...)
}

// keyLimitOf returns the limits that hold for key under l: its own, or
// else the defaults.
func keyLimitOf(l *sluice.Limits, key string) (maxRunning, rate int, per time.Duration, weight int) {
	if l == nil {
		return 0, 0, 0, 0
	}
	maxRunning, rate, per = l.KeyMaxRunning, l.KeyRateLimit, l.KeyRatePeriod
	for _, k := range l.Keys {
		if k.Key != key {
			continue
		}
		if k.MaxRunning > 0 {
			maxRunning = k.MaxRunning
		}
		if k.RateLimit > 0 {
			rate, per = k.RateLimit, k.RatePeriod
		}
		weight = k.Weight
	}
	return maxRunning, rate, per, weight
}
