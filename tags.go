package sluice

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicehq/sluice/driver"
)

// The bounds of a job's tags and metadata (see EnqueueOptions).
const (
	// MaxTags is the most tags a job may carry.
	MaxTags = driver.MaxTags
	// MaxTagBytes is the longest tag, in bytes.
	MaxTagBytes = driver.MaxTagBytes
	// MaxMetadataBytes is the largest metadata, as encoded JSON.
	MaxMetadataBytes = driver.MaxMetadataBytes
)

// checkTags returns tags without repeats, or an *OptionsError for tags
// that are empty, too long, too many, or break the text rule.
func checkTags(tags []string) ([]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(tags))
	for i, tag := range tags {
		field := fmt.Sprintf("Tags[%d]", i)
		switch {
		case tag == "":
			return nil, &OptionsError{Field: field, Reason: "empty"}
		case len(tag) > MaxTagBytes:
			return nil, &OptionsError{Field: field, Reason: fmt.Sprintf("%d bytes is more than %d", len(tag), MaxTagBytes)}
		}
		if err := driver.CheckText(tag); err != nil {
			return nil, &OptionsError{Field: field, Reason: err.Error()}
		}
		if !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	if len(out) > MaxTags {
		return nil, &OptionsError{Field: "Tags", Reason: fmt.Sprintf("%d tags is more than %d", len(out), MaxTags)}
	}
	return out, nil
}

// encodeMetadata returns meta as a JSON object, nil for none, or an
// *OptionsError for metadata that does not encode, is too large, or holds
// text that breaks the text rule (keys and strings are checked before
// encoding, which would otherwise replace invalid UTF-8 silently).
func encodeMetadata(meta map[string]any) ([]byte, error) {
	if len(meta) == 0 {
		return nil, nil
	}
	if err := checkMetaText(meta, 0); err != nil {
		return nil, &OptionsError{Field: "Metadata", Reason: err.Error()}
	}
	b, err := json.Marshal(meta)
	if err == nil {
		err = driver.CheckJSON(b)
	}
	if err != nil {
		return nil, &OptionsError{Field: "Metadata", Reason: err.Error()}
	}
	if len(b) > MaxMetadataBytes {
		return nil, &OptionsError{Field: "Metadata",
			Reason: fmt.Sprintf("%d bytes encoded is more than %d", len(b), MaxMetadataBytes)}
	}
	return b, nil
}

// maxMetaDepth bounds how deep checkMetaText walks metadata.
const maxMetaDepth = 32

// checkMetaText checks the keys and strings of metadata against the text
// rule, in the types JSON decodes to and the common ones besides.
func checkMetaText(v any, depth int) error {
	if depth > maxMetaDepth {
		return fmt.Errorf("nested more than %d deep", maxMetaDepth)
	}
	check := func(s string) error {
		if err := driver.CheckText(s); err != nil {
			return fmt.Errorf("%q %w", s, err)
		}
		return nil
	}
	switch v := v.(type) {
	case string:
		return check(v)
	case []string:
		for _, s := range v {
			if err := check(s); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkMetaText(e, depth+1); err != nil {
				return err
			}
		}
	case map[string]string:
		for k, s := range v {
			if err := cmp.Or(check(k), check(s)); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range v {
			if err := cmp.Or(check(k), checkMetaText(e, depth+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// cloneOptions returns a copy of opts (defaults for nil) whose Tags and
// Metadata a middleware may change without changing the caller's.
func cloneOptions(opts *EnqueueOptions) *EnqueueOptions {
	c := EnqueueOptions{}
	if opts != nil {
		c = *opts
	}
	c.Tags = slices.Clone(c.Tags)
	if c.Metadata != nil {
		c.Metadata = maps.Clone(c.Metadata)
	}
	return &c
}

// checkTagFilter validates the tags and metadata of a JobFilter. Text that
// breaks the text rule is no error: it matches no job, as the drivers
// answer it.
func checkTagFilter(tags []string, meta map[string]string) error {
	for i, tag := range tags {
		if tag == "" {
			return &FilterError{Field: fmt.Sprintf("Tags[%d]", i), Reason: "empty"}
		}
	}
	for k := range meta {
		if k == "" {
			return &FilterError{Field: `Metadata[""]`, Reason: "empty key"}
		}
	}
	return nil
}
